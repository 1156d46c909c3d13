/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/macro.h"
#include "incident/incident.h"
#include "sinks/otlp.h"
#include "sinks/sink.h"

int sink_open_kind(const SinkOps *ops, const char *path, SinkFormat format, Sink **ret, char *why, size_t why_size) {
        Sink *s = calloc(1, sizeof *s);
        int r;

        snprintf(why, why_size, "out of memory");
        if (!s)
                return -ENOMEM;
        s->complaints.interval_us = SINK_COMPLAINT_INTERVAL_US;
        s->ops = ops;
        s->format = format;
        s->fd = -EBADF;
        s->path = strdup(path);
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        s->name = ops->named_by_path ? s->path : ops->name;
        r = s->ops->open(s, why, why_size);
        if (r < 0) {
                free(s->path);
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void sink_set_format(Sink *s, SinkFormat format) {
        s->format = format;
}

bool sink_can_reopen(const Sink *s) {
        return s->ops->reopen != NULL;
}

int sink_reopen(Sink *s, char *why, size_t why_size) {
        return s->ops->reopen ? s->ops->reopen(s, why, why_size) : 0;
}

/* The formatter in front of every kind: what the format makes of the incident (a new reference)
 * and how that is written as a line. */
static int sink_format(const Sink *s, json_t *incident, json_t **ret, SinkDumpLine *ret_dump_line) {
        if (s->format == SINK_FORMAT_OTLP && !s->ops->own_entries) {
                *ret_dump_line = otlp_dump_line;
                return otlp_from_incident(incident, now_usec(CLOCK_REALTIME) * NSEC_PER_USEC, ret);
        }
        *ret_dump_line = incident_dump_line;
        *ret = json_incref(incident);
        return 0;
}

static void complain(Sink *s, int r) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        s->failed_since_complaint++;
        if (!log_ratelimit_pass(&s->complaints, now))
                return;
        log_error_errno(r, "cannot write incident to %s (%llu lost since the last report, %llu in all)", s->name,
                        (unsigned long long) s->failed_since_complaint, (unsigned long long) s->failed);
        s->failed_since_complaint = 0;
}

int sink_write(Sink *s, json_t *incident) {
        json_t *doc = NULL;
        SinkDumpLine dump_line;
        int r = sink_format(s, incident, &doc, &dump_line);

        if (r >= 0)
                r = s->ops->write(s, doc, dump_line);
        json_decref(doc);
        if (r < 0) {
                s->failed++;
                s->failed_since_success++;
                complain(s, r);
                return r;
        }
        s->written++;
        if (s->failed_since_success > 0) {
                log_info("writing incidents to %s again (%llu lost meanwhile)", s->name,
                         (unsigned long long) s->failed_since_success);
                s->failed_since_success = 0;
                s->failed_since_complaint = 0;
                log_ratelimit_reset(&s->complaints);
        }
        return 0;
}

Sink *sink_free(Sink *s) {
        if (!s)
                return NULL;
        s->ops->close(s);
        free(s->path);
        free(s);
        return NULL;
}
