/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "agent/pools.h"
#include "agent/report.h"
#include "agent/sample.h"
#include "base/log.h"
#include "base/macro.h"
#include "sampling/recorder.h"

/* The id the running sample was given at its start, taken back from the history when it ends
 * without an incident. */
static void forget_id(Watch *w) {
        if (w->sample_id[0])
                history_forget(&w->agent->history, w->sample_id);
        w->sample_id[0] = '\0';
}

/* The end of every sample, reported, failed, dropped or never started: what it borrowed goes back
 * (its "on what", its shared pass, its place) and its descriptors are closed. */
static void end(Watch *w) {
        Agent *a = w->agent;

        sampler_drop_onwhat(&w->sampler);
        pools_give_onwhat(a, TAKE_PTR(w->onwhat));
        pools_give_pass(a, TAKE_PTR(w->pass));
        w->sample_fd = safe_close(w->sample_fd);
        if (w->culprit)
                culprit_scope_close(w->culprit);
        w->culprit = mfree(w->culprit);
        w->timing.sampling = false;
        pools_give_place(a);
}

/* The pressure incident of s (r: the sampler's), written to w's output. False when there is none
 * (logged; its id forgotten). */
static bool report(Watch *w, Sampler *s, int r, char *id, size_t id_size) {
        Agent *a = w->agent;
        Trigger *t = w->fired;
        bool lifetime = s->sample_ms == 0;

        if (cgroup_is_gone(r)) {
                forget_id(w);
                log_info("cgroup %s disappeared during its sample; no incident", w->name);
                return false;
        }
        if (r < 0) {
                forget_id(w);
                log_error_errno(r, "cannot take the second snapshot of %s", w->name);
                return false;
        }
        /* Given at the sample's start (the history named it while it ran), or now. */
        bool reserved = w->sample_id[0] != '\0';
        memcpy(id, w->sample_id, id_size);
        if (s->partial)
                log_warning("out of memory: the sample of %s lacks exits, thread detail or processes", w->name);
        if (s->a.errors + s->b.errors > 0)
                log_debug_errno(s->a.errors ? s->a.first_error : s->b.first_error,
                                "%u processes of %s could not be measured", s->a.errors + s->b.errors, w->name);

        ReportEnd e = {
                .agent = a,
                .id = id,
                .id_size = id_size,
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
                           &e);
        /* Where this incident's window ended: a later firing for the stall it measured is not another
         * incident (agent/wakeup.h: WAKEUP_REPORTED). */
        uint64_t end_total;
        if (r >= 0 && !lifetime &&
            snapshot_pressure_total(&s->b, t->effective.resource, t->effective.stall, &end_total))
                wakeup_total_reported(&t->total, end_total, s->b.mono_us);
        if (r < 0) {
                forget_id(w);
                log_error_errno(r, "cannot build the incident for %s", w->name);
                return false;
        }
        w->sample_id[0] = '\0';
        a->rate.suppressed_since_incident = 0;
        if (!reserved && history_add(&a->history, w->path, id, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("out of memory: incident %s will not be linked to a later oom kill", id);
        return true;
}

static void on_done(Sampler *s, int r) {
        Watch *w = ASSERT_PTR(s->userdata);
        Agent *a = w->agent;
        char id[HISTORY_ID_MAX];

        bool written = report(w, s, r, id, sizeof id);
        end(w);
        if (!written)
                return;
        core_hooks_incident(a, w, w->fired, id);
        usec_t done = now_usec(CLOCK_MONOTONIC);
        /* The agent's own time for this incident, the sample window left out (benchmarks read it). */
        log_debug("incident %s for %s: %u threads, agent time %llu us (snapshot A %llu, B %llu, report and write %llu)",
                  id, w->name, s->a.listed, (unsigned long long) (s->a_cost_us + done - s->b_start_us),
                  (unsigned long long) s->a_cost_us, (unsigned long long) (s->b_end_us - s->b_start_us),
                  (unsigned long long) (done - s->b_end_us));
        w->timing.has_incident = true;
        w->timing.last_incident_mono_us = now_usec(CLOCK_MONOTONIC);
}

void sample_init(Watch *w) {
        sampler_init(&w->sampler, w->agent->loop, runtime_exit_cpus(&w->agent->rt), on_done, w);
}

/* Starts the sample of the scope w's cgroup is open for (w->sample_fd). */
static int begin(Watch *w, Trigger *t, Recorder *rec) {
        Agent *a = w->agent;
        /* Who is causing it: the processes and cgroups competing for the resource. No culprit pass
         * is not a reason to lose the incident. */
        w->culprit = malloc(sizeof *w->culprit);
        if (w->culprit && !core_watch_culprit(w, t->effective.resource, w->culprit))
                w->culprit = mfree(w->culprit);
        SampleScope scope = core_watch_scope(w, w->sample_fd, t->effective.resource, w->culprit);
        scope.stall = t->effective.stall;
        scope.stacks_hz = w->cfg->stacks_hz;
        /* From the pool (none left, after a failed reserve: no "on what" this time). */
        w->onwhat = pools_take_onwhat(a);
        scope.onwhat = w->onwhat;
        /* Recorded while it stalled: the window starts where the trigger's did, before the wakeup
         * (kernel-facts.md: trigger-latency), with its own culprit pass. */
        usec_t now = now_usec(CLOCK_MONOTONIC);
        if (rec && recorder_matches(rec, &scope, now)) {
                if (scope.culprit)
                        a->counters.culprit_passes++;
                return sampler_start_recorded(&w->sampler, &scope, w->cfg->sample_ms, rec,
                                              now - MIN(now, t->effective.window_us));
        }
        if (scope.culprit) {
                w->pass = pools_take_pass(a, w->culprit, w->cfg->sample_ms);
                scope.pass = w->pass ? &w->pass->pass : NULL;
        }
        return sampler_start(&w->sampler, &scope, w->cfg->sample_ms);
}

void sample_start(Watch *w, Trigger *t, Recorder *rec) {
        Agent *a = w->agent;
        int r;

        w->fired = t;
        w->timing.sampling = true;
        pools_take_place(a);
        /* A node whose triggers took every descriptor can still sample: the cgroup's directory
         * comes out of the reserve. */
        r = core_watch_open_cgroup(w, &w->sample_fd);
        if (r >= 0)
                r = begin(w, t, rec);
        if (r < 0) {
                end(w);
                if (cgroup_is_gone(r))
                        log_info("cgroup %s disappeared as its trigger fired; no incident", w->name);
                else
                        log_error_errno(r, "cannot take a snapshot of %s", w->name);
                return;
        }
        /* A sample still running (one of no window was written in sampler_start()) has its id now: an
         * oom or kill incident while it runs names it in `related`. */
        if (!w->timing.sampling)
                return;
        report_reserve_id(a, w->sampler.wakeup_real_us, w->sample_id, sizeof w->sample_id);
        if (history_add(&a->history, w->path, w->sample_id, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("out of memory: incident %s will not be linked to a later oom kill", w->sample_id);
        log_debug("trigger \"%s\" on %s fired: sampling %u threads for %llu ms", t->cfg->text, w->name,
                  w->sampler.a.listed, (unsigned long long) w->cfg->sample_ms);
}

void sample_drop(Watch *w, const char *why) {
        if (!w->timing.sampling)
                return;
        forget_id(w);
        sampler_cancel(&w->sampler);
        end(w);
        log_info("dropped the sample in flight for %s (%s)", w->name, why);
}
