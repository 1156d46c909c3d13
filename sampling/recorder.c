/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/timeutil.h"
#include "probes/taskstats.h"
#include "sampling/culprits.h"
#include "sampling/recorder.h"

static void on_tick(struct ev_loop *loop, ev_timer *timer, int revents);

void recorder_init(Recorder *r, struct ev_loop *loop, const char *exit_cpus) {
        *r = (Recorder) { .loop = loop, .exit_cpus = exit_cpus };
        ev_init(&r->tick, on_tick);
        r->tick.data = r;
}

static RecordedEntry *entry(Recorder *r, size_t age_from_oldest) {
        return &r->ring[(r->oldest + age_from_oldest) % r->depth];
}

/* Forgets the oldest entry, and the exit records only it needed. */
static void drop_oldest(Recorder *r) {
        r->oldest = (r->oldest + 1) % r->depth;
        r->n--;
        if (r->n == 0)
                return;
        size_t from = entry(r, 0)->exits_from;
        exit_records_drop_front(&r->exits, from);
        for (size_t i = 0; i < r->n; i++)
                entry(r, i)->exits_from -= from;
}

int recorder_take(Recorder *r) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        RecordedEntry *e;
        int err;

        exit_watch_drain(&r->exit_watch);
        /* An exit storm: the oldest entries go first, so what is kept stays whole. */
        while (r->n > 1 && r->exits.n > RECORDER_EXITS_MAX)
                drop_oldest(r);
        if (r->exits.n > RECORDER_EXITS_MAX) {
                r->lost_total += r->exits.n - RECORDER_EXITS_MAX;
                exit_records_drop_front(&r->exits, r->exits.n - RECORDER_EXITS_MAX);
                if (r->n > 0)
                        entry(r, 0)->exits_from = 0;
        }
        if (r->n == r->depth)
                drop_oldest(r);
        e = entry(r, r->n);
        /* The records heard from here on: a process the entry reads and that ends at once is in
         * them (as a sample listens from before its snapshot A). */
        e->exits_from = r->exits.n;
        err = snapshot_take(&e->a, &r->scope, true);
        if (err < 0)
                return err;
        culprit_pass_take(&r->scope, &e->ca, &e->a, &e->ga, &e->has_ca, &e->has_ga);
        e->onwhat = r->readings ? &r->readings[e - r->ring] : NULL;
        if (e->onwhat)
                onwhat_read(r->scope.limits, r->located ? &r->loc : NULL, r->scope.limits_resource, r->disk_buf,
                            e->onwhat);
        r->n++;
        r->entries_total++;
        r->cost_us_total += now_usec(CLOCK_MONOTONIC) - start;
        return 0;
}

static void on_tick(struct ev_loop *loop, ev_timer *timer, int revents) {
        Recorder *r = ASSERT_PTR(timer->data);

        /* A cgroup gone or memory short: no entry this time; the owner hears of it at the wakeup. */
        if (recorder_take(r) >= 0 && r->on_entry)
                r->on_entry(r, r->userdata);
}

/* The limit's location and the readings' buffers, when scope asks for "on what". */
static void start_onwhat(Recorder *r, const SampleScope *scope) {
        bool io = scope->limits_resource == PSI_RESOURCE_IO;

        r->located = false;
        if (!scope->limits || (!scope->limits_cgroup && !io))
                return;
        r->located = onwhat_locate(scope->limits, scope->limits_cgroup, scope->limits_resource, &r->loc);
        if (!r->readings)
                r->readings = calloc(RECORDER_ENTRIES_MAX, sizeof *r->readings);
        if (io && r->readings && !r->disks) {
                r->disks = calloc(RECORDER_ENTRIES_MAX, sizeof *r->disks);
                r->disk_buf = malloc(ONWHAT_DISK_BUF);
        }
        for (size_t i = 0; r->readings && i < RECORDER_ENTRIES_MAX; i++)
                r->readings[i].disks = io && r->disks && r->disk_buf ? &r->disks[i] : NULL;
}

int recorder_start(Recorder *r, const SampleScope *scope, uint64_t period_ms, uint64_t depth_ms) {
        recorder_stop(r);
        r->scope = *scope;
        start_onwhat(r, scope);
        culprit_pass_usage(&r->scope); /* as the sample reads it */
        r->period_ms = MAX(period_ms, (uint64_t) RECORDER_PERIOD_MIN_MS);
        /* Entries reaching depth_ms back, the newest, and one more for the period the newest is
         * into. */
        r->depth = (size_t) MIN((depth_ms + r->period_ms - 1) / r->period_ms + 2, (uint64_t) RECORDER_ENTRIES_MAX);
        r->n = r->oldest = 0;
        exit_records_clear(&r->exits);
        /* Listen from before the first entry, so a task it reads and that ends at once is heard. */
        if (r->exit_cpus && scope->taskstats)
                (void) exit_watch_start(&r->exit_watch, r->loop, r->exit_cpus, &r->exits);
        int err = recorder_take(r);
        if (err < 0) {
                recorder_stop(r);
                return err;
        }
        r->running = true;
        ev_timer_set(&r->tick, (double) r->period_ms / 1000.0, (double) r->period_ms / 1000.0);
        ev_timer_start(r->loop, &r->tick);
        return 0;
}

