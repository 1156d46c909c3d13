/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/sample.h"
#include "agent/stall.h"
#include "agent/watchtrigger.h"
#include "agent/watch.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"
#include "sinks/registry.h"

/* Disarms and frees a watch, and takes it out of the agent's list. */
void watch_remove(Agent *a, Watch *w) {
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i] == w) {
                        a->watches[i] = a->watches[--a->n_watches];
                        break;
                }
        sample_drop(w, "its cgroup is no longer watched");
        core_hooks_removed(a, w);
        for (size_t j = 0; j < w->n_triggers; j++)
                trigger_free(a, w->triggers[j]);
        free(w->triggers);
        sampler_free(&w->sampler);
        free(w->path);
        free(w->name);
        free(w);
}

/* The cgroup is gone (ERR on its trigger, which stays set and would loop if taken for a firing):
 * the whole watch is disarmed; if the cgroup comes back, discovery arms it again. */
static void watch_gone(Agent *a, Watch *w) {
        log_info("cgroup %s was removed: its triggers are closed", w->name);
        a->counters.cgroups_gone++;
        watch_remove(a, w);
        if (a->armed == 0)
                log_warning("no trigger is armed any more; psidiag keeps running until stopped");
        health_update(a);
}

/* Events are taken one at a time: handling one can free other triggers (a removed cgroup takes
 * its watch's triggers with it), and the set drops their events only when they are still queued.
 * A burst is handled in slices so that the loop's other watchers are not kept waiting. */
#define TRIGGER_EVENTS_PER_WAKEUP 256

void watch_on_trigger_set(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = ASSERT_PTR(io->data);
        PsiEvent ev;

        for (unsigned i = 0; i < TRIGGER_EVENTS_PER_WAKEUP && psi_set_take(a->psi, &ev, 1) == 1; i++) {
                Trigger *t = ASSERT_PTR(ev.userdata);
                if (ev.gone)
                        watch_gone(a, t->watch);
                else
                        stall_trigger_fired(t);
        }
        int r = psi_set_error(a->psi);
        if (r < 0 && !a->psi_error_logged) {
                a->psi_error_logged = true;
                if (r == -ENOMEM)
                        log_error("out of memory: a trigger's event was lost, and that trigger stays silent");
                else
                        log_error_errno(r, "waiting for triggers failed: no trigger reports any more");
        }
}

static int watch_get_sink(Agent *a, const char *path, Sink **ret, char *why, size_t why_size) {
        int r;

        for (size_t i = 0; i < a->n_sinks; i++)
                if (sink_paths_same(a->sinks[i]->path, path)) {
                        *ret = a->sinks[i];
                        return 0;
                }
        if (array_grow((void **) &a->sinks, &a->cap_sinks, a->n_sinks, 4, sizeof *a->sinks) < 0)
                return -ENOMEM;
        r = sink_open(path, core_sink_format(a), &a->sinks[a->n_sinks], why, why_size);
        if (r < 0)
                return r;
        *ret = a->sinks[a->n_sinks++];
        return 0;
}

int watch_set_config(Agent *a, Watch *w, const WatchConfig *cfg) {
        char why[160] = "out of memory";
        Sink *sink;
        int r = watch_get_sink(a, cfg->output, &sink, why, sizeof why);

        if (r < 0) {
                log_error_errno(r, "cannot open output %s: %s", cfg->output, why);
                return r;
        }
        w->cfg = cfg;
        w->sink = sink;
        w->timing.cooldown_us = cfg->cooldown_ms * USEC_PER_MSEC;
        return 0;
}

Watch *watch_add(Agent *a, const WatchConfig *cfg, const char *path) {
        Watch *w = calloc(1, sizeof *w);

        if (w && array_grow((void **) &a->watches, &a->cap_watches, a->n_watches, 16, sizeof *a->watches) < 0)
                w = mfree(w);
        if (!w) {
                log_error("out of memory");
                return NULL;
        }
        w->agent = a;
        w->sample_fd = -EBADF;
        w->path = path ? strdup(path) : NULL;
        if (asprintf(&w->name, "%s", path ? (path[0] ? path : "/") : "node") < 0)
                w->name = NULL;
        w->triggers = calloc(cfg->n_triggers, sizeof *w->triggers);
        sample_init(w);
        a->watches[a->n_watches++] = w;
        if ((path && !w->path) || !w->name || !w->triggers) {
                log_error("out of memory");
                watch_remove(a, w);
                return NULL;
        }
        if (watch_set_config(a, w, cfg) < 0) {
                watch_remove(a, w);
                return NULL;
        }
        return w;
}

Watch *watch_new(Agent *a, const WatchConfig *cfg, const char *path) {
        unsigned armed_before = a->armed;
        Watch *w = watch_add(a, cfg, path);
        int r;

        if (!w)
                return NULL;
        /* The cgroup's directory only while arming: afterwards the watch holds its triggers' fds
         * alone, and a sample opens the directory again. */
        int cgroup_fd;
        r = core_watch_open_cgroup(w, &cgroup_fd);
        if (r < 0) {
                if (!fd_budget_starved(&a->fds, r, cfg->n_triggers) && !cgroup_is_gone(r))
                        log_warning_errno(r, "cannot open cgroup %s under %s", w->name,
                                          a->rt.sysroot->cgroup2_path ? a->rt.sysroot->cgroup2_path : "(no cgroup2)");
                watch_remove(a, w);
                return NULL;
        }
        for (size_t i = 0; i < cfg->n_triggers; i++) {
                Trigger *t = trigger_arm(a, w, cgroup_fd, &cfg->triggers[i]);
                if (t)
                        w->triggers[w->n_triggers++] = t;
        }
        if (w->n_triggers == 0) {
                cgroup_fd = safe_close(cgroup_fd);
                watch_remove(a, w);
                return NULL;
        }
        /* Buffers for the most a sample of it may measure: processes of every resource. */
        SampleScope scope = core_watch_scope(w, cgroup_fd, PSI_RESOURCE_CPU, NULL);
        scope.resource = RANK_SCORE_ALL;
        size_t n;
        if (sampler_preallocate(&w->sampler, &scope, &n) < 0)
                log_warning("cannot allocate sample buffers for %s ahead of time (%zu threads)", w->name, n);
        cgroup_fd = safe_close(cgroup_fd);
        core_hooks_added(a, w);
        if (a->started)
                log_info("armed %u trigger%s on %s", a->armed - armed_before, a->armed - armed_before == 1 ? "" : "s",
                         w->name);
        return w;
}

Watch *watch_find(Agent *a, const WatchConfig *cfg, const char *path) {
        for (size_t i = 0; i < a->n_watches; i++) {
                Watch *w = a->watches[i];
                if (w->cfg == cfg && (path ? w->path && strcmp(w->path, path) == 0 : !w->path))
                        return w;
        }
        return NULL;
}
