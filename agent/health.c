/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/daemon.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"

static unsigned triggers_configured(const Agent *a) {
        unsigned n = 0;
        for (size_t i = 0; i < a->n_watches; i++)
                n += (unsigned) a->watches[i]->n_triggers;
        return n;
}

/* Rewrites the metrics file after a counter changed (no timer: an idle agent stays idle). */
void agent_metrics_update(Agent *a) {
        char why[160];
        int r;

        if (!a->config->metrics_file)
                return;
        if (array_reserve((void **) &a->metric_outputs, &a->cap_metric_outputs, a->n_sinks, sizeof *a->metric_outputs) <
            0)
                return;
        for (size_t i = 0; i < a->n_sinks; i++)
                a->metric_outputs[i] = (MetricsOutput) {
                        .path = a->sinks[i]->name,
                        .written = a->sinks[i]->written,
                        .failed = a->sinks[i]->failed,
                };
        MetricsCount wakeups[_WAKEUP_VERDICT_MAX];
        for (WakeupVerdict v = 0; v < _WAKEUP_VERDICT_MAX; v++)
                wakeups[v] = (MetricsCount) { .label = wakeup_verdict_label(v), .value = a->wakeups[v] };
        Metrics m = {
                .version = PSIDIAG_VERSION,
                .start_time_s = a->start_time_s,
                .watches = (unsigned) a->n_watches,
                .triggers_configured = triggers_configured(a),
                .triggers_armed = a->armed,
                .samples = a->samples,
                .sample_thread_errors = a->sample_thread_errors,
                .cgroups_gone = a->cgroups_gone,
                .oom_kills = a->oom_kills,
                .kmsg_lost = a->kmsg_lost,
                .outputs = a->metric_outputs,
                .n_outputs = a->n_sinks,
                .wakeups = wakeups,
                .n_wakeups = _WAKEUP_VERDICT_MAX,
                .suppressed = wakeups + WAKEUP_SUPPRESSED_FIRST,
                .n_suppressed = _WAKEUP_VERDICT_MAX - WAKEUP_SUPPRESSED_FIRST,
        };
        r = metrics_write(a->config->metrics_file, &m, why, sizeof why);
        if (r < 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (log_ratelimit_pass(&a->metrics_complaints, now))
                        log_error_errno(r, "cannot write the metrics file %s: %s", a->config->metrics_file, why);
        }
}
