/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "agent/health.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/unparsed.h"

struct AgentHealth {
        MetricsOutput *outputs;
        size_t cap_outputs;
        MetricsSeries *series; /* the watch counts' series (counters_series()) */
        size_t cap_series;
        LogRateLimit complaints;
};

int health_start(Agent *a) {
        AgentHealth *h = calloc(1, sizeof *h);

        if (!h)
                return -ENOMEM;
        h->complaints.interval_us = SINK_COMPLAINT_INTERVAL_US;
        a->health = h;
        return 0;
}

void health_stop(Agent *a) {
        AgentHealth *h = a->health;

        if (!h)
                return;
        free(h->outputs);
        free(h->series);
        free(h);
        a->health = NULL;
}

static unsigned triggers_configured(const Agent *a) {
        unsigned n = 0;
        for (size_t i = 0; i < a->n_watches; i++)
                n += (unsigned) a->watches[i]->n_triggers;
        return n;
}

void health_update(Agent *a) {
        AgentHealth *h = a->health;
        const Counters *c = &a->counters;
        char why[160];
        int r;

        if (!h || !a->config->metrics_file)
                return;
        if (array_reserve((void **) &h->outputs, &h->cap_outputs, a->n_sinks, sizeof *h->outputs) < 0)
                return;
        for (size_t i = 0; i < a->n_sinks; i++)
                h->outputs[i] = (MetricsOutput) {
                        .path = a->sinks[i]->name,
                        .written = a->sinks[i]->written,
                        .failed = a->sinks[i]->failed,
                };
        size_t n_incidents = 0, n_stall = 0;
        if (counters_series(c, &h->series, &h->cap_series, &n_incidents, &n_stall) < 0)
                return;
        MetricsCount kills[_KILLER_MAX];
        for (KillerKind k = 0; k < _KILLER_MAX; k++)
                kills[k] = (MetricsCount) { .label = killer_kind_to_string(k), .value = c->kills[k] };
        MetricsCount wakeups[_WAKEUP_VERDICT_MAX];
        for (WakeupVerdict v = 0; v < _WAKEUP_VERDICT_MAX; v++)
                wakeups[v] = (MetricsCount) { .label = wakeup_verdict_label(v), .value = c->wakeups[v] };
        MetricsCount windows[2] = { { .label = "after_wakeup", .value = c->windows[0] },
                                    { .label = "recorded", .value = c->windows[1] } };
        MetricsCount prekill[_COUNTERS_PREKILL_MAX];
        for (CountersPrekill p = 0; p < _COUNTERS_PREKILL_MAX; p++)
                prekill[p] = (MetricsCount) { .label = counters_prekill_label(p), .value = c->prekill[p] };
        MetricsCount unparsed[_UNPARSED_MAX];
        for (UnparsedFile u = 0; u < _UNPARSED_MAX; u++)
                unparsed[u] = (MetricsCount) { .label = unparsed_file_to_string(u), .value = unparsed_count(u) };
        ContainerCacheStats ctr = {};
        if (a->rt.containers)
                container_cache_stats(a->rt.containers, &ctr);
        Metrics m = {
                .version = PSIDIAG_VERSION,
                .plain = c->plain,
                .watches = (unsigned) a->n_watches,
                .triggers_configured = triggers_configured(a),
                .triggers_armed = a->armed,
                .unparsed = unparsed,
                .n_unparsed = _UNPARSED_MAX,
                .container_lookups = ctr.lookups,
                .container_reads = ctr.reads,
                .container_evictions = ctr.evictions,
                .containers_unnamed = ctr.unknown,
                .containers_unverified = ctr.unverified,
                .windows = windows,
                .n_windows = 2,
                .dir_watches = c->dir_watches + c->oom_file_watches,
                .kills = kills,
                .n_kills = _KILLER_MAX,
                .prekill = prekill,
                .n_prekill = _COUNTERS_PREKILL_MAX,
                .incidents = h->series,
                .n_incidents = n_incidents,
                .stall = h->series + n_incidents,
                .n_stall = n_stall,
                .outputs = h->outputs,
                .n_outputs = a->n_sinks,
                .wakeups = wakeups,
                .n_wakeups = _WAKEUP_VERDICT_MAX,
                .suppressed = wakeups + WAKEUP_SUPPRESSED_FIRST,
                .n_suppressed = _WAKEUP_VERDICT_MAX - WAKEUP_SUPPRESSED_FIRST,
        };
        r = metrics_write(a->config->metrics_file, &m, why, sizeof why);
        if (r < 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (log_ratelimit_pass(&h->complaints, now))
                        log_error_errno(r, "cannot write the metrics file %s: %s", a->config->metrics_file, why);
        }
}
