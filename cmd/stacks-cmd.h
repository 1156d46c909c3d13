/* SPDX-License-Identifier: MIT */
/* `psidiag stacks`: the stacks of incident lines (NDJSON, "stacks" of schemas/incident.schema.json)
 * in the folded format that flamegraph.pl, speedscope, inferno and Grafana's flame graph panel
 * read: one line a stack, "COMM;OUTERMOST;...;INNERMOST COUNT", the process's comm first, kernel
 * frames marked "_[k]" (flamegraph.pl colours them so), a frame without a function named by its
 * module's file name and address ("liblzma.so.5.4.1+0x5d10"), or "[unknown]"; or, with --svg, one
 * flame graph of them all (cmd/flamegraph.h). Names are a process's or a binary's words: control
 * characters are printed as '?', and ';' (the separator) as ':'. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Called for each stack: frames[0] the comm, then the frames outermost first. */
typedef void (*StackFoldFn)(const char *const *frames, size_t n, uint64_t count, void *userdata);

/* The stacks of one incident line, to fn; id: only the incident of that id (NULL: any). 1 when
 * it had stacks, 0 when it had none (or is another's), -EINVAL when the line is not an incident
 * (error says why). */
int stacks_of_line(const char *line, size_t len, const char *id, StackFoldFn fn, void *userdata, char *error,
                   size_t error_size);

/* A StackFoldFn writing a folded line to the FILE userdata. */
void stacks_print_folded(const char *const *frames, size_t n, uint64_t count, void *userdata);

typedef struct StacksCmdOptions {
        const char *path; /* NULL or "-": stdin */
        const char *id;   /* --id: one incident */
        bool svg;         /* --svg: one flame graph, not folded lines */
} StacksCmdOptions;

/* `psidiag stacks`. Exit code: 0; 1 when a line was not an incident (reported on stderr with its
 * line number, the others still used) or no line had stacks (said on stderr); 2 when the file
 * cannot be opened. */
int stacks_cmd_run(const StacksCmdOptions *o);
