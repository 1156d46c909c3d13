/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/exits.h"

static void record_from(ExitRecord *x, const TaskStats *ts, bool process) {
        *x = (ExitRecord) {
                .t = {
                        .tid = ts->pid,
                        .tgid = ts->tgid, /* 0 before taskstats v12: unknown */
                        .btime_s = ts->btime_s,
                        .present = ts->present,
                },
                .ppid = ts->ppid,
                .uid = ts->uid,
                .cpu_run_ns = ts->cpu_run_ns,
                .has_cpu_run = ts->has_cpu_run,
                .process = process,
                /* The kernel's KiB (xacct_add_tsk() in kernel/tsacct.c). */
                .hiwater_rss_bytes = ts->has_hiwater_rss ? ts->hiwater_rss_kib * 1024 : 0,
                .has_hiwater_rss = ts->has_hiwater_rss && !process,
                .read_bytes = ts->read_bytes,
                .write_bytes = ts->write_bytes,
                .has_io = ts->has_io && !process,
        };
        memcpy(x->t.delay_ns, ts->delay_ns, sizeof x->t.delay_ns);
        memcpy(x->t.comm, ts->comm, sizeof x->t.comm);
        thread_maxima_from(&x->t, ts);
}

int exit_records_add(ExitRecords *e, const TaskStats *thread, const TaskStats *process) {
        for (int k = 0; k < (process ? 2 : 1); k++) {
                if (array_grow((void **) &e->items, &e->cap, e->n, 64, sizeof *e->items) < 0)
                        return -ENOMEM;
                record_from(&e->items[e->n++], k == 0 ? thread : process, k == 1);
        }
        return 0;
}

void exit_records_collect(const TaskStats *thread, const TaskStats *process, void *userdata) {
        ExitRecords *e = userdata;

        if (exit_records_add(e, thread, process) < 0)
                e->lost++;
}

void exit_records_clear(ExitRecords *e) {
        e->n = 0;
        e->lost = 0;
}

void exit_records_drop_front(ExitRecords *e, size_t n) {
        n = MIN(n, e->n);
        if (n == 0)
                return;
        memmove(e->items, e->items + n, (e->n - n) * sizeof *e->items);
        e->n -= n;
}

int exit_records_append(ExitRecords *dst, const ExitRecords *src, size_t from) {
        dst->lost += src->lost;
        for (size_t i = from; i < src->n; i++) {
                if (array_grow((void **) &dst->items, &dst->cap, dst->n, 64, sizeof *dst->items) < 0) {
                        dst->lost += (unsigned) (src->n - i);
                        return -ENOMEM;
                }
                dst->items[dst->n++] = src->items[i];
        }
        return 0;
}

void exit_records_done(ExitRecords *e) {
        free(e->items);
        free(e->finals);
        free(e->threads);
        *e = (ExitRecords) {};
}

/* Whether x is the best record of its process's end seen so far against best: the aggregate
 * beats the leader's own record (see exit_records_find_process). */
static bool better_final(const ExitRecord *x, const ExitRecord *best) {
        if (x->process)
                return !best || !best->process;
        return x->t.tid == x->t.tgid && !best;
}

const ExitRecord *exit_records_find_process(const ExitRecords *e, pid_t tgid) {
        const ExitRecord *best = NULL;

        for (size_t i = 0; i < e->n; i++)
                if (tgid > 0 && e->items[i].t.tgid == tgid && better_final(&e->items[i], best))
                        best = &e->items[i];
        return best;
}

static int cmp_record_tgid(const void *a, const void *b) {
        const ExitRecord *x = *(const ExitRecord *const *) a, *y = *(const ExitRecord *const *) b;

        if (x->t.tgid != y->t.tgid)
                return (x->t.tgid > y->t.tgid) - (x->t.tgid < y->t.tgid);
        return (x > y) - (x < y); /* arrival order */
}

/* e->finals: the final record of every process that ended, sorted by tgid. 0 or -ENOMEM. */
static int index_finals(ExitRecords *e) {
        size_t n = 0;

        e->n_finals = 0;
        if (array_reserve((void **) &e->finals, &e->cap_finals, e->n, sizeof *e->finals) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < e->n; i++)
                if (e->items[i].t.tgid > 0 && (e->items[i].process || e->items[i].t.tid == e->items[i].t.tgid))
                        e->finals[n++] = &e->items[i];
        if (n > 0)
                qsort(e->finals, n, sizeof *e->finals, cmp_record_tgid);
        /* One per process: the best of each run of equal tgids. */
        for (size_t i = 0; i < n;) {
                const ExitRecord *best = NULL;
                pid_t tgid = e->finals[i]->t.tgid;

                for (; i < n && e->finals[i]->t.tgid == tgid; i++)
                        if (better_final(e->finals[i], best))
                                best = e->finals[i];
                e->finals[e->n_finals++] = best;
        }
        return 0;
}

