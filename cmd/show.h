/* SPDX-License-Identifier: MIT */
/* `psidiag show`: incident lines (NDJSON) turned into a compact view for a terminal: when, which
 * trigger, the pressure, the task states, and the most delayed processes with their dominant
 * delay. Strings from the incident (task names, command lines, cgroup paths) are printed with
 * control characters replaced, so a hostile task name cannot drive the terminal. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Writes the view of one incident line to out. 0, or -EINVAL when the line is not an incident
 * (then error, a copy of a static sentence or of jansson's message, says why). */
int show_line(const char *line, size_t len, FILE *out, char *error, size_t error_size);

/* `psidiag show [FILE]`: reads FILE or stdin. Exit code: 0, 1 when a line was not an incident
 * (reported on stderr with its line number; the others are still shown), 2 when FILE cannot be
 * opened. */
int show_run(const char *path);
