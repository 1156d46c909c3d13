/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "sinks/file.h"
#include "sinks/journal.h"
#include "sinks/registry.h"

#define SINK_PATH_STDOUT "-"
#define SINK_PATH_JOURNAL "journal"

static const SinkOps *const kinds[_SINK_KIND_MAX] = {
        [SINK_KIND_STDOUT] = &sink_stdout_ops,
        [SINK_KIND_JOURNAL] = &sink_journal_ops,
        [SINK_KIND_FILE] = &sink_file_ops,
};

SinkKind sink_kind_of(const char *path) {
        if (strcmp(path, SINK_PATH_STDOUT) == 0)
                return SINK_KIND_STDOUT;
        if (strcmp(path, SINK_PATH_JOURNAL) == 0)
                return SINK_KIND_JOURNAL;
        return SINK_KIND_FILE;
}

const SinkOps *sink_kind_ops(SinkKind kind) {
        assert(kind >= 0 && kind < _SINK_KIND_MAX);
        return kinds[kind];
}

int sink_path_check(const char *path, char *why, size_t why_size) {
        switch (sink_kind_of(path)) {
        case SINK_KIND_JOURNAL:
                if (!HAVE_JOURNAL) {
                        snprintf(why, why_size,
                                 "\"journal\": this psidiag was built without journald support "
                                 "(libsystemd; meson -Djournal=enabled)");
                        return -EOPNOTSUPP;
                }
                return 0;
        case SINK_KIND_FILE:
                if (path[0] != '/') {
                        snprintf(why, why_size, "must be an absolute path, \"-\" (stdout) or \"journal\"");
                        return -EINVAL;
                }
                return 0;
        default:
                return 0;
        }
}

int sink_path_available(const char *path, char *why, size_t why_size) {
        const SinkOps *ops = sink_kind_ops(sink_kind_of(path));

        return ops->available ? ops->available(why, why_size) : 0;
}

int sink_open(const char *path, SinkFormat format, Sink **ret, char *why, size_t why_size) {
        return sink_open_kind(sink_kind_ops(sink_kind_of(path)), path, format, ret, why, why_size);
}

const char *sink_path_display(const char *path) {
        return sink_kind_of(path) == SINK_KIND_STDOUT ? "stdout" : path;
}

bool sink_paths_same(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}
