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

int ranking_reserve(Ranking *r, size_t n) {
        int k = array_reserve((void **) &r->threads, &r->cap_threads, n, sizeof *r->threads);

        return k < 0 ? k : array_reserve((void **) &r->procs, &r->cap_procs, n, sizeof *r->procs);
}

int ranking_build(Ranking *r, const Snapshot *a, const Snapshot *b, int resource) {
        uint64_t a_sec = a ? a->real_us / USEC_PER_SEC : 0;
        int k;

        r->n_threads = r->n_procs = 0;
        r->present = 0;
        r->exited = 0;

        k = array_reserve((void **) &r->threads, &r->cap_threads, b->n, sizeof *r->threads);
        if (k < 0)
                return k;

        for (size_t i = 0; i < b->n; i++) {
                const ThreadDelays *tb = &b->threads[i];
                const ThreadDelays *ta = a ? snapshot_find(a, tb->tid) : NULL;
                ThreadDelta *d = &r->threads[r->n_threads];

                /* Same tid but another begin time: the tid was reused by a new thread. The kernel
                 * derives ac_btime64 on every query as now - elapsed, in whole seconds
                 * (kernel/tsacct.c bacct_add_tsk), so one thread's value jitters by a second. */
                if (ta && ta->btime_s && tb->btime_s && btime_differs(ta->btime_s, tb->btime_s))
                        ta = NULL;
                if (a && !ta && tb->btime_s + BTIME_JITTER_S < a_sec)
                        continue;

                *d = (ThreadDelta) { .tid = tb->tid, .tgid = tb->tgid };
                memcpy(d->comm, tb->comm, sizeof d->comm);
                for (int j = 0; j < _TASK_DELAY_MAX; j++) {
                        uint64_t before = ta ? ta->delay_ns[j] : 0;

                        d->delay_ns[j] = tb->delay_ns[j] >= before ? tb->delay_ns[j] - before : 0;
                        d->total_ns += d->delay_ns[j];
                }
                d->score_ns = rank_score(d->delay_ns, resource);
                r->present |= tb->present;
                r->n_threads++;
        }
        for (size_t i = 0; a && i < a->n; i++)
                if (!snapshot_find(b, a->threads[i].tid))
                        r->exited++;

        /* qsort's array argument must not be NULL, even for zero elements. */
        if (r->n_threads > 0)
                qsort(r->threads, r->n_threads, sizeof *r->threads, cmp_thread);

        /* There are never more processes than threads. */
        k = array_reserve((void **) &r->procs, &r->cap_procs, r->n_threads, sizeof *r->procs);
        if (k < 0)
                return k;

        for (size_t i = 0; i < r->n_threads;) {
                ProcessDelta p = { .tgid = r->threads[i].tgid, .first = i };

                for (; i < r->n_threads && r->threads[i].tgid == p.tgid; i++) {
                        for (int j = 0; j < _TASK_DELAY_MAX; j++)
                                p.delay_ns[j] += r->threads[i].delay_ns[j];
                        p.n++;
                }
                p.score_ns = rank_score(p.delay_ns, resource);
                for (int j = 0; j < _TASK_DELAY_MAX; j++)
                        p.total_ns += p.delay_ns[j];
                /* A process that waited for nothing during the sample is not a suspect. */
                if (p.total_ns == 0)
                        continue;
                r->procs[r->n_procs++] = p;
        }
        if (r->n_procs > 0)
                qsort(r->procs, r->n_procs, sizeof *r->procs, cmp_process);
        return 0;
}

void ranking_done(Ranking *r) {
        free(r->threads);
        free(r->procs);
        *r = (Ranking) {};
}
