/* SPDX-License-Identifier: MIT */
/* `psidiag show`: incident lines (NDJSON) turned into a compact view for a terminal: when, which
 * trigger, the pressure, the task states, and the most delayed processes with their dominant
 * delay. Strings from the incident (task names, command lines, cgroup paths) are printed with
 * control characters replaced, so a hostile task name cannot drive the terminal. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Writes the view of one incident line to out. 0, or -EINVAL when the line is not an incident
 * (then *ret_error, static or from jansson's message buffer, says why). */
int show_line(const char *line, size_t len, FILE *out, char *error, size_t error_size);

/* Formats a duration in microseconds as "1.03s", "984ms", "5.6ms", "120us". Returns buf. */
char *show_format_us(long long us, char *buf, size_t size);

/* Copies s into out (at most size-1 bytes, cut at a UTF-8 boundary) with C0 and C1 control
 * characters and DEL replaced by '?'. Returns out. */
char *show_terminal_safe(const char *s, char *out, size_t size);

/* `psidiag show [FILE]`: reads FILE or stdin. Exit code: 0, 1 when a line was not an incident
 * (reported on stderr with its line number; the others are still shown), 2 when FILE cannot be
 * opened. */
int show_run(const char *path);