void recorder_forget_through(Recorder *r, const RecordedEntry *e) {
        size_t n = 0;

        while (n < r->n && entry(r, n) != e)
                n++;
        assert(n < r->n);
        for (size_t i = 0; i <= n; i++)
                drop_oldest(r);
        /* No entry left: no record is needed from before the next one. */
        if (r->n == 0)
                exit_records_clear(&r->exits);
}

void recorder_stop(Recorder *r) {
        ev_timer_stop(r->loop, &r->tick);
        exit_watch_stop(&r->exit_watch);
        r->running = false;
        r->n = r->oldest = 0;
        exit_records_clear(&r->exits);
}

RecordedEntry *recorder_find(Recorder *r, uint64_t start_mono_us) {
        RecordedEntry *best = NULL;

        if (r->n == 0)
                return NULL;
        exit_watch_drain(&r->exit_watch);
        for (size_t i = 0; i < r->n; i++)
                if (entry(r, i)->a.mono_us <= start_mono_us)
                        best = entry(r, i);
        return best ? best : entry(r, 0);
}

RecordedEntry *recorder_find_onset(Recorder *r, uint64_t start_mono_us, PsiResource resource, PsiStall stall,
                                   uint64_t now_total) {
        RecordedEntry *first = recorder_find(r, start_mono_us), *best = first;
        uint64_t base, t;
        size_t i = 0;

        if (!first || !snapshot_pressure_total(&first->a, resource, stall, &base) || now_total <= base)
                return first;
        while (entry(r, i) != first)
                i++;
        for (; i < r->n; i++) {
                RecordedEntry *e = entry(r, i);
                if (!snapshot_pressure_total(&e->a, resource, stall, &t))
                        break;
                if ((double) (t >= base ? t - base : 0) > RECORDER_ONSET_SHARE * (double) (now_total - base))
                        break;
                best = e;
        }
        return best;
}

bool recorder_growth(Recorder *r, PsiResource resource, PsiStall stall, uint64_t window_us, uint64_t *ret_growth,
                     uint64_t *ret_total) {
        RecordedEntry *newest, *from;
        uint64_t a, b;

        if (r->n < 2)
                return false;
        newest = entry(r, r->n - 1);
        from = recorder_find(r, newest->a.mono_us - MIN(newest->a.mono_us, window_us));
        if (from == newest || !snapshot_pressure_total(&from->a, resource, stall, &a) ||
            !snapshot_pressure_total(&newest->a, resource, stall, &b))
                return false;
        *ret_growth = b >= a ? b - a : 0;
        *ret_total = b;
        return true;
}

static bool same_path(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : !a && !b;
}

static bool same_culprit_scope(const CulpritScope *a, const CulpritScope *b) {
        if (!a || !b)
                return !a && !b;
        return a->resource == b->resource && a->node == b->node && a->same == b->same && strcmp(a->path, b->path) == 0;
}

bool recorder_matches(const Recorder *r, const SampleScope *scope, uint64_t wakeup_mono_us) {
        if (!r->running || r->n == 0)
                return false;
        /* The same cgroup, by its path: the directory may be another descriptor of it. */
        if ((r->scope.cgroup_fd < 0) != (scope->cgroup_fd < 0) ||
            !same_path(r->scope.cgroup_path, scope->cgroup_path) || r->scope.pid != scope->pid ||
            r->scope.resource != scope->resource)
                return false;
        if (!same_culprit_scope(r->scope.culprit, scope->culprit))
                return false;
        return entry((Recorder *) r, 0)->a.mono_us + RECORDER_PERIOD_MIN_MS * USEC_PER_MSEC / 2 <= wakeup_mono_us;
}

void recorder_free(Recorder *r) {
        recorder_stop(r);
        for (size_t i = 0; i < RECORDER_ENTRIES_MAX; i++) {
                snapshot_done(&r->ring[i].a);
                snapshot_done(&r->ring[i].ca);
                cgroup_usages_done(&r->ring[i].ga);
        }
        exit_records_done(&r->exits);
        free(r->readings);
        free(r->disks);
        free(r->disk_buf);
}
