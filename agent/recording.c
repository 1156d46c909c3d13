/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/recording.h"
#include "agent/sample.h"
#include "base/array.h"
#include "base/log.h"
#include "base/macro.h"
#include "sampling/recorder.h"

/* The kernel checks an unprivileged trigger every 2 s (psi_avgs_work()). */
#define RECORDING_LATENCY_MS 2000

/* One watch's recording: its recorder, and what the recorder's scope points at. */
typedef struct WatchRecording {
        Recording *rec;
        Watch *watch;
        Recorder recorder;
        int cgroup_fd; /* the watch's cgroup while recording (-EBADF node-wide) */
        CulpritScope culprit;
        bool has_culprit;
        PsiResource resource;
        usec_t until_us;                     /* quiet since... : stop then */
        usec_t started_us;                   /* this recording's start, for the time spent recording */
        uint64_t entries_seen, cost_seen_us; /* of recorder's totals, already counted */
        ev_timer quiet;
        ev_timer check; /* after an entry: the watch's triggers checked against it (on the loop, not inside the
                         * recorder's tick: a wakeup can start a sample, or remove the watch) */
} WatchRecording;

struct Recording {
        Agent *a;
        RecordingRaise raise;
        WatchRecording **items;
        size_t n, cap;
        unsigned running; /* items recording now */
};

uint64_t recording_period_ms(uint64_t longest_window_us) {
        return MAX(longest_window_us / USEC_PER_MSEC / 4, (uint64_t) RECORDER_PERIOD_MIN_MS);
}

uint64_t recording_depth_ms(uint64_t longest_window_us) {
        return longest_window_us / USEC_PER_MSEC + RECORDING_LATENCY_MS;
}

bool recording_admit(unsigned record_s, unsigned recording, unsigned max, bool already) {
        return record_s > 0 && (already || recording < max);
}

bool recording_should_fire(uint64_t growth_us, const PsiTriggerSpec *spec, const TriggerTotal *t, usec_t now_mono_us) {
        return growth_us >= spec->threshold_us && now_mono_us >= wakeup_total_newest_mono(t) + spec->window_us;
}

static uint64_t longest_window_us(const Watch *w) {
        uint64_t m = 0;

        for (size_t i = 0; i < w->n_triggers; i++)
                m = MAX(m, (uint64_t) w->triggers[i]->effective.window_us);
        return m;
}

/* What the recorder did since it was last counted goes to the agent's counters. */
static void count(WatchRecording *wr) {
        Counters *c = &wr->rec->a->counters;
        Recorder *r = &wr->recorder;

        c->recorder_entries += r->entries_total - wr->entries_seen;
        c->recorder_us += r->cost_us_total - wr->cost_seen_us;
        wr->entries_seen = r->entries_total;
        wr->cost_seen_us = r->cost_us_total;
}

/* Stops the recorder and gives back what its scope held. */
static void end(WatchRecording *wr) {
        Recording *rec = wr->rec;

        count(wr);
        if (wr->started_us) {
                rec->a->counters.recording_us += now_usec(CLOCK_MONOTONIC) - wr->started_us;
                wr->started_us = 0;
                rec->running--;
        }
        recorder_stop(&wr->recorder);
        ev_timer_stop(rec->a->loop, &wr->quiet);
        ev_timer_stop(rec->a->loop, &wr->check);
        if (wr->has_culprit)
                culprit_scope_close(&wr->culprit);
        wr->has_culprit = false;
        wr->cgroup_fd = safe_close(wr->cgroup_fd);
        /* The metrics file says what the recording cost as soon as it ends. */
        health_update(rec->a);
}

