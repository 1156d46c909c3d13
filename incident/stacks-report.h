/* SPDX-License-Identifier: MIT */
/* An incident's "stacks" (schemas/incident.schema.json, docs/stacks.md): the on-cpu stacks of the
 * window (sampling/stacks.h) of the processes that had most samples and of those the incident
 * names (the most delayed, the culprits), each process's most counted stacks with their frames
 * innermost first, kernel then user, and the modules the frames are in with their build-ids. No
 * kernel address is written (it would tell where the kernel is loaded): a kernel frame is its
 * function and offset. Pure: no I/O and no logging. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "sampling/stacks.h"

#define STACKS_REPORT_PROCS 5  /* processes by samples, before those the incident names */
#define STACKS_REPORT_STACKS 5 /* stacks a process */
#define STACKS_REPORT_NAMED_MAX 32

/* The "stacks" object of c, scope the cgroup it sampled ("a/b"; NULL: the node), named the pids
 * the incident names (theirs are written where they had samples, past the first
 * STACKS_REPORT_PROCS). NULL on allocation failure. */
json_t *stacks_report_object(const StackCapture *c, const char *scope, const pid_t *named, size_t n_named);

/* The sentence of a capture's error ("perf_event_open refused (perf_event_paranoid ...)"), into
 * buf. */
const char *stacks_report_error(int error, char *buf, size_t size);

/* The sentence of why kernel frames are unnamed (kallsyms_load()'s error: -EPERM, its addresses
 * hidden), into buf. */
const char *stacks_report_kernel_names(int error, char *buf, size_t size);
