/* SPDX-License-Identifier: MIT */
/* The lines of kernel files that a parser could not read: a parser skips such a line, keeps the
 * rest of the file and notes the line here. This module counts them per kind of file (the agent's
 * metrics read the counts) and logs the first line of each kind at debug level, so that a new
 * kernel's format costs a line, never a whole file, and never silently (kernel-facts.md:
 * unknown-lines). Process-wide and safe from any thread; no I/O but the log line. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef enum UnparsedFile {
        UNPARSED_IO_STAT,       /* cgroup2 io.stat */
        UNPARSED_IO_MAX,        /* cgroup2 io.max */
        UNPARSED_BLKIO,         /* cgroup-v1 blkio.* per-device files */
        UNPARSED_MEMORY_STAT,   /* memory.stat, cgroup2 or v1 */
        UNPARSED_MEMORY_EVENTS, /* memory.events */
        UNPARSED_CPU_STAT,      /* cpu.stat, cgroup2 or v1 */
        UNPARSED_PRESSURE,      /* /proc/pressure/<resource>, <resource>.pressure */
        UNPARSED_DISKSTATS,     /* /proc/diskstats */
        _UNPARSED_MAX,
} UnparsedFile;

/* "io.stat", "io.max", "blkio", "memory.stat", "memory.events", "cpu.stat", "pressure",
 * "diskstats": the metric's label; NULL out of range. */
const char *unparsed_file_to_string(UnparsedFile f);

/* Notes that the line [line, end) of a file of kind f was skipped. */
void unparsed_note(UnparsedFile f, const char *line, const char *end);

/* The lines of kind f skipped since the process started. */
uint64_t unparsed_count(UnparsedFile f);
