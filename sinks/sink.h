/* SPDX-License-Identifier: MIT */
/* The sink interface: where incidents go. A Sink takes the incident's json_t, puts the formatter
 * of its format in front (the incident itself, or an OTLP/JSON logs request, otlp.h) and hands the
 * document to its kind's ops (file.h: stdout and files, journal.h: the systemd journal), which say
 * which kind a path names (registry.h). It counts what was written and what was lost, and reports
 * failures on stderr at most every SINK_COMPLAINT_INTERVAL_US and the first success after them.
 * Failures are never fatal. It does not know which watch or kill an incident comes from. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/log.h"
#include "base/timeutil.h"

#define SINK_COMPLAINT_INTERVAL_US (10 * USEC_PER_SEC)

typedef enum SinkFormat {
        SINK_FORMAT_INCIDENT, /* incident lines (schemas/incident.schema.json) */
        SINK_FORMAT_OTLP,     /* one OTLP/JSON ExportLogsServiceRequest per incident (otlp.h) */
} SinkFormat;

typedef struct Sink Sink;

/* The document as one line of compact JSON with its '\n', malloc'ed, in the sink's format. */
typedef int (*SinkDumpLine)(const json_t *doc, char **ret, size_t *ret_len);

/* One kind of sink. A kind's functions return 0 or -errno and log at most at debug level; the
 * Sink counts and reports. */
typedef struct SinkOps {
        const char *name;   /* "stdout", "journal", "file" */
        bool named_by_path; /* logs and metrics name a sink of this kind by its path, not name */
        bool own_entries;   /* takes the incident whatever the format (the journal's fields are built
                             * from the incident, and PSIDIAG_INCIDENT stays an incident line) */
        /* Whether the kind works here (the journal: libsystemd can be loaded). 0, or -EOPNOTSUPP
         * with a sentence in why. NULL: always. */
        int (*available)(char *why, size_t why_size);
        /* s->path is set; opens what the kind writes to. -errno with a sentence in why. */
        int (*open)(Sink *s, char *why, size_t why_size);
        /* Writes doc (the incident, or what the format made of it), whole or not at all. */
        int (*write)(Sink *s, json_t *doc, SinkDumpLine dump_line);
        /* NULL: nothing to reopen (stdout, the journal). -errno with why; the old file is kept. */
        int (*reopen)(Sink *s, char *why, size_t why_size);
        void (*close)(Sink *s);
} SinkOps;

struct Sink {
        const SinkOps *ops;
        char *path;       /* as configured: "-", "journal" or an absolute path */
        const char *name; /* for logs and metrics labels: "stdout", or the path */
        SinkFormat format;
        int fd;    /* the file kinds' */
        dev_t dev; /* of the file we have open, to notice it was removed or replaced */
        ino_t ino;
        uint64_t written, failed;
        LogRateLimit complaints; /* the error log, at most every SINK_COMPLAINT_INTERVAL_US */
        uint64_t failed_since_complaint;
        uint64_t failed_since_success;
};

/* Opens a sink of kind ops on path with format (registry.h's sink_open() finds the kind a path
 * names). 0, or -errno with a sentence in why: the kind's open errors (file.h, journal.h). */
int sink_open_kind(const SinkOps *ops, const char *path, SinkFormat format, Sink **ret, char *why, size_t why_size);

/* Switches the format from the next incident on (a reload that changed output_format). */
void sink_set_format(Sink *s, SinkFormat format);

/* Writes one incident (an object of schemas/incident.schema.json; not taken), whole or not at all,
 * and counts it. 0 or -errno (-EPIPE, -ENOSPC, -EFBIG..; -EINVAL when the format cannot make a
 * document of it, counted as failed like a line that could not be written). Logs failures at a
 * bounded rate and the recovery after them. */
int sink_write(Sink *s, json_t *incident);

/* Whether the sink has a file that sink_reopen() opens afresh (not stdout, not the journal). */
bool sink_can_reopen(const Sink *s);

/* Reopens the file (SIGHUP after logrotate). 0 (also when !sink_can_reopen()), or -errno with why
 * (the old fd is kept then). */
int sink_reopen(Sink *s, char *why, size_t why_size);

/* NULL-safe; returns NULL. */
Sink *sink_free(Sink *s);
