/* SPDX-License-Identifier: MIT */
/* Where incident lines go: stdout ("-") or a file opened O_APPEND. Every line is written whole or
 * not at all: short writes are continued, and a line that a regular file could only take part of
 * (full disk, file size limit) is cut off again with ftruncate. Failures are counted, never fatal,
 * and reported on stderr at most every OUTPUT_COMPLAINT_INTERVAL_US; the first line that gets
 * through again is reported too. A file that was removed or renamed away (logrotate without
 * SIGHUP) is noticed at the next write and recreated. A sink with otlp set writes each incident
 * line as an OTLP/JSON logs request instead (otlp.h); the journal sink takes incidents always. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "base/timeutil.h"

#define OUTPUT_COMPLAINT_INTERVAL_US (10 * USEC_PER_SEC)
/* The output value that sends incidents to the systemd journal (journal.h). */
#define OUTPUT_JOURNAL "journal"

typedef struct OutputSink {
        char *path; /* "-" for stdout */
        int fd;
        bool otlp; /* output_format "otlp": lines are converted by otlp_format_line() */
        dev_t dev; /* of the file we have open, to notice it was removed or replaced */
        ino_t ino;
        uint64_t written, failed;
        LogRateLimit complaints; /* the error log, at most every OUTPUT_COMPLAINT_INTERVAL_US */
        uint64_t failed_since_complaint;
        uint64_t failed_since_success;
} OutputSink;

/* Opens path for appending: created 0640; never through a symlink at the last component, nor
 * through one planted by someone else in a world-writable directory on the way (safepath.h); an
 * existing file in a world-writable directory must be ours and not hard-linked elsewhere. Only
 * regular files, FIFOs (that have a reader) and character devices are accepted. "-" wraps stdout;
 * "journal" sends to the systemd journal (-EOPNOTSUPP when built without it).
 * 0, or -errno with a sentence in why. */
int output_open(const char *path, OutputSink **ret, char *why, size_t why_size);

/* Writes line[0..len), whole or not at all, and counts it. 0 or -errno (-EPIPE, -ENOSPC, -EFBIG..).
 * With o->otlp (and not the journal), line is an incident line and what is written is its OTLP
 * line; -EINVAL when it does not convert, counted as failed like a line that could not be written.
 * Logs failures at a bounded rate and the recovery after them. */
int output_write(OutputSink *o, const char *line, size_t len);

/* Reopens the file (SIGHUP after logrotate). No-op for stdout. 0, or -errno with why (the old fd is
 * kept then). */
int output_reopen(OutputSink *o, char *why, size_t why_size);

OutputSink *output_free(OutputSink *o);
