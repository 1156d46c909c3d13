/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "sampling/blocked.h"

typedef struct Ref {
        const BlockedThreadLook *t;
        size_t look;
} Ref;

typedef struct Run {
        const char *wchan;
        WaitFor wait_for;
        size_t first, n; /* refs[first .. first+n) */
} Run;

static int cmp_pid_tid(const BlockedThreadLook *a, const BlockedThreadLook *b) {
        if (a->pid != b->pid)
                return a->pid < b->pid ? -1 : 1;
        if (a->tid != b->tid)
                return a->tid < b->tid ? -1 : 1;
        return 0;
}

static int cmp_wait(const char *wa, WaitFor fa, const char *wb, WaitFor fb) {
        int c = strncmp(wa, wb, BLOCKED_WCHAN_MAX);

        if (c != 0)
                return c;
        return fa < fb ? -1 : fa > fb;
}

/* wchan and what for, then pid and tid, then look: a wait's sightings are one run, a thread's a
 * run in it. */
static int cmp_ref(const void *x, const void *y) {
        const Ref *a = x, *b = y;
        int c = cmp_wait(a->t->wchan, a->t->wait_for, b->t->wchan, b->t->wait_for);

        if (c != 0)
                return c;
        c = cmp_pid_tid(a->t, b->t);
        if (c != 0)
                return c;
        return a->look < b->look ? -1 : a->look > b->look;
}

static int cmp_run(const void *x, const void *y) {
        const Run *a = x, *b = y;

        if (a->n != b->n)
                return a->n > b->n ? -1 : 1;
        return cmp_wait(a->wchan, a->wait_for, b->wchan, b->wait_for);
}

static int cmp_thread(const void *x, const void *y) {
        const BlockedThread *a = x, *b = y;

        if (a->seen != b->seen)
                return a->seen > b->seen ? -1 : 1;
        if (a->pid != b->pid)
                return a->pid < b->pid ? -1 : 1;
        return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static void copy_str(char *dst, const char *src, size_t size) {
        size_t n = strnlen(src, size - 1);
        memcpy(dst, src, n);
        dst[n] = '\0';
}

/* Fills g from the run of one wchan; threads is scratch room for run->n entries. */
static void fill_group(const Ref *refs, const Run *run, BlockedThread *threads, BlockedGroup *g) {
        size_t n = 0;

        *g = (BlockedGroup) { .seen = run->n, .wait_for = run->wait_for };
        copy_str(g->wchan, run->wchan, sizeof g->wchan);
        for (size_t i = run->first; i < run->first + run->n; i++) {
                const BlockedThreadLook *t = refs[i].t;

                if (n == 0 || threads[n - 1].pid != t->pid || threads[n - 1].tid != t->tid)
                        threads[n++] = (BlockedThread) { .pid = t->pid, .tid = t->tid, .blocked_ns = -1 };
                threads[n - 1].seen++;
                threads[n - 1].blocked_ns = MAX(threads[n - 1].blocked_ns, t->blocked_ns);
                /* Sorted by look within a thread: the last one wins. */
                copy_str(threads[n - 1].comm, t->comm, sizeof threads[n - 1].comm);
        }
        qsort(threads, n, sizeof *threads, cmp_thread);
        g->n_threads_total = n;
        g->n_threads = MIN(n, (size_t) BLOCKED_THREADS_PER_GROUP_MAX);
        memcpy(g->threads, threads, g->n_threads * sizeof *threads);
}

int blocked_group(const BlockedLook *looks, size_t n_looks, BlockedSummary *ret) {
        _cleanup_free_ Ref *refs = NULL;
        _cleanup_free_ Run *runs = NULL;
        _cleanup_free_ BlockedThread *scratch = NULL;
        BlockedSummary s = { .n_looks = n_looks };
        size_t n = 0, n_runs = 0;

        for (size_t l = 0; l < n_looks; l++)
                for (size_t i = 0; i < looks[l].n_threads; i++)
                        n += looks[l].threads[i].state == 'D';
        if (n > 0) {
                refs = calloc(n, sizeof *refs);
                runs = calloc(n, sizeof *runs);
                scratch = calloc(n, sizeof *scratch);
                if (!refs || !runs || !scratch)
                        return -ENOMEM;
        }
        n = 0;
        for (size_t l = 0; l < n_looks; l++)
                for (size_t i = 0; i < looks[l].n_threads; i++)
                        if (looks[l].threads[i].state == 'D')
                                refs[n++] = (Ref) { .t = &looks[l].threads[i], .look = l };
        if (n > 0)
                qsort(refs, n, sizeof *refs, cmp_ref);
        for (size_t i = 0; i < n; i++) {
                if (i == 0 ||
                    cmp_wait(refs[i].t->wchan, refs[i].t->wait_for, refs[i - 1].t->wchan, refs[i - 1].t->wait_for) != 0)
                        runs[n_runs++] =
                                (Run) { .wchan = refs[i].t->wchan, .wait_for = refs[i].t->wait_for, .first = i };
                runs[n_runs - 1].n++;
        }
        if (n_runs > 0)
                qsort(runs, n_runs, sizeof *runs, cmp_run);

        s.seen = n;
        s.n_groups_total = n_runs;
        for (size_t i = 0; i < n_runs; i++) {
                if (i < BLOCKED_GROUPS_MAX)
                        fill_group(refs, &runs[i], scratch, &s.groups[s.n_groups++]);
                else
                        s.other_seen += runs[i].n;
        }
        *ret = s;
        return 0;
}
