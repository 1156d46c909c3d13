/* SPDX-License-Identifier: MIT */
/* The one place that knows which output strings name which sink kind: "-" stdout, "journal" the
 * systemd journal, an absolute path a file. Config validation, `validate`, the agent and its
 * metrics ask here; nothing else looks at an output string's text. Opens nothing (sink.h does)
 * and logs nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "sinks/sink.h"

typedef enum SinkKind {
        SINK_KIND_STDOUT,
        SINK_KIND_JOURNAL,
        SINK_KIND_FILE,
        _SINK_KIND_MAX,
} SinkKind;

/* The kind path names: "-" stdout, "journal", anything else a file. */
SinkKind sink_kind_of(const char *path);

/* The kind's ops; kind < _SINK_KIND_MAX. */
const SinkOps *sink_kind_ops(SinkKind kind);

/* Whether path may be a configured output in this build: 0; -EOPNOTSUPP for the journal when
 * psidiag was built without it; -EINVAL for a file path that is not absolute. why gets what
 * follows "output " in the config error. Loads nothing. */
int sink_path_check(const char *path, char *why, size_t why_size);

/* Whether path's kind works here (libsystemd can be loaded for the journal; may dlopen it).
 * 0 or -EOPNOTSUPP with a sentence in why. */
int sink_path_available(const char *path, char *why, size_t why_size);

/* Opens the sink that path names with format. 0, or -errno with a sentence in why: -EOPNOTSUPP
 * for the journal when psidiag was built without it or libsystemd cannot be loaded, the file
 * kind's errors (file.h). */
int sink_open(const char *path, SinkFormat format, Sink **ret, char *why, size_t why_size);

/* How logs and metrics labels name path's sink: "stdout" for "-", else path itself. */
const char *sink_path_display(const char *path);

/* Whether two output strings name the same sink (one sink per distinct string). */
bool sink_paths_same(const char *a, const char *b);