/* The entry just taken, against the watch's triggers: the first one it says fired is raised. */
static void on_check(struct ev_loop *loop, ev_timer *timer, int revents) {
        WatchRecording *wr = ASSERT_PTR(timer->data);
        Watch *w = wr->watch;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (w->timing.sampling || !wr->recorder.running)
                return;
        for (size_t i = 0; i < w->n_triggers; i++) {
                Trigger *t = w->triggers[i];
                uint64_t growth, total;
                if (!t->total.known ||
                    !recorder_growth(&wr->recorder, t->effective.resource, t->effective.stall, t->effective.window_us,
                                     &growth, &total) ||
                    !recording_should_fire(growth, &t->effective, &t->total, now))
                        continue;
                log_debug("trigger \"%s\" on %s: %llu us of stall in its window as recorded, and no wakeup; raised",
                          t->cfg->text, w->name, (unsigned long long) growth);
                wr->rec->a->counters.recorder_wakeups++;
                wr->rec->raise(t); /* may free wr (the watch removed): nothing after it */
                return;
        }
}

static void on_entry(Recorder *r, void *userdata) {
        WatchRecording *wr = userdata;

        ev_timer_set(&wr->check, 0., 0.);
        ev_timer_start(wr->rec->a->loop, &wr->check);
}

static void on_quiet(struct ev_loop *loop, ev_timer *t, int revents) {
        WatchRecording *wr = ASSERT_PTR(t->data);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (now < wr->until_us) {
                /* A wakeup moved the end: wait for it. */
                ev_timer_set(&wr->quiet, (double) (wr->until_us - now) / 1e6, 0.);
                ev_timer_start(loop, &wr->quiet);
                return;
        }
        log_debug("%s quiet for %u s: recording stops", wr->watch->name, wr->rec->a->config->record_s);
        end(wr);
}

/* Starts (or restarts) recording w for resource: the same scope its sample will take (the cgroup's
 * processes ranked on resource, the hottest cgroups, its culprit scope). */
static int begin(WatchRecording *wr, PsiResource resource) {
        Agent *a = wr->rec->a;
        Watch *w = wr->watch;
        uint64_t window = longest_window_us(w);
        int r;

        /* A recording restarted at an incident keeps its cgroup and culprit scope; a new one, or one
         * for another resource, opens them. recorder_start() stops the old run. */
        if (wr->started_us)
                count(wr);
        if (!wr->started_us || wr->resource != resource) {
                if (wr->has_culprit)
                        culprit_scope_close(&wr->culprit);
                wr->has_culprit = false;
                wr->cgroup_fd = safe_close(wr->cgroup_fd);
                r = core_watch_open_cgroup(w, &wr->cgroup_fd);
                if (r < 0)
                        return r;
                wr->resource = resource;
                wr->has_culprit = core_watch_culprit(w, resource, &wr->culprit);
        }
        /* The sample's own scope, so that it can start from the entries (recorder_matches()); the
         * limit's counters with every entry: "on what" covers the recorded window too. */
        SampleScope scope = core_watch_scope(w, wr->cgroup_fd, resource, wr->has_culprit ? &wr->culprit : NULL);
        r = recorder_start(&wr->recorder, &scope, recording_period_ms(window), recording_depth_ms(window));
        if (r < 0)
                return r;
        if (!wr->started_us) {
                wr->started_us = now_usec(CLOCK_MONOTONIC);
                wr->rec->running++;
                a->counters.recordings++;
        }
        return 0;
}

static WatchRecording *find(Recording *rec, const Watch *w) {
        for (size_t i = 0; i < rec->n; i++)
                if (rec->items[i]->watch == w)
                        return rec->items[i];
        return NULL;
}

static WatchRecording *find_or_add(Recording *rec, Watch *w) {
        WatchRecording *wr = find(rec, w);

        if (wr)
                return wr;
        if (array_grow((void **) &rec->items, &rec->cap, rec->n, 4, sizeof *rec->items) < 0)
                return NULL;
        wr = calloc(1, sizeof *wr);
        if (!wr)
                return NULL;
        *wr = (WatchRecording) { .rec = rec, .watch = w, .cgroup_fd = -EBADF };
        recorder_init(&wr->recorder, rec->a->loop, runtime_exit_cpus(&rec->a->rt));
        ev_init(&wr->quiet, on_quiet);
        wr->quiet.data = wr;
        ev_init(&wr->check, on_check);
        wr->check.data = wr;
        wr->recorder.on_entry = on_entry;
        wr->recorder.userdata = wr;
        rec->items[rec->n++] = wr;
        return wr;
}

