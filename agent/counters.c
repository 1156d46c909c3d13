/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/counters.h"
#include "config/target.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"

static const char *const incident_labels[_COUNTERS_INCIDENT_MAX] = {
        [COUNTERS_INCIDENT_PRESSURE] = "pressure",
        [COUNTERS_INCIDENT_OOM] = "oom",
        [COUNTERS_INCIDENT_KILL] = "kill",
};

const char *counters_prekill_label(CountersPrekill p) {
        static const char *const labels[_COUNTERS_PREKILL_MAX] = {
                [COUNTERS_PREKILL_NOTIFY] = "notify",   [COUNTERS_PREKILL_ANSWERED] = "answered",
                [COUNTERS_PREKILL_REFUSED] = "refused", [COUNTERS_PREKILL_DENIED] = "denied",
                [COUNTERS_PREKILL_BUSY] = "busy",       [COUNTERS_PREKILL_IDLE] = "idle",
        };
        return p >= 0 && p < _COUNTERS_PREKILL_MAX ? labels[p] : "unknown";
}

const char *counters_watch_label(const WatchConfig *cfg) {
        /* A node-wide watch and one on the root cgroup ("") both watch the whole node; a container
         * watch is its selector as configured, never the names of what it matched (a pod name is
         * not a label). */
        return config_target_label(cfg);
}

static void count_watch(Counters *c, const char *label, CountersIncident type, PsiResource res, uint64_t stall_us) {
        WatchCounts *w = NULL;

        for (size_t i = 0; i < c->n_watch && !w; i++)
                if (strcmp(c->watch[i].label, label) == 0)
                        w = &c->watch[i];
        if (!w) {
                char *l = strdup(label);
                if (!l || array_grow((void **) &c->watch, &c->cap_watch, c->n_watch, 4, sizeof *c->watch) < 0) {
                        free(l);
                        if (!c->watch_warned)
                                log_warning("out of memory: incidents of watch %s are not counted in the metrics",
                                            label);
                        c->watch_warned = true;
                        return;
                }
                w = &c->watch[c->n_watch++];
                *w = (WatchCounts) { .label = l };
        }
        w->incidents[type][res]++;
        w->stall_us[res] += stall_us;
}

void counters_count_incident(Counters *c, const CountedIncident *i) {
        assert(i->type < _COUNTERS_INCIDENT_MAX && i->resource < _PSI_RESOURCE_MAX);
        assert(!i->has_killer || (unsigned) i->killer < _KILLER_MAX);

        if (i->type == COUNTERS_INCIDENT_PRESSURE) {
                c->samples++;
                c->windows[i->recorded]++;
                c->windows_passed += i->passed;
        }
        c->sample_thread_errors += i->sample_thread_errors;
        c->exit_records_lost += i->exit_records_lost;
        c->blkio_unstarted += i->blkio_unstarted;
        c->oom_kills += i->oom_kills;
        if (i->has_killer)
                c->kills[i->killer]++;
        count_watch(c, i->label, i->type, i->resource, i->stall_us);
}

int counters_series(const Counters *c, MetricsSeries **buf, size_t *cap, size_t *ret_n_incidents, size_t *ret_n_stall) {
        size_t n = 0, max = c->n_watch * (_COUNTERS_INCIDENT_MAX + 1) * _PSI_RESOURCE_MAX;
        size_t n_incidents;

        if (array_reserve((void **) buf, cap, MAX(max, (size_t) 1), sizeof **buf) < 0)
                return -ENOMEM;
        MetricsSeries *s = *buf;
        for (size_t i = 0; i < c->n_watch; i++)
                for (CountersIncident t = 0; t < _COUNTERS_INCIDENT_MAX; t++)
                        for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                                if (c->watch[i].incidents[t][r] > 0)
                                        s[n++] = (MetricsSeries) {
                                                .labels = { c->watch[i].label, incident_labels[t],
                                                            psi_resource_to_string(r) },
                                                .value = c->watch[i].incidents[t][r],
                                        };
        n_incidents = n;
        for (size_t i = 0; i < c->n_watch; i++)
                for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                        if (c->watch[i].incidents[COUNTERS_INCIDENT_PRESSURE][r] > 0)
                                s[n++] = (MetricsSeries) {
                                        .labels = { c->watch[i].label, psi_resource_to_string(r) },
                                        .value = c->watch[i].stall_us[r],
                                };
        *ret_n_incidents = n_incidents;
        *ret_n_stall = n - n_incidents;
        return 0;
}

void counters_done(Counters *c) {
        for (size_t i = 0; i < c->n_watch; i++)
                free(c->watch[i].label);
        free(c->watch);
        c->watch = NULL;
        c->n_watch = c->cap_watch = 0;
}
