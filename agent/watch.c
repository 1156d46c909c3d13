/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/report.h"
#include "agent/trigger.h"
#include "agent/watch.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "sampling/recorder.h"
#include "sinks/registry.h"

/* A node culprit pass that overlapping samples of one resource share (agent/episode.h), from the
 * pool: back to it when its last sample is reported or dropped. */
struct SharedPass {
        CulpritPass pass;
        PsiResource resource;
        unsigned users; /* samples in flight that use it */
        char id[EPISODE_ID_MAX];
};
#define SHARED_PASS_POOL_MAX 4

/* What the watches share: the pools their samples borrow from, the node-wide storms' episodes. */
struct WatchPools {
        bool psi_error_logged;
        unsigned sampling; /* watches with a sample in flight */
        /* "On what" for the samples in flight: as many as max_concurrent_samples has allowed, each
         * with its looks, allocated at start and when a reload raises it, so a sample allocates
         * none of it at its wakeup and an idle watch holds none. */
        OnWhat **onwhat_free;
        size_t n_onwhat_free, n_onwhat;
        /* Node-wide storms: the episode of each resource, and the node culprit pass of each
         * resource that samples starting now may still join (its end not taken yet). */
        Episode episodes[_PSI_RESOURCE_MAX];
        uint64_t pass_seq;
        SharedPass *open_pass[_PSI_RESOURCE_MAX];
        SharedPass *pass_free[SHARED_PASS_POOL_MAX];
        size_t n_pass_free;
};

static void watch_close_sample_fd(Watch *w) {
        w->sample_fd = safe_close(w->sample_fd);
        if (w->culprit)
                culprit_scope_close(w->culprit);
        w->culprit = mfree(w->culprit);
}

int watch_onwhat_reserve(Agent *a, size_t n) {
        WatchPools *p = a->pools;

        if (n <= p->n_onwhat)
                return 0;
        OnWhat **f = reallocarray(p->onwhat_free, n, sizeof *f);
        if (!f)
                return -ENOMEM;
        p->onwhat_free = f;
        while (p->n_onwhat < n) {
                OnWhat *w = malloc(sizeof *w);
                if (!w || onwhat_init(w) < 0) {
                        free(w);
                        return -ENOMEM;
                }
                p->onwhat_free[p->n_onwhat_free++] = w;
                p->n_onwhat++;
        }
        return 0;
}

int watch_start(Agent *a) {
        a->pools = calloc(1, sizeof *a->pools);
        return a->pools ? 0 : -ENOMEM;
}

void watch_stop(Agent *a) {
        WatchPools *p = a->pools;

        if (!p)
                return;
        for (size_t i = 0; i < p->n_onwhat_free; i++) {
                onwhat_done(p->onwhat_free[i]);
                free(p->onwhat_free[i]);
        }
        free(p->onwhat_free);
        for (size_t i = 0; i < p->n_pass_free; i++) {
                culprit_pass_done(&p->pass_free[i]->pass);
                free(p->pass_free[i]);
        }
        free(p);
        a->pools = NULL;
}

/* A node pass of res for samples that start while its end is not taken, from the pool. NULL out of
 * memory (the sample then runs its own). */
static SharedPass *pass_new(Agent *a, PsiResource res) {
        WatchPools *p = a->pools;
        SharedPass *sp = p->n_pass_free > 0 ? p->pass_free[--p->n_pass_free] : calloc(1, sizeof *sp);

        if (!sp)
                return NULL;
        sp->pass.started = sp->pass.ended = false;
        sp->resource = res;
        sp->users = 1;
        episode_format_id('p', now_usec(CLOCK_REALTIME), ++p->pass_seq, a->rt.host.boot_id, getpid(), sp->id,
                          sizeof sp->id);
        p->open_pass[res] = sp;
        return sp;
}