/* Records w for resource until record_s from now, if the bound allows. */
static void hold(Recording *rec, Watch *w, PsiResource resource, bool restart) {
        Agent *a = rec->a;
        WatchRecording *wr = find(rec, w);
        bool already = wr && wr->started_us;
        int r;

        if (!recording_admit(a->config->record_s, rec->running, a->config->max_concurrent_samples, already)) {
                if (a->config->record_s > 0)
                        a->counters.recordings_refused++;
                return;
        }
        wr = wr ? wr : find_or_add(rec, w);
        if (!wr) {
                log_warning("out of memory: %s is not recorded; its next incident covers the second after its "
                            "wakeup",
                            w->name);
                return;
        }
        wr->until_us = now_usec(CLOCK_MONOTONIC) + (usec_t) a->config->record_s * USEC_PER_SEC;
        if (restart || !wr->recorder.running || wr->resource != resource) {
                r = begin(wr, resource);
                if (r < 0) {
                        /* A cgroup that went away is the watch's to report. */
                        if (!cgroup_is_gone(r))
                                log_warning_errno(r, "cannot record %s", w->name);
                        end(wr);
                        return;
                }
                log_debug("recording %s every %llu ms for %u s", w->name, (unsigned long long) wr->recorder.period_ms,
                          a->config->record_s);
        }
        if (!ev_is_active(&wr->quiet)) {
                ev_timer_set(&wr->quiet, (double) a->config->record_s, 0.);
                ev_timer_start(a->loop, &wr->quiet);
        }
}

/* A pressure incident was written: the ring starts again after its window, so that the next one
 * never starts inside it (nor sees its stall as growth: recording_should_fire()). */
static void on_incident(Watch *w, const Trigger *t, const char *id, void *userdata) {
        hold(userdata, w, t->effective.resource, true);
}

void recording_wakeup(Watch *w) {
        Recording *rec = w->agent->recording;
        WatchRecording *wr = rec ? find(rec, w) : NULL;

        if (wr && wr->started_us)
                wr->until_us = now_usec(CLOCK_MONOTONIC) + (usec_t) rec->a->config->record_s * USEC_PER_SEC;
}

void recording_sample(Watch *w, Trigger *t) {
        Recording *rec = w->agent->recording;
        WatchRecording *wr = rec ? find(rec, w) : NULL;

        if (wr && !wr->started_us)
                wr = NULL;
        if (wr)
                count(wr);
        /* Lent: the sample takes an entry and the recording goes on, whatever becomes of it. */
        sample_start(w, t, wr ? &wr->recorder : NULL);
}

static void on_removed(Watch *w, void *userdata) {
        Recording *rec = userdata;

        for (size_t i = 0; i < rec->n; i++)
                if (rec->items[i]->watch == w) {
                        WatchRecording *wr = rec->items[i];
                        end(wr);
                        recorder_free(&wr->recorder);
                        free(wr);
                        rec->items[i] = rec->items[--rec->n];
                        return;
                }
}

int recording_start(Agent *a, RecordingRaise raise) {
        Recording *rec = calloc(1, sizeof *rec);
        int r;

        if (!rec)
                return -ENOMEM;
        rec->a = a;
        rec->raise = raise;
        r = core_hooks_add(a, &(WatchHooks) { .userdata = rec, .removed = on_removed, .incident = on_incident });
        if (r < 0) {
                free(rec);
                return r;
        }
        a->recording = rec;
        return 0;
}

void recording_stop(Agent *a) {
        Recording *rec = a->recording;

        if (!rec)
                return;
        core_hooks_remove(a, rec);
        while (rec->n > 0)
                on_removed(rec->items[rec->n - 1]->watch, rec);
        free(rec->items);
        a->recording = mfree(rec);
}
