/* SPDX-License-Identifier: MIT */
#include <assert.h>
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

static const char *const incident_type_labels[_AGENT_INCIDENT_TYPE_MAX] = {
        [AGENT_INCIDENT_PRESSURE] = "pressure",
        [AGENT_INCIDENT_OOM] = "oom",
        [AGENT_INCIDENT_KILL] = "kill",
};

const char *watch_config_label(const WatchConfig *cfg) {
        /* A node-wide watch and one on the root cgroup ("") both watch the whole node. */
        return cfg && cfg->cgroup && cfg->cgroup[0] ? cfg->cgroup : "/";
}

void agent_count_incident(Agent *a, const char *label, AgentIncidentType type, PsiResource res, uint64_t stall_us) {
        WatchCounts *c = NULL;

        assert(type < _AGENT_INCIDENT_TYPE_MAX && res < _PSI_RESOURCE_MAX);
        for (size_t i = 0; i < a->n_watch_counts && !c; i++)
                if (strcmp(a->watch_counts[i].label, label) == 0)
                        c = &a->watch_counts[i];
        if (!c) {
                char *l = strdup(label);
                if (!l || array_grow((void **) &a->watch_counts, &a->cap_watch_counts, a->n_watch_counts, 4,
                                     sizeof *a->watch_counts) < 0) {
                        free(l);
                        if (!a->watch_counts_warned)
                                log_warning("out of memory: incidents of watch %s are not counted in the metrics",
                                            label);
                        a->watch_counts_warned = true;
                        return;
                }
                c = &a->watch_counts[a->n_watch_counts++];
                *c = (WatchCounts) { .label = l };
        }
        c->incidents[type][res]++;
        c->stall_us[res] += stall_us;
}

void agent_watch_counts_free(Agent *a) {
        for (size_t i = 0; i < a->n_watch_counts; i++)
                free(a->watch_counts[i].label);
        free(a->watch_counts);
        free(a->metric_series);
        a->watch_counts = NULL;
        a->metric_series = NULL;
        a->n_watch_counts = a->cap_watch_counts = a->cap_metric_series = 0;
}

/* The incident and stall series of the watch counts, in a->metric_series: incidents first (*ret_n
 * of them), then stall. False when out of memory. */
static bool watch_series(Agent *a, size_t *ret_n_incidents, size_t *ret_n_stall) {
        size_t n = 0, max = a->n_watch_counts * (_AGENT_INCIDENT_TYPE_MAX + 1) * _PSI_RESOURCE_MAX;
        size_t n_incidents;

        if (array_reserve((void **) &a->metric_series, &a->cap_metric_series, MAX(max, (size_t) 1),
                          sizeof *a->metric_series) < 0)
                return false;
        for (size_t i = 0; i < a->n_watch_counts; i++)
                for (AgentIncidentType t = 0; t < _AGENT_INCIDENT_TYPE_MAX; t++)
                        for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                                if (a->watch_counts[i].incidents[t][r] > 0)
                                        a->metric_series[n++] = (MetricsSeries) {
                                                .labels = { a->watch_counts[i].label, incident_type_labels[t],
                                                            psi_resource_to_string(r) },
                                                .value = a->watch_counts[i].incidents[t][r],
                                        };
        n_incidents = n;
        for (size_t i = 0; i < a->n_watch_counts; i++)
                for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                        if (a->watch_counts[i].incidents[AGENT_INCIDENT_PRESSURE][r] > 0)
                                a->metric_series[n++] = (MetricsSeries) {
                                        .labels = { a->watch_counts[i].label, psi_resource_to_string(r) },
                                        .value = a->watch_counts[i].stall_us[r],
                                };
        *ret_n_incidents = n_incidents;
        *ret_n_stall = n - n_incidents;
        return true;
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
        size_t n_incidents = 0, n_stall = 0;
        if (!watch_series(a, &n_incidents, &n_stall))
                return;
        MetricsCount kills[_KILLER_MAX];
        for (KillerKind k = 0; k < _KILLER_MAX; k++)
                kills[k] = (MetricsCount) { .label = killer_kind_to_string(k), .value = kills_count(a, k) };
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
                .exit_records_lost = a->exit_records_lost,
                .episodes = a->episode_seq,
                .culprit_passes = a->culprit_passes,
                .culprit_passes_shared = a->culprit_passes_shared,
                .kills = kills,
                .n_kills = _KILLER_MAX,
                .incidents = a->metric_series,
                .n_incidents = n_incidents,
                .stall = a->metric_series + n_incidents,
                .n_stall = n_stall,
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