/* e->threads: every thread record of a known process, sorted by tgid. 0 or -ENOMEM. */
static int index_threads(ExitRecords *e) {
        e->n_threads = 0;
        if (array_reserve((void **) &e->threads, &e->cap_threads, e->n, sizeof *e->threads) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < e->n; i++)
                if (!e->items[i].process && e->items[i].t.tgid > 0)
                        e->threads[e->n_threads++] = &e->items[i];
        if (e->n_threads > 0)
                qsort(e->threads, e->n_threads, sizeof *e->threads, cmp_record_tgid);
        return 0;
}

/* What the thread records of process tgid say of its last use: io summed, the high-water mark of
 * its address space (the same mm for every thread; the largest, since a thread that ends after the
 * mm is gone reads 0). And its name: the final record's comm is the last thread's (a killed
 * redis-server read as its bio_aof_fsync thread), so the leader thread's own record, when heard,
 * names the process. */
static void last_use(const ExitRecords *e, pid_t tgid, ProcessDelays *p) {
        size_t lo = 0, hi = e->n_threads;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (e->threads[mid]->t.tgid < tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo; i < e->n_threads && e->threads[i]->t.tgid == tgid; i++) {
                const ExitRecord *x = e->threads[i];
                if (x->t.tid == tgid && x->t.comm[0])
                        memcpy(p->comm, x->t.comm, sizeof p->comm);
                if (x->has_io) {
                        p->read_bytes += x->read_bytes;
                        p->write_bytes += x->write_bytes;
                        p->has_io = true;
                }
                if (x->has_hiwater_rss) {
                        p->rss_bytes = p->rss_bytes > x->hiwater_rss_bytes ? p->rss_bytes : x->hiwater_rss_bytes;
                        p->has_mem = true;
                }
        }
}

