/* SPDX-License-Identifier: MIT */
/* The end of every incident, pressure, oom or kill alike: its id (the agent's sequence, numbered
 * here alone), the incident built from its sample's result, written to its outputs, counted
 * (agent/counters.h) and the metrics file rewritten (agent/health.h). What comes before (the
 * sample, the context) and after (history, kill windows, the log line) stays with the caller. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "agent/core.h"
#include "agent/counters.h"
#include "incident/incident.h"

/* Who ends an incident, where it goes and how it counts. */
typedef struct ReportEnd {
        Agent *agent;
        char *id;      /* the caller's buffer, which the incident's context points at */
        bool reserved; /* id holds the id report_reserve_id() gave when the sample started */
        size_t id_size;
        Sink *const *sinks; /* each written once */
        size_t n_sinks;
        CountedIncident count; /* a pressure incident's stall and lost exit records come from result */
} ReportEnd;

/* The id of an incident whose sample woke at wakeup_real_us (CLOCK_REALTIME) and is still running,
 * given before its report (the history names it while it samples: incident/history.h). */
void report_reserve_id(Agent *a, usec_t wakeup_real_us, char *id, size_t size);

/* Formats the incident's id into end->id (unless end->reserved) (ctx->id must point at it), builds the incident of
 * result with ctx, writes it to end's sinks (each counts and reports its failures itself), counts it and rewrites the
 * metrics file. 0, or -errno when it could not be built: nothing written nor counted (not logged: the caller names what
 * was lost). */
int report_publish(const SampleResult *result, const IncidentContext *ctx, const ReportEnd *end);