/* The sample's shared pass, given back: to the pool once no sample uses it. */
static void watch_release_pass(Watch *w) {
        WatchPools *p = w->agent->pools;
        SharedPass *sp = TAKE_PTR(w->pass);

        if (!sp || --sp->users > 0)
                return;
        if (p->open_pass[sp->resource] == sp)
                p->open_pass[sp->resource] = NULL;
        if (p->n_pass_free < SHARED_PASS_POOL_MAX) {
                p->pass_free[p->n_pass_free++] = sp;
                return;
        }
        culprit_pass_done(&sp->pass);
        free(sp);
}

/* The culprit pass of w's sample about to start: the node's pass of the resource that another
 * sample runs, while its end is not taken (their windows overlap), else a new one that later
 * samples may join; a scope other than the node (a limit's, or the sample's own) is the
 * sample's alone. */
static CulpritPass *watch_take_pass(Watch *w, const CulpritScope *c) {
        Agent *a = w->agent;
        SharedPass *sp = a->pools->open_pass[c->resource];

        if (!c->node || c->same || w->cfg->sample_ms == 0) {
                a->counters.culprit_passes++;
                return NULL;
        }
        if (episode_pass_joinable(sp != NULL, sp && sp->pass.ended, w->cfg->sample_ms)) {
                sp->users++;
                a->counters.culprit_passes_shared++;
        } else {
                sp = pass_new(a, c->resource);
                a->counters.culprit_passes++;
        }
        w->pass = sp;
        return sp ? &sp->pass : NULL;
}

/* The sample's "on what", back to the pool. */
static void watch_give_onwhat(Watch *w) {
        WatchPools *p = w->agent->pools;

        sampler_drop_onwhat(&w->sampler);
        if (w->onwhat)
                p->onwhat_free[p->n_onwhat_free++] = TAKE_PTR(w->onwhat);
}

/* The id the running sample was given at its start, taken back from the history when it ends
 * without an incident. */
static void watch_forget_sample_id(Watch *w) {
        if (w->sample_id[0])
                history_forget(&w->agent->history, w->sample_id);
        w->sample_id[0] = '\0';
}

void watch_drop_sample(Watch *w, const char *why) {
        if (!w->timing.sampling)
                return;
        watch_forget_sample_id(w);
        sampler_cancel(&w->sampler);
        watch_give_onwhat(w);
        watch_release_pass(w);
        watch_close_sample_fd(w);
        w->timing.sampling = false;
        w->agent->pools->sampling--;
        log_info("dropped the sample in flight for %s (%s)", w->name, why);
}

/* Disarms and frees a watch, and takes it out of the agent's list. */
void watch_remove(Agent *a, Watch *w) {
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i] == w) {
                        a->watches[i] = a->watches[--a->n_watches];
                        break;
                }
        watch_drop_sample(w, "its cgroup is no longer watched");
        core_hooks_removed(a, w);
        for (size_t j = 0; j < w->n_triggers; j++)
                trigger_free(a, w->triggers[j]);
        free(w->triggers);
        sampler_free(&w->sampler);
        free(w->path);
        free(w->name);
        free(w);
}

