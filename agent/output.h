/* SPDX-License-Identifier: MIT */
/* Where incident lines go: stdout ("-") or a file opened O_APPEND. Each line is one write(2).
 * Failures are counted and returned, never fatal; the caller logs them at a bounded rate. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "agent/base/timeutil.h"

typedef struct OutputSink {
        char *path; /* "-" for stdout */
        int fd;
        uint64_t written, failed;
        usec_t last_complaint_us; /* monotonic, for rate-limited error logs */
        uint64_t failed_since_complaint;
} OutputSink;

/* Opens path for appending (created 0640, never through a symlink at the last component), or
 * wraps stdout for "-". 0 or -errno. */
int output_open(const char *path, OutputSink **ret);

/* Writes line[0..len) with a single write(2). Returns 0, or -errno (-EPIPE, -ENOSPC, ...), or -EIO
 * for a short write. Counts either way. */
int output_write(OutputSink *o, const char *line, size_t len);

/* Reopens the file (SIGHUP after logrotate). No-op for stdout. 0 or -errno (the old fd is kept). */
int output_reopen(OutputSink *o);

OutputSink *output_free(OutputSink *o);
