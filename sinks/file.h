/* SPDX-License-Identifier: MIT */
/* The stdout and file sink kinds (sink.h): each incident is dumped to one line and appended. Every
 * line is written whole or not at all: short writes are continued, and a line that a regular file
 * could only take part of (full disk, file size limit) is cut off again with ftruncate. A file that
 * was removed or renamed away (logrotate without SIGHUP) is noticed at the next write and
 * recreated. Counting and complaining are the Sink's. */
#pragma once

#include "sinks/sink.h"

/* Output "-": the process's stdout, never closed nor reopened. */
extern const SinkOps sink_stdout_ops;

/* An absolute path, opened for appending: created 0640; never through a symlink at the last
 * component, nor through one planted by someone else in a world-writable directory on the way
 * (safepath.h); an existing file in a world-writable directory must be ours and not hard-linked
 * elsewhere. Only regular files, FIFOs (that have a reader) and character devices are accepted.
 * Reopened by sink_reopen() (SIGHUP after logrotate). */
extern const SinkOps sink_file_ops;