static void watch_report_sample(Sampler *s, int r) {
        Watch *w = ASSERT_PTR(s->userdata);
        Agent *a = w->agent;
        Trigger *t = w->fired;
        char id[HISTORY_ID_MAX];

        bool lifetime = s->sample_ms == 0;
        w->timing.sampling = false;
        a->pools->sampling--;
        /* The culprit scope's fds are closed here; its path and limit stay for the report. */
        w->sample_fd = safe_close(w->sample_fd);
        _cleanup_free_ CulpritScope *culprit = TAKE_PTR(w->culprit);
        if (culprit)
                culprit_scope_close(culprit);
        if (cgroup_is_gone(r)) {
                watch_forget_sample_id(w);
                log_info("cgroup %s disappeared during its sample; no incident", w->name);
                return;
        }
        if (r < 0) {
                watch_forget_sample_id(w);
                log_error_errno(r, "cannot take the second snapshot of %s", w->name);
                return;
        }
        /* Given at the sample's start (the history named it while it ran), or now. */
        bool reserved = w->sample_id[0] != '\0';
        memcpy(id, w->sample_id, sizeof id);
        if (s->partial)
                log_warning("out of memory: the sample of %s lacks exits, thread detail or processes", w->name);
        if (s->a.errors + s->b.errors > 0)
                log_debug_errno(s->a.errors ? s->a.first_error : s->b.first_error,
                                "%u processes of %s could not be measured", s->a.errors + s->b.errors, w->name);

        ReportEnd end = {
                .agent = a,
                .id = id,
                .id_size = sizeof id,
                .reserved = reserved,
                .sinks = &w->sink,
                .n_sinks = 1,
                .count = { .label = counters_watch_label(w->cfg),
                           .type = COUNTERS_INCIDENT_PRESSURE,
                           .resource = t->effective.resource,
                           .sample_thread_errors = lifetime ? s->a.errors : s->a.errors + s->b.errors },
        };
        r = report_publish(&s->result,
                           &(IncidentContext) {
                                   .type = "pressure",
                                   .id = id,
                                   .host = &a->rt.host,
                                   .delayacct = runtime_delayacct(&a->rt),
                                   .has_trigger = true,
                                   .trigger_cgroup = w->path,
                                   .trigger = t->effective,
                                   .trigger_spec = t->cfg->text,
                                   .has_suppressed = true,
                                   .suppressed = a->rate.suppressed_since_incident,
                                   .episode = w->episode,
                                   .culprit_pass = w->pass && s->result.culprits ? w->pass->id : NULL,
                           },
                           &end);
        /* Where this incident's window ended: a later firing for the stall it measured is not another
         * incident (agent/wakeup.h: WAKEUP_REPORTED). */
        uint64_t end_total;
        if (r >= 0 && !lifetime &&
            snapshot_pressure_total(&s->b, t->effective.resource, t->effective.stall, &end_total))
                wakeup_total_reported(&t->total, end_total, s->b.mono_us);
        if (r < 0) {
                watch_forget_sample_id(w);
                log_error_errno(r, "cannot build the incident for %s", w->name);
                return;
        }
        w->sample_id[0] = '\0';
        a->rate.suppressed_since_incident = 0;
        if (!reserved && history_add(&a->history, w->path, id, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("out of memory: incident %s will not be linked to a later oom kill", id);
        core_hooks_incident(a, w, t, id);
        usec_t done = now_usec(CLOCK_MONOTONIC);
        /* The agent's own time for this incident, the sample window left out (benchmarks read it). */
        log_debug("incident %s for %s: %u threads, agent time %llu us (snapshot A %llu, B %llu, report and write %llu)",
                  id, w->name, s->a.listed, (unsigned long long) (s->a_cost_us + done - s->b_start_us),
                  (unsigned long long) s->a_cost_us, (unsigned long long) (s->b_end_us - s->b_start_us),
                  (unsigned long long) (done - s->b_end_us));
        w->timing.has_incident = true;
        w->timing.last_incident_mono_us = now_usec(CLOCK_MONOTONIC);
}

/* The sample's report, then its "on what" back to the pool: only a sampling watch holds one. */
static void watch_finish_sample(Sampler *s, int r) {
        watch_report_sample(s, r);
        watch_give_onwhat(ASSERT_PTR(s->userdata));
        watch_release_pass(s->userdata);
}

static void watch_start_sample(Watch *w, Trigger *t) {
        WatchPools *p = w->agent->pools;
        SampleScope scope;
        int r;

        w->fired = t;
        w->timing.sampling = true;
        p->sampling++;
        /* A node whose triggers took every descriptor can still sample: the cgroup's directory
         * comes out of the reserve. */
        r = core_watch_open_cgroup(w, &w->sample_fd);
        if (r >= 0) {
                scope = core_sample_scope(w->agent, w->sample_fd, w->path, t->effective.resource, w->cfg->top);
                scope.stall = t->effective.stall;
                /* On what: the limit behind the stall, and where blocked threads wait. */
                scope.limits = w->agent->rt.limits;
                scope.limits_cgroup = w->path;
                scope.limits_resource = t->effective.resource;
                /* From the pool (none left, after a failed reserve: no "on what" this time). */
                if (p->n_onwhat_free > 0)
                        w->onwhat = p->onwhat_free[--p->n_onwhat_free];
                scope.onwhat = w->onwhat;
                /* Who is causing it: the processes and cgroups competing for the resource. No
                 * culprit pass is not a reason to lose the incident. */
                w->culprit = malloc(sizeof *w->culprit);
                if (w->culprit && w->agent->rt.limits &&
                    culprit_scope_open(w->agent->rt.limits, w->path, t->effective.resource, w->culprit) >= 0)
                        scope.culprit = w->culprit;
                else
                        w->culprit = mfree(w->culprit);
                /* Recorded while it stalled: the window starts where the trigger's did, before the
                 * wakeup (kernel-facts.md: trigger-latency), with its own culprit pass. */
                usec_t now = now_usec(CLOCK_MONOTONIC);
                Recorder *rec = core_hooks_recorder(w->agent, w, t);
                if (rec && recorder_matches(rec, &scope, now)) {
                        if (scope.culprit)
                                w->agent->counters.culprit_passes++;
                        r = sampler_start_recorded(&w->sampler, &scope, w->cfg->sample_ms, rec,
                                                   now - MIN(now, t->effective.window_us));
                } else {
                        if (scope.culprit)
                                scope.pass = watch_take_pass(w, w->culprit);
                        r = sampler_start(&w->sampler, &scope, w->cfg->sample_ms);
                }
        }
        if (r < 0) {
                watch_give_onwhat(w);
                watch_release_pass(w);
                watch_close_sample_fd(w);
                w->timing.sampling = false;
                p->sampling--;
                if (cgroup_is_gone(r))
                        log_info("cgroup %s disappeared as its trigger fired; no incident", w->name);
                else
                        log_error_errno(r, "cannot take a snapshot of %s", w->name);
                return;
        }
        /* A sample still running (one of no window was written in sampler_start()) has its id now: an
         * oom or kill incident while it runs names it in `related`. */
        if (w->timing.sampling) {
                report_reserve_id(w->agent, w->sampler.wakeup_real_us, w->sample_id, sizeof w->sample_id);
                if (history_add(&w->agent->history, w->path, w->sample_id, now_usec(CLOCK_MONOTONIC)) < 0)
                        log_warning("out of memory: incident %s will not be linked to a later oom kill", w->sample_id);
        }
        if (w->timing.sampling)
                log_debug("trigger \"%s\" on %s fired: sampling %u threads for %llu ms", t->cfg->text, w->name,
                          w->sampler.a.listed, (unsigned long long) w->cfg->sample_ms);
}

static void trigger_event(Trigger *t, bool gone) {
        Watch *w = t->watch;
        Agent *a = w->agent;
        PressureStats ps;
        WakeupVerdict verdict;
        uint64_t total;
        int r;

        if (gone) {
                /* Never treat ERR as a firing: it stays set, and would loop. The cgroup is gone:
                 * disarm the whole watch; if the cgroup comes back, discovery arms it again. */
                log_info("cgroup %s was removed: its triggers are closed", w->name);
                a->counters.cgroups_gone++;
                watch_remove(a, w);
                if (a->armed == 0)
                        log_warning("no trigger is armed any more; psidiag keeps running until stopped");
                health_update(a);
                return;
        }

        /* A wakeup is measured by the growth of the fired line's total=: none (no_growth), or less
         * than the threshold since arming (a firing on the cgroup's stall history). */
        r = pressure_read_fd(t->fd, &ps);
        if (r < 0 || !ps.has[t->effective.stall]) {
                log_debug_errno(r, "cannot read %s pressure of %s", psi_resource_to_string(t->effective.resource),
                                w->name);
                return;
        }
        total = ps.line[t->effective.stall].total_us;
        verdict = wakeup_decide(&t->total, &t->effective, &w->timing, total, now_usec(CLOCK_MONOTONIC));
        /* The global limits come after the watch's own: a wakeup its cooldown ignores is not an
         * incident the rate limit has to count. */
        if (verdict == WAKEUP_SAMPLE && a->pools->sampling >= a->config->max_concurrent_samples) {
                verdict = WAKEUP_CAPACITY;
                a->rate.suppressed_since_incident++;
        } else if (verdict == WAKEUP_SAMPLE && !rate_limit_admit(&a->rate, now_usec(CLOCK_MONOTONIC))) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                verdict = WAKEUP_RATE_LIMIT;
                /* Once a minute at most: the metrics and the next incident carry the counts. */
                if (log_ratelimit_pass(&a->rate_warned, now))
                        log_warning("more than %u incidents in a minute (max_incidents_per_minute): dropping and "
                                    "counting the next ones",
                                    a->config->max_incidents_per_minute);
        }
        a->counters.wakeups[verdict]++;
        /* Every wakeup with real growth, held back or not, tells that the stall goes on. */
        if (verdict != WAKEUP_NO_GROWTH && verdict != WAKEUP_BELOW_THRESHOLD && verdict != WAKEUP_REPORTED) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                core_hooks_wakeup(a, w, t, verdict); /* still under pressure: a kill window goes on */
                Episode *e = &a->pools->episodes[t->effective.resource];
                if (episode_note(e, &a->counters.episodes, now, now_usec(CLOCK_REALTIME), t->effective.window_us,
                                 verdict == WAKEUP_SAMPLE ? now + w->cfg->sample_ms * USEC_PER_MSEC : 0))
                        log_debug("episode %" PRIu64 " of %s pressure begins with %s", e->seq,
                                  psi_resource_to_string(t->effective.resource), w->name);
                if (verdict == WAKEUP_SAMPLE)
                        episode_format_id('e', e->start_real_us, e->seq, a->rt.host.boot_id, getpid(), w->episode,
                                          sizeof w->episode);
        }
        if (verdict != WAKEUP_SAMPLE) {
                health_update(a);
                log_debug("trigger \"%s\" on %s %s; ignored", t->cfg->text, w->name, wakeup_verdict_to_string(verdict));
                return;
        }
        watch_start_sample(w, t);
}

void watch_trigger_fired(Trigger *t) {
        trigger_event(t, false);
}

/* Events are taken one at a time: handling one can free other triggers (a removed cgroup takes
 * its watch's triggers with it), and the set drops their events only when they are still queued.
 * A burst is handled in slices so that the loop's other watchers are not kept waiting. */
#define TRIGGER_EVENTS_PER_WAKEUP 256

void watch_on_trigger_set(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = ASSERT_PTR(io->data);
        PsiEvent ev;

        for (unsigned i = 0; i < TRIGGER_EVENTS_PER_WAKEUP && psi_set_take(a->psi, &ev, 1) == 1; i++)
                trigger_event(ASSERT_PTR(ev.userdata), ev.gone);
        int r = psi_set_error(a->psi);
        if (r < 0 && !a->pools->psi_error_logged) {
                a->pools->psi_error_logged = true;
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
        sampler_init(&w->sampler, a->loop, runtime_exit_cpus(&a->rt), watch_finish_sample, w);
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
        SampleScope scope = core_sample_scope(a, cgroup_fd, w->path, PSI_RESOURCE_CPU, w->cfg->top);
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
