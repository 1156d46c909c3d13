/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/rank.h"
#include "triggers/trigger.h"

uint64_t rank_score(const uint64_t d[_TASK_DELAY_MAX], int resource) {
        uint64_t sum = 0;

        switch (resource) {
        case PSI_RESOURCE_CPU:
                return d[TASK_DELAY_CPU];
        case PSI_RESOURCE_MEMORY:
                return d[TASK_DELAY_RECLAIM] + d[TASK_DELAY_THRASHING] + d[TASK_DELAY_SWAPIN] + d[TASK_DELAY_COMPACT];
        case PSI_RESOURCE_IO:
                return d[TASK_DELAY_BLKIO];
        case PSI_RESOURCE_IRQ:
                return d[TASK_DELAY_IRQ];
        default:
                for (int i = 0; i < _TASK_DELAY_MAX; i++)
                        sum += d[i];
                return sum;
        }
}

#define BTIME_JITTER_S 1

static bool btime_differs(uint64_t a, uint64_t b) {
        return (a > b ? a - b : b - a) > BTIME_JITTER_S;
}

static int cmp_thread(const void *a, const void *b) {
        const ThreadDelta *x = a, *y = b;

        if (x->tgid != y->tgid)
                return (x->tgid > y->tgid) - (x->tgid < y->tgid);
        if (x->score_ns != y->score_ns)
                return x->score_ns < y->score_ns ? 1 : -1;
        if (x->total_ns != y->total_ns)
                return x->total_ns < y->total_ns ? 1 : -1;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_process(const void *a, const void *b) {
        const ProcessDelta *x = a, *y = b;

        if (x->score_ns != y->score_ns)
                return x->score_ns < y->score_ns ? 1 : -1;
        if (x->total_ns != y->total_ns)
                return x->total_ns < y->total_ns ? 1 : -1;
        return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

int ranking_reserve(Ranking *r, size_t n, size_t p) {
        int k = array_reserve((void **) &r->threads, &r->cap_threads, MIN(n, (size_t) SAMPLE_DETAIL_THREADS_MAX),
                              sizeof *r->threads);

        return k < 0 ? k : array_reserve((void **) &r->procs, &r->cap_procs, p, sizeof *r->procs);
}

#define UNSTARTED_SLACK_US USEC_PER_SEC

/* As many waits of at least lo as growth holds (none when lo is 0), each at most each (> 0):
 * returns how many, and *rest, the least growth they leave. */
static uint32_t waits_held(uint64_t growth, uint64_t lo, uint64_t each, uint64_t *rest) {
        uint64_t k = lo > 0 ? MIN(growth / lo, (uint64_t) UINT32_MAX - 1) : 0;

        *rest = k <= growth / each ? growth - k * each : 0;
        return (uint32_t) k;
}

/* Takes the blkio waits without a start out of *delta (Ranking.unstarted), each of which added the
 * time since boot at its end. The newest is max_b, the maximum at the window's end, when it is new
 * in it (above max_a, or no earlier reading) and between the times since boot of the window's
 * ends. The kernel ends a task's later waits from the same missing start until one is started
 * (kernel-facts.md: blkio-unstarted), so the growth can hold more, each between the window's start
 * and max_b: as many as what is left holds the window's start (real growth as large would take as
 * many threads waiting through the window as the window's start has seconds since boot). Only
 * their bounds are known, so what stays is the least real growth they leave. Without maxima (a
 * kernel before taskstats v15, such as Debian 13's 6.12 at v14) no wait is known by its size, and a
 * growth of at least the window's start is taken by the same bound. Returns the waits taken out;
 * *taken, their sum. */
static uint32_t unstarted_blkio(uint64_t *delta, uint64_t *taken, uint64_t max_b, bool has_a, uint64_t max_a,
                                usec_t a_mono, usec_t b_mono, bool maxima) {
        uint64_t lo = (a_mono > UNSTARTED_SLACK_US ? a_mono - UNSTARTED_SLACK_US : 0) * NSEC_PER_USEC,
                 hi = (b_mono + UNSTARTED_SLACK_US) * NSEC_PER_USEC, rest;
        uint32_t n;

        *taken = 0;
        if (!maxima)
                n = waits_held(*delta, lo, hi, &rest);
        else if (max_b == 0 || (has_a && max_b <= max_a) || max_b < lo || max_b > hi || *delta < max_b)
                return 0;
        else
                n = 1 + waits_held(*delta - max_b, lo, max_b, &rest);
        *taken = *delta - rest;
        *delta = rest;
        return n;
}

static void subtract(const uint64_t b[_TASK_DELAY_MAX], const uint64_t *a, uint64_t out[_TASK_DELAY_MAX],
                     uint64_t *total) {
        *total = 0;
        for (int j = 0; j < _TASK_DELAY_MAX; j++) {
                uint64_t before = a ? a[j] : 0;

                out[j] = b[j] >= before ? b[j] - before : 0;
                *total += out[j];
        }
}

int ranking_build(Ranking *r, const Snapshot *a, const Snapshot *b, int resource) {
        int k;

        r->n_threads = r->n_procs = 0;
        r->present = 0;
        r->unstarted = 0;
        bool maxima = snapshot_has_maxima(b);

        k = array_reserve((void **) &r->procs, &r->cap_procs, b->n_procs, sizeof *r->procs);
        if (k < 0)
                return k;
        for (size_t i = 0; i < b->n_procs; i++) {
                const ProcessDelays *pb = &b->procs[i];
                const ProcessDelays *pa = a ? snapshot_find_process(a, pb->tgid) : NULL;
                ProcessDelta *d = &r->procs[r->n_procs];

                if (a && !pa && pb->origin == PROCESS_MEASURED && !pb->born_in_sample)
                        continue;
                *d = (ProcessDelta) {
                        .tgid = pb->tgid,
                        .origin = pb->origin,
                        .ppid = pb->ppid,
                        .uid = pb->uid,
                };
                memcpy(d->comm, pb->comm, sizeof d->comm);
                subtract(pb->delay_ns, pa ? pa->delay_ns : NULL, d->delay_ns, &d->total_ns);
                uint64_t off = 0;
                if (a)
                        d->unstarted_waits =
                                unstarted_blkio(&d->delay_ns[TASK_DELAY_BLKIO], &off, pb->blkio_max_ns, pa != NULL,
                                                pa ? pa->blkio_max_ns : 0, a->mono_us, b->mono_us, maxima);
                d->total_ns -= off;
                d->unstarted_ns = off;
                r->unstarted += d->unstarted_waits;
                r->present |= pb->present;
                /* A process that waited for nothing during the sample is not a suspect. */
                if (d->total_ns == 0)
                        continue;
                d->score_ns = rank_score(d->delay_ns, resource);
                r->n_procs++;
        }
        if (r->n_procs > 0)
                qsort(r->procs, r->n_procs, sizeof *r->procs, cmp_process);
        return 0;
}

/* A maximum that grew between ta and tb was set in the window (a thread new in it: any maximum
 * it has); one that did not grow may be from before, and says nothing of the window, unless its
 * time (taskstats v17) lies in the incident's window, which can start before ta (since_ns: the
 * window's start, CLOCK_REALTIME ns; 0 none): a recorded window, or the sample's own A before the
 * middle the threads are measured from (kernel-facts.md: delay-maxima). */
static void worst_in_window(ThreadDelta *d, const ThreadDelays *t0, const ThreadDelays *t, uint64_t since_ns) {
        for (TaskDelay k = 0; k < _TASK_DELAY_MAX; k++) {
                uint32_t bit = TASK_DELAY_MASK(k);
                if (!(t->max_present & bit) || t->max_ns[k] == 0)
                        continue;
                bool stamped_inside = since_ns > 0 && (t->max_ts_present & bit) && t->max_ts_ns[k] >= since_ns;
                if (t0 && (!(t0->max_present & bit) || t->max_ns[k] <= t0->max_ns[k]) && !stamped_inside)
                        continue;
                d->worst_ns[k] = t->max_ns[k];
                d->worst_present |= bit;
                if ((t->max_ts_present & bit) && t->max_ts_ns[k] > 0) {
                        d->worst_at_ns[k] = t->max_ts_ns[k];
                        d->worst_at_present |= bit;
                }
        }
}

/* A thread's waits without a start are in its process's growth too. The process's own reply may
 * have shown some of them already (its TGID maximum is its last thread's): when its threads found
 * more, what they took beyond the process's own comes off it now. */
static void fix_process(Ranking *r, pid_t tgid, uint64_t off, uint32_t waits, int resource) {
        for (size_t j = 0; j < r->n_procs; j++) {
                ProcessDelta *p = &r->procs[j];
                if (p->tgid != tgid)
                        continue;
                p->threads_unstarted_ns += off;
                p->threads_unstarted_waits += waits;
                if (p->threads_unstarted_waits <= p->unstarted_waits)
                        return;
                if (p->threads_unstarted_ns > p->unstarted_ns) {
                        uint64_t extra = MIN(p->threads_unstarted_ns - p->unstarted_ns, p->delay_ns[TASK_DELAY_BLKIO]);
                        p->delay_ns[TASK_DELAY_BLKIO] -= extra;
                        p->total_ns -= extra;
                        p->score_ns = rank_score(p->delay_ns, resource);
                        p->unstarted_ns = p->threads_unstarted_ns;
                        r->resort = true;
                }
                r->unstarted += p->threads_unstarted_waits - p->unstarted_waits;
                p->unstarted_waits = p->threads_unstarted_waits;
                return;
        }
}

int ranking_add_threads(Ranking *r, const Snapshot *ta, const Snapshot *tb, int resource) {
        uint64_t a_sec = ta ? ta->real_us / USEC_PER_SEC : 0;
        bool maxima = snapshot_has_maxima(tb);
        int k;

        r->n_threads = 0;
        for (size_t i = 0; i < r->n_procs; i++)
                r->procs[i].first = r->procs[i].n = 0;
        k = array_reserve((void **) &r->threads, &r->cap_threads, tb->n, sizeof *r->threads);
        if (k < 0)
                return k;

        for (size_t i = 0; i < tb->n; i++) {
                const ThreadDelays *t = &tb->threads[i];
                const ThreadDelays *t0 = ta ? snapshot_find(ta, t->tid) : NULL;
                ThreadDelta *d = &r->threads[r->n_threads];

                /* Same tid but another begin time: the tid was reused by a new thread. The kernel
                 * derives ac_btime64 on every query as now - elapsed, in whole seconds
                 * (kernel/tsacct.c bacct_add_tsk), so one thread's value jitters by a second. */
                if (t0 && t0->btime_s && t->btime_s && btime_differs(t0->btime_s, t->btime_s))
                        t0 = NULL;
                if (ta && !t0 && t->btime_s + BTIME_JITTER_S < a_sec)
                        continue;
                *d = (ThreadDelta) { .tid = t->tid, .tgid = t->tgid };
                memcpy(d->comm, t->comm, sizeof d->comm);
                subtract(t->delay_ns, t0 ? t0->delay_ns : NULL, d->delay_ns, &d->total_ns);
                uint64_t off = 0;
                uint32_t waits =
                        ta ? unstarted_blkio(&d->delay_ns[TASK_DELAY_BLKIO], &off, thread_blkio_max(t), t0 != NULL,
                                             thread_blkio_max(t0), ta->mono_us, tb->mono_us, maxima)
                           : 0;
                d->total_ns -= off;
                if (waits > 0)
                        fix_process(r, t->tgid, off, waits, resource);
                d->score_ns = rank_score(d->delay_ns, resource);
                if (ta)
                        worst_in_window(d, t0, t, r->window_start_real_ns);
                for (TaskDelay c = 0; c < _TASK_DELAY_MAX; c++)
                        if ((t->max_present & t->max_ts_present & TASK_DELAY_MASK(c)) && t->max_ns[c] > 0 &&
                            t->max_ts_ns[c] > 0) {
                                d->max_ns[c] = t->max_ns[c];
                                d->max_at_ns[c] = t->max_ts_ns[c];
                                d->max_at_present |= TASK_DELAY_MASK(c);
                        }
                /* Its maximum is the wait without a start; its longest real one is not known. */
                if (waits > 0) {
                        d->worst_present &= ~TASK_DELAY_MASK(TASK_DELAY_BLKIO);
                        d->worst_at_present &= ~TASK_DELAY_MASK(TASK_DELAY_BLKIO);
                        d->max_at_present &= ~TASK_DELAY_MASK(TASK_DELAY_BLKIO);
                }
                r->n_threads++;
        }
        /* qsort's array argument must not be NULL, even for zero elements. */
        if (r->n_threads > 0)
                qsort(r->threads, r->n_threads, sizeof *r->threads, cmp_thread);

        /* A process whose growth its threads corrected may have moved down. */
        if (r->resort && r->n_procs > 0)
                qsort(r->procs, r->n_procs, sizeof *r->procs, cmp_process);
        r->resort = false;

        /* Threads are grouped by tgid: give each ranked process its run. */
        for (size_t i = 0; i < r->n_threads;) {
                pid_t tgid = r->threads[i].tgid;
                size_t first = i;

                while (i < r->n_threads && r->threads[i].tgid == tgid)
                        i++;
                for (size_t j = 0; j < r->n_procs; j++)
                        if (r->procs[j].tgid == tgid) {
                                r->procs[j].first = first;
                                r->procs[j].n = i - first;
                                break;
                        }
        }
        return 0;
}

const char *worst_when_to_string(WorstWhen w) {
        static const char *const names[_WORST_WHEN_MAX] = {
                [WORST_WINDOW] = "window",
                [WORST_TRIGGER_WINDOW] = "trigger_window",
                [WORST_BEFORE] = "before",
        };
        return w >= 0 && w < _WORST_WHEN_MAX ? names[w] : NULL;
}

/* The classes rank_score() sums for resource. */
static bool scored(TaskDelay c, int resource) {
        uint64_t one[_TASK_DELAY_MAX] = {};

        one[c] = 1;
        return rank_score(one, resource) > 0;
}

bool ranking_process_worst(const Ranking *r, const ProcessDelta *p, int resource, uint64_t window_start_ns,
                           uint64_t trigger_start_ns, ProcessWorst *ret) {
        uint64_t recent_from = trigger_start_ns > 0 ? MIN(trigger_start_ns, window_start_ns) : window_start_ns;
        ProcessWorst best = {}, old = {};
        bool has_best = false, has_old = false;

        for (size_t i = 0; i < p->n; i++) {
                const ThreadDelta *t = &r->threads[p->first + i];

                for (TaskDelay c = 0; c < _TASK_DELAY_MAX; c++) {
                        ProcessWorst w = { .delay = c, .tid = t->tid, .ns = t->max_ns[c], .at_ns = t->max_at_ns[c] };

                        if (!(t->max_at_present & TASK_DELAY_MASK(c)) || !scored(c, resource))
                                continue;
                        if (w.at_ns >= window_start_ns)
                                w.when = WORST_WINDOW;
                        else if (w.at_ns >= recent_from)
                                w.when = WORST_TRIGGER_WINDOW;
                        else
                                w.when = WORST_BEFORE;
                        if (w.when != WORST_BEFORE) {
                                if (!has_best || w.ns > best.ns)
                                        best = w;
                                has_best = true;
                        } else {
                                if (!has_old || w.ns > old.ns)
                                        old = w;
                                has_old = true;
                        }
                }
        }
        if (!has_best && !has_old)
                return false;
        *ret = has_best ? best : old;
        return true;
}

size_t ranking_top_pids(const Ranking *r, size_t n, pid_t *pids) {
        size_t k = MIN(n, r->n_procs);

        for (size_t i = 0; i < k; i++)
                pids[i] = r->procs[i].tgid;
        return k;
}

void ranking_done(Ranking *r) {
        free(r->threads);
        free(r->procs);
        *r = (Ranking) {};
}

static bool blocked_counts(int resource) {
        return resource == PSI_RESOURCE_IO || resource == PSI_RESOURCE_MEMORY || resource == RANK_SCORE_ALL;
}

int ranking_add_blocked(Ranking *r, const BlockedThreadLook *threads, size_t n, int resource) {
        bool counts = blocked_counts(resource), changed = false;

        for (size_t i = 0; i < n; i++) {
                const BlockedThreadLook *t = &threads[i];
                ProcessDelta *p = NULL;

                /* A wait known to be for the other of io and memory is not this stall's
                 * (sampling/waitfor.h): not blocked on it, not even noted. */
                if (t->state != 'D' || t->blocked_ns <= 0 || !waitfor_counts_for(t->wait_for, resource))
                        continue;
                for (size_t j = 0; j < r->n_procs && !p; j++)
                        if (r->procs[j].tgid == t->pid && r->procs[j].origin == PROCESS_MEASURED)
                                p = &r->procs[j];
                if (!p) {
                        if (!counts)
                                continue;
                        int k = array_reserve((void **) &r->procs, &r->cap_procs, r->n_procs + 1, sizeof *r->procs);
                        if (k < 0)
                                return k;
                        p = &r->procs[r->n_procs++];
                        *p = (ProcessDelta) { .tgid = t->pid, .origin = PROCESS_MEASURED, .uid = -1 };
                }
                if ((uint64_t) t->blocked_ns > p->blocked_ns) {
                        if (counts)
                                p->score_ns += (uint64_t) t->blocked_ns - p->blocked_ns;
                        p->blocked_ns = (uint64_t) t->blocked_ns;
                        p->blocked_tid = t->tid;
                        changed = true;
                }
        }
        if (counts && changed)
                qsort(r->procs, r->n_procs, sizeof *r->procs, cmp_process);
        return 0;
}