static const ExitRecord *find_final(const ExitRecords *e, pid_t tgid) {
        size_t lo = 0, hi = e->n_finals;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (e->finals[mid]->t.tgid < tgid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < e->n_finals && e->finals[lo]->t.tgid == tgid ? e->finals[lo] : NULL;
}

static int append_process(Snapshot *b, const ExitRecords *e, const ExitRecord *x, ProcessOrigin origin) {
        ProcessDelays p = {
                .tgid = x->t.tgid,
                .ppid = x->ppid,
                .uid = x->uid,
                .origin = origin,
                .present = x->t.present,
                .cpu_run_ns = x->cpu_run_ns,
                .has_cpu_run = x->has_cpu_run,
                .blkio_max_ns = thread_blkio_max(&x->t),
        };

        memcpy(p.delay_ns, x->t.delay_ns, sizeof p.delay_ns);
        memcpy(p.comm, x->t.comm, sizeof p.comm);
        last_use(e, x->t.tgid, &p);
        return snapshot_append_process(b, &p);
}

/* tgid is a process of a, or of the first n (sorted) of b's. */
static bool in_sample_n(const Snapshot *b, size_t n, const Snapshot *a, pid_t tgid) {
        return snapshot_find_process_n(b, n, tgid) || snapshot_find_process(a, tgid);
}

static bool in_sample(const Snapshot *b, const Snapshot *a, pid_t tgid) {
        return in_sample_n(b, b->n_procs, a, tgid);
}

/* Records whose process started and ended inside the sample, placed by their parents: a pass
 * per generation (a child's record comes before its parent's when both end in the sample), at
 * most this many generations deep. */
#define SHORT_GENERATIONS_MAX 16

/* b's counts of what was heard cleared; e's records indexed by process and thread. Before taskstats
 * v12 a record has no tgid: only one whose task was a process of a is known to be that process's
 * (its leader's, its only thread's for most); the others cannot be placed and are left out. */
static int merge_begin(Snapshot *b, const Snapshot *a, ExitRecords *e, bool listening) {
        int r;

        b->has_exit_listener = listening;
        b->lost_exit_records = e->lost;
        b->exit_records = b->ended_unheard = b->unattributed = 0;
        memset(b->unattributed_ns, 0, sizeof b->unattributed_ns);
        b->unattributed_present = 0;
        for (size_t i = 0; i < e->n; i++)
                if (e->items[i].t.tgid <= 0 && snapshot_find_process(a, e->items[i].t.tid))
                        e->items[i].t.tgid = e->items[i].t.tid;
        r = index_finals(e);
        return r < 0 ? r : index_threads(e);
}

/* Processes of a that ended: their final records, or counted as ended unheard. */
static int merge_ended(Snapshot *b, const Snapshot *a, ExitRecords *e) {
        size_t n_procs = b->n_procs;
        int r;

        for (size_t i = 0; i < a->n_procs; i++) {
                const ProcessDelays *pa = &a->procs[i];
                const ExitRecord *x;

                if (snapshot_find_process_n(b, n_procs, pa->tgid))
                        continue;
                x = find_final(e, pa->tgid);
                if (!x) {
                        b->ended_unheard++;
                        continue;
                }
                r = append_process(b, e, x, PROCESS_ENDED);
                if (r < 0)
                        return r;
        }
        snapshot_sort(b);
        return 0;
}

/* Processes that started and ended inside the sample, a generation per pass; the records no
 * process of the sample fathered are counted as unattributed. */
static int merge_short(Snapshot *b, const Snapshot *a, ExitRecords *e) {
        int r;

        for (unsigned gen = 0; gen < SHORT_GENERATIONS_MAX; gen++) {
                size_t before = b->n_procs;

                for (size_t i = 0; i < e->n_finals; i++) {
                        const ExitRecord *x = e->finals[i];

                        /* Searched among the sorted ones: those placed in this pass are found in
                         * the next, with their own children. */
                        if (in_sample_n(b, before, a, x->t.tgid) || x->ppid <= 0 || !in_sample_n(b, before, a, x->ppid))
                                continue;
                        r = append_process(b, e, x, PROCESS_SHORT);
                        if (r < 0)
                                return r;
                }
                snapshot_sort(b);
                if (b->n_procs == before)
                        break;
        }
        for (size_t i = 0; i < e->n_finals; i++) {
                const ExitRecord *x = e->finals[i];

                if (in_sample(b, a, x->t.tgid))
                        continue;
                b->unattributed++;
                b->unattributed_present |= x->t.present;
                for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                        b->unattributed_ns[d] += x->t.delay_ns[d];
        }
        return 0;
}

/* Detailed threads that ended between the thread base and b (the first n_threads of b's). */
static int merge_threads(Snapshot *b, const Snapshot *threads_base, const ExitRecords *e, size_t n_threads) {
        int r;

        for (size_t i = 0; threads_base && i < e->n; i++) {
                const ExitRecord *x = &e->items[i];
                const ThreadDelays *ta;

                if (x->process || !(ta = snapshot_find(threads_base, x->t.tid)))
                        continue;
                /* Its tid was reused (begin times a second apart at most: the kernel recomputes
                 * them on every query), or it is still in b: b has newer counters. */
                if (ta->btime_s && x->t.btime_s &&
                    (ta->btime_s > x->t.btime_s ? ta->btime_s - x->t.btime_s : x->t.btime_s - ta->btime_s) > 1)
                        continue;
                if (snapshot_find_n(b, n_threads, x->t.tid))
                        continue;
                r = snapshot_append_thread(b, &x->t);
                if (r < 0)
                        return r;
        }
        if (b->n > n_threads)
                snapshot_sort(b);
        return 0;
}

int snapshot_merge_exits(Snapshot *b, const Snapshot *a, const Snapshot *threads_base, ExitRecords *e) {
        static ExitRecords none;
        size_t n_threads = b->n;
        bool listening = e != NULL;
        int r;

        if (!e)
                e = &none; /* nothing heard: the processes of a that b lacks are counted */
        r = merge_begin(b, a, e, listening);
        if (r >= 0)
                r = merge_ended(b, a, e);
        if (r >= 0)
                r = merge_short(b, a, e);
        if (r < 0)
                return r;
        /* The subtree's threads that ended: every thread record of a process of the sample. */
        for (size_t i = 0; i < e->n; i++)
                if (!e->items[i].process && in_sample(b, a, e->items[i].t.tgid))
                        b->exit_records++;
        return merge_threads(b, threads_base, e, n_threads);
}

bool exit_records_delays(const ExitRecords *e, pid_t pid, uint64_t ret_ns[_TASK_DELAY_MAX], uint32_t *ret_present) {
        const ExitRecord *whole = NULL;
        uint64_t sum[_TASK_DELAY_MAX] = {};
        uint32_t present = 0;
        bool found = false;

        for (size_t i = 0; i < e->n; i++) {
                const ExitRecord *x = &e->items[i];
                /* Before taskstats v12 a record has no tgid: the victim's own thread is known. */
                if (x->t.tgid != pid && !(x->t.tgid <= 0 && x->t.tid == pid))
                        continue;
                if (x->process) {
                        whole = x;
                        continue;
                }
                found = true;
                present |= x->t.present;
                for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                        sum[d] += x->t.delay_ns[d];
        }
        /* The aggregate has the threads that ended before the listener was on, too. */
        if (whole) {
                memcpy(ret_ns, whole->t.delay_ns, sizeof whole->t.delay_ns);
                *ret_present = whole->t.present;
                return true;
        }
        if (found) { /* the outputs are left alone otherwise */
                memcpy(ret_ns, sum, sizeof sum);
                *ret_present = present;
        }
        return found;
}
