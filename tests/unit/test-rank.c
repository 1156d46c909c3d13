/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "sampling/rank.h"
#include "tests/unit/test-util.h"
#include "triggers/trigger.h"

/* A thread of tgid (detail), also summed into its process, as a TGID reply sums the live threads. */
static void add(Snapshot *s, pid_t tid, pid_t tgid, const char *comm, uint64_t btime, uint64_t cpu, uint64_t blkio,
                uint64_t reclaim, uint64_t thrashing) {
        ThreadDelays *t;
        ProcessDelays *p = NULL;

        if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 8;
                s->threads = realloc(s->threads, s->cap * sizeof *s->threads);
        }
        t = &s->threads[s->n++];
        *t = (ThreadDelays) { .tid = tid, .tgid = tgid, .btime_s = btime, .present = TASK_DELAY_ALL };
        strcpy(t->comm, comm);
        t->delay_ns[TASK_DELAY_CPU] = cpu;
        t->delay_ns[TASK_DELAY_BLKIO] = blkio;
        t->delay_ns[TASK_DELAY_RECLAIM] = reclaim;
        t->delay_ns[TASK_DELAY_THRASHING] = thrashing;

        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].tgid == tgid)
                        p = &s->procs[i];
        if (!p) {
                if (s->n_procs == s->cap_procs) {
                        s->cap_procs = s->cap_procs ? s->cap_procs * 2 : 8;
                        s->procs = realloc(s->procs, s->cap_procs * sizeof *s->procs);
                }
                p = &s->procs[s->n_procs++];
                *p = (ProcessDelays) { .tgid = tgid, .uid = -1, .present = TASK_DELAY_ALL };
        }
        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                p->delay_ns[d] += t->delay_ns[d];
}

/* The order the snapshot keeps (threads by tid, processes by tgid, for lookups). */
static int cmp_t(const void *a, const void *b) {
        return ((const ThreadDelays *) a)->tid - ((const ThreadDelays *) b)->tid;
}
static int cmp_p(const void *a, const void *b) {
        return ((const ProcessDelays *) a)->tgid - ((const ProcessDelays *) b)->tgid;
}
static void done_adding(Snapshot *s) {
        qsort(s->threads, s->n, sizeof *s->threads, cmp_t);
        qsort(s->procs, s->n_procs, sizeof *s->procs, cmp_p);
}

static ProcessDelays *proc_of(Snapshot *s, pid_t tgid) {
        for (size_t i = 0; i < s->n_procs; i++)
                if (s->procs[i].tgid == tgid)
                        return &s->procs[i];
        abort(); /* a test that names a process it did not add */
}

static void free_snapshot(Snapshot *s) {
        free(s->threads);
        free(s->procs);
}

/* A: at t=2000 s. Spinner process 10 (threads 10, 11), reader 20, thrasher 30, sleeper 40,
 * idle 50, process 60 that ends, process 70 whose pid is reused by a new process in B. */
static void make_pair(Snapshot *a, Snapshot *b) {
        *a = (Snapshot) { .real_us = 2000 * USEC_PER_SEC };
        *b = (Snapshot) { .real_us = 2001 * USEC_PER_SEC };
        add(a, 10, 10, "spin", 1000, 100 * NS_PER_MS, 0, 0, 0);
        add(a, 11, 10, "spin-w", 1000, 100 * NS_PER_MS, 0, 0, 0);
        add(a, 20, 20, "reader", 1000, 1 * NS_PER_MS, 500 * NS_PER_MS, 0, 0);
        add(a, 30, 30, "thrash", 1000, 0, 0, 10 * NS_PER_MS, 10 * NS_PER_MS);
        add(a, 40, 40, "sleeper", 1000, 5 * NS_PER_MS, 0, 0, 0);
        add(a, 50, 50, "idle", 1000, 7 * NS_PER_MS, 0, 0, 0);
        add(a, 60, 60, "gone", 1000, 1 * NS_PER_MS, 0, 0, 0);
        add(a, 70, 70, "old", 1000, 900 * NS_PER_MS, 0, 0, 0);

        add(b, 10, 10, "spin", 1000, 700 * NS_PER_MS, 0, 0, 0);                 /* +600 */
        add(b, 11, 10, "spin-w", 1000, 500 * NS_PER_MS, 0, 0, 0);               /* +400 */
        add(b, 20, 20, "reader", 1000, 2 * NS_PER_MS, 900 * NS_PER_MS, 0, 0);   /* cpu +1, blkio +400 */
        add(b, 30, 30, "thrash", 1000, 0, 0, 210 * NS_PER_MS, 110 * NS_PER_MS); /* reclaim +200, thrashing +100 */
        add(b, 40, 40, "sleeper", 1000, 6 * NS_PER_MS, 0, 0, 0);                /* +1 */
        add(b, 50, 50, "idle", 1000, 7 * NS_PER_MS, 0, 0, 0);                   /* +0 */
        add(b, 70, 70, "new", 2000, 3 * NS_PER_MS, 0, 0, 0);                    /* counters went back: counts as 0 */
        add(b, 80, 80, "born", 2000, 2 * NS_PER_MS, 0, 0, 0);                   /* born during the sample */
        add(b, 90, 90, "moved", 1500, 999 * NS_PER_MS, 0, 0, 0);                /* moved in; old totals do not count */
        done_adding(a);
        done_adding(b);
        proc_of(b, 80)->born_in_sample = true;
}

static void test_cpu_ranking(void **state) {
        Snapshot a, b;
        Ranking r = {};

        make_pair(&a, &b);
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);

        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[0].score_ns, 1000 * NS_PER_MS);
        assert_int_equal(r.procs[0].n, 0); /* no threads until they are attached */
        assert_int_equal(r.procs[1].tgid, 80);
        assert_int_equal(r.procs[1].score_ns, 2 * NS_PER_MS);
        /* Ties on score broken by total delay: reader (cpu 1 + blkio 400) before sleeper (1). */
        assert_int_equal(r.procs[2].tgid, 20);
        assert_int_equal(r.procs[3].tgid, 40);
        assert_int_equal(r.procs[4].tgid, 30); /* score 0, total 300 ms */
        /* idle (no delay in the sample), the reused pid 70 and moved-in 90 are not suspects. */
        assert_int_equal(r.n_procs, 5);
        for (size_t i = 0; i < r.n_procs; i++) {
                assert_int_not_equal(r.procs[i].tgid, 50);
                assert_int_not_equal(r.procs[i].tgid, 70);
                assert_int_not_equal(r.procs[i].tgid, 90);
        }
        assert_int_equal(r.present, TASK_DELAY_ALL);

        /* The leaders' threads, over the same pair: highest first, summing to the process. */
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.procs[0].n, 2);
        assert_int_equal(r.threads[r.procs[0].first].tid, 10);
        assert_int_equal(r.threads[r.procs[0].first].score_ns, 600 * NS_PER_MS);
        assert_int_equal(r.threads[r.procs[0].first + 1].tid, 11);
        assert_int_equal(r.threads[r.procs[0].first + 1].score_ns, 400 * NS_PER_MS);
        assert_int_equal(r.procs[1].n, 1);
        assert_int_equal(r.threads[r.procs[1].first].tid, 80);
        /* Thread 70 is a new thread on a reused tid (another begin time): all 3 ms are its own;
         * its process is not ranked, so it is attached to none. */
        for (size_t i = 0; i < r.n_procs; i++)
                for (size_t k = 0; k < r.procs[i].n; k++)
                        assert_int_not_equal(r.threads[r.procs[i].first + k].tid, 70);

        size_t k;
        pid_t top[3];
        k = ranking_top_pids(&r, 3, top);
        assert_int_equal(k, 3);
        assert_int_equal(top[0], 10);
        assert_int_equal(top[1], 80);
        assert_int_equal(top[2], 20);

        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

static void test_memory_io_all(void **state) {
        Snapshot a, b;
        Ranking r = {};

        make_pair(&a, &b);
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_MEMORY), 0);
        assert_int_equal(r.procs[0].tgid, 30);
        assert_int_equal(r.procs[0].score_ns, 300 * NS_PER_MS);
        assert_int_equal(r.procs[0].delay_ns[TASK_DELAY_RECLAIM], 200 * NS_PER_MS);

        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.procs[0].tgid, 20);
        assert_int_equal(r.procs[0].score_ns, 400 * NS_PER_MS);

        assert_int_equal(ranking_build(&r, &a, &b, RANK_SCORE_ALL), 0);
        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[1].tgid, 20);
        assert_int_equal(r.procs[1].score_ns, 401 * NS_PER_MS);
        assert_int_equal(r.procs[2].tgid, 30);

        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

static void test_counter_going_backwards(void **state) {
        Snapshot a = { .real_us = 10 * USEC_PER_SEC }, b = { .real_us = 11 * USEC_PER_SEC };
        Ranking r = {};

        add(&a, 5, 5, "w", 1, 500 * NS_PER_MS, 0, 0, 0);
        add(&b, 5, 5, "w", 1, 100 * NS_PER_MS, 1 * NS_PER_MS, 0, 0);
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 1);
        assert_int_equal(r.procs[0].delay_ns[TASK_DELAY_CPU], 0);
        assert_int_equal(r.procs[0].delay_ns[TASK_DELAY_BLKIO], 1 * NS_PER_MS);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* Processes that ended (exit records) rank with their final counters and keep what the record
 * said of them; one that started and ended inside the sample counts whole. */
static void test_ended_processes(void **state) {
        Snapshot a = { .real_us = 10 * USEC_PER_SEC }, b = { .real_us = 11 * USEC_PER_SEC };
        Ranking r = {};

        add(&a, 5, 5, "w", 1, 100 * NS_PER_MS, 0, 0, 0);
        add(&b, 5, 5, "w", 1, 400 * NS_PER_MS, 0, 0, 0);
        add(&b, 7, 7, "gzip", 10, 50 * NS_PER_MS, 0, 0, 0);
        done_adding(&a);
        done_adding(&b);
        ProcessDelays *p = proc_of(&b, 7);
        p->origin = PROCESS_SHORT;
        p->ppid = 5;
        p->uid = 1000;
        strcpy(p->comm, "gzip");
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.procs[1].tgid, 7);
        assert_int_equal(r.procs[1].score_ns, 50 * NS_PER_MS);
        assert_int_equal(r.procs[1].origin, PROCESS_SHORT);
        assert_int_equal(r.procs[1].ppid, 5);
        assert_int_equal(r.procs[1].uid, 1000);
        assert_string_equal(r.procs[1].comm, "gzip");
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* ac_btime64 is recomputed per query (now - elapsed) and jitters by a second: the same thread
 * must still be matched, and its delta counted. A real tid reuse differs by more. */
static void test_btime_jitter(void **state) {
        Snapshot a = { .real_us = 5000 * USEC_PER_SEC }, b = { .real_us = 5001 * USEC_PER_SEC };
        Ranking r = {};

        add(&a, 5, 5, "spin", 4000, 100 * NS_PER_MS, 0, 0, 0);
        add(&a, 6, 5, "spin", 4001, 100 * NS_PER_MS, 0, 0, 0);
        add(&b, 5, 5, "spin", 4001, 300 * NS_PER_MS, 0, 0, 0);
        add(&b, 6, 5, "spin", 4000, 150 * NS_PER_MS, 0, 0, 0);
        add(&b, 7, 5, "young", 4999, 9 * NS_PER_MS, 0, 0, 0); /* only in b, began a second before a */
        add(&b, 8, 5, "older", 4990, 5 * NS_PER_MS, 0, 0, 0); /* only in b, began well before a: left out */
        done_adding(&a);
        done_adding(&b);
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 1);
        assert_int_equal(r.procs[0].n, 3);
        assert_int_equal(r.threads[r.procs[0].first].tid, 5);
        assert_int_equal(r.threads[r.procs[0].first].score_ns, 200 * NS_PER_MS);
        assert_int_equal(r.threads[r.procs[0].first + 1].tid, 6);
        assert_int_equal(r.threads[r.procs[0].first + 1].score_ns, 50 * NS_PER_MS);
        assert_int_equal(r.threads[r.procs[0].first + 2].tid, 7);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

static void set_max(Snapshot *s, pid_t tid, TaskDelay k, uint64_t max_ns, uint64_t ts_ns) {
        for (size_t i = 0; i < s->n; i++)
                if (s->threads[i].tid == tid) {
                        s->threads[i].max_present |= TASK_DELAY_MASK(k);
                        s->threads[i].max_ns[k] = max_ns;
                        if (ts_ns) {
                                s->threads[i].max_ts_present |= TASK_DELAY_MASK(k);
                                s->threads[i].max_ts_ns[k] = ts_ns;
                        }
                }
}

/* The worst single delay is the window's only where the thread's maximum grew in it. */
static void test_worst_in_window(void **state) {
        Snapshot a = { .real_us = 5000 * USEC_PER_SEC }, b = { .real_us = 5001 * USEC_PER_SEC };
        Ranking r = {};

        add(&a, 5, 5, "grew", 4000, 100 * NS_PER_MS, 10 * NS_PER_MS, 0, 0);
        add(&a, 6, 5, "same", 4000, 100 * NS_PER_MS, 0, 0, 0);
        add(&b, 5, 5, "grew", 4000, 300 * NS_PER_MS, 20 * NS_PER_MS, 0, 0);
        add(&b, 6, 5, "same", 4000, 150 * NS_PER_MS, 0, 0, 0);
        add(&b, 7, 5, "new", 5000, 9 * NS_PER_MS, 0, 0, 0); /* born in the window */
        add(&b, 8, 5, "nomax", 4000, 9 * NS_PER_MS, 0, 0, 0);
        add(&a, 8, 5, "nomax", 4000, 1 * NS_PER_MS, 0, 0, 0);
        done_adding(&a);
        done_adding(&b);
        set_max(&a, 5, TASK_DELAY_CPU, 20 * NS_PER_MS, 0);
        set_max(&b, 5, TASK_DELAY_CPU, 60 * NS_PER_MS, 4999999999000000000ULL); /* rose: the window's */
        set_max(&a, 5, TASK_DELAY_BLKIO, 5 * NS_PER_MS, 0);
        set_max(&b, 5, TASK_DELAY_BLKIO, 5 * NS_PER_MS, 0); /* did not: maybe from before */
        set_max(&a, 6, TASK_DELAY_CPU, 40 * NS_PER_MS, 0);
        set_max(&b, 6, TASK_DELAY_CPU, 40 * NS_PER_MS, 0);
        set_max(&b, 7, TASK_DELAY_CPU, 3 * NS_PER_MS, 0);
        set_max(&b, 8, TASK_DELAY_CPU, 2 * NS_PER_MS, 0); /* a had none (an older kernel's reply) */
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        for (size_t i = 0; i < r.n_threads; i++) {
                const ThreadDelta *t = &r.threads[i];
                switch (t->tid) {
                case 5:
                        assert_int_equal(t->worst_present, TASK_DELAY_MASK(TASK_DELAY_CPU));
                        assert_int_equal(t->worst_ns[TASK_DELAY_CPU], 60 * NS_PER_MS);
                        assert_int_equal(t->worst_at_present, TASK_DELAY_MASK(TASK_DELAY_CPU));
                        assert_int_equal(t->worst_at_ns[TASK_DELAY_CPU], 4999999999000000000ULL);
                        break;
                case 7:
                        assert_int_equal(t->worst_ns[TASK_DELAY_CPU], 3 * NS_PER_MS);
                        assert_int_equal(t->worst_at_present, 0);
                        break;
                default:
                        assert_int_equal(t->worst_present, 0);
                }
        }
        /* taskstats v17: a maximum that did not grow since the threads' base but whose time lies in
         * the incident's window (which started before the base) is the window's; one stamped before
         * it is not. */
        set_max(&a, 6, TASK_DELAY_CPU, 40 * NS_PER_MS, 4999000000000000000ULL);
        set_max(&b, 6, TASK_DELAY_CPU, 40 * NS_PER_MS, 4999000000000000000ULL);
        set_max(&a, 5, TASK_DELAY_BLKIO, 5 * NS_PER_MS, 4998000000000000000ULL);
        set_max(&b, 5, TASK_DELAY_BLKIO, 5 * NS_PER_MS, 4998000000000000000ULL);
        r.window_start_real_ns = 4998500000000000000ULL;
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        for (size_t i = 0; i < r.n_threads; i++) {
                const ThreadDelta *t = &r.threads[i];
                if (t->tid == 6) {
                        assert_int_equal(t->worst_present, TASK_DELAY_MASK(TASK_DELAY_CPU));
                        assert_int_equal(t->worst_ns[TASK_DELAY_CPU], 40 * NS_PER_MS);
                        assert_int_equal(t->worst_at_ns[TASK_DELAY_CPU], 4999000000000000000ULL);
                } else if (t->tid == 5)
                        assert_false(t->worst_present & TASK_DELAY_MASK(TASK_DELAY_BLKIO));
        }
        r.window_start_real_ns = 0;

        /* A lifetime sample never presents a maximum as the window's. */
        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(ranking_add_threads(&r, NULL, &b, PSI_RESOURCE_CPU), 0);
        for (size_t i = 0; i < r.n_threads; i++)
                assert_int_equal(r.threads[i].worst_present, 0);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* A process's longest wait against the incident (taskstats v17): the longest that ended in the
 * window or the trigger's window before it wins over an older, longer one; without dated maxima
 * nothing is said. */
static void test_process_worst(void **state) {
        const uint64_t wake = 5001000000000000000ULL, start = wake, trig = wake - 2000000000ULL;
        Snapshot a = { .real_us = wake / 1000, .mono_us = 90000 * USEC_PER_SEC },
                 b = { .real_us = wake / 1000 + USEC_PER_SEC, .mono_us = 90001 * USEC_PER_SEC };
        Ranking r = {};
        ProcessWorst w;

        add(&a, 5, 5, "db", 4000, 0, 10 * NS_PER_MS, 0, 0);
        add(&a, 6, 5, "db", 4000, 0, 10 * NS_PER_MS, 0, 0);
        add(&b, 5, 5, "db", 4000, 0, 30 * NS_PER_MS, 0, 0);
        add(&b, 6, 5, "db", 4000, 0, 20 * NS_PER_MS, 0, 0);
        add(&a, 9, 9, "old", 4000, 0, 10 * NS_PER_MS, 0, 0);
        add(&b, 9, 9, "old", 4000, 0, 40 * NS_PER_MS, 0, 0);
        done_adding(&a);
        done_adding(&b);
        /* No dated maximum: an older kernel's reply. */
        set_max(&b, 5, TASK_DELAY_BLKIO, 900 * NS_PER_MS, 0);
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_IO), 0);
        for (size_t i = 0; i < r.n_procs; i++)
                assert_false(ranking_process_worst(&r, &r.procs[i], PSI_RESOURCE_IO, start, trig, &w));

        /* tid 5 waited 900 ms, ending 0.3 s before the wakeup: the stall that fired. tid 6's 2 s
         * wait an hour ago is longer and older; its 4 ms cpu wait in the window is not io. */
        set_max(&b, 5, TASK_DELAY_BLKIO, 900 * NS_PER_MS, wake - 300 * NS_PER_MS);
        set_max(&b, 6, TASK_DELAY_BLKIO, 2000 * NS_PER_MS, wake - 3600000 * NS_PER_MS);
        set_max(&b, 6, TASK_DELAY_CPU, 4 * NS_PER_MS, wake + 100 * NS_PER_MS);
        set_max(&b, 9, TASK_DELAY_BLKIO, 50 * NS_PER_MS, wake - 3600000 * NS_PER_MS);
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_IO), 0);
        for (size_t i = 0; i < r.n_procs; i++) {
                assert_true(ranking_process_worst(&r, &r.procs[i], PSI_RESOURCE_IO, start, trig, &w));
                if (r.procs[i].tgid == 5) {
                        assert_int_equal(w.tid, 5);
                        assert_int_equal(w.delay, TASK_DELAY_BLKIO);
                        assert_int_equal(w.ns, 900 * NS_PER_MS);
                        assert_int_equal(w.at_ns, wake - 300 * NS_PER_MS);
                        assert_int_equal(w.when, WORST_TRIGGER_WINDOW);
                        /* Ranked by cpu, the 4 ms wait in the window is the one. */
                        assert_true(ranking_process_worst(&r, &r.procs[i], PSI_RESOURCE_CPU, start, trig, &w));
                        assert_int_equal(w.when, WORST_WINDOW);
                        assert_int_equal(w.ns, 4 * NS_PER_MS);
                        /* Without a trigger (a snapshot) the 900 ms wait is before the window. */
                        assert_true(ranking_process_worst(&r, &r.procs[i], PSI_RESOURCE_IO, start, 0, &w));
                        assert_int_equal(w.when, WORST_BEFORE);
                        assert_int_equal(w.ns, 2000 * NS_PER_MS);
                } else {
                        assert_int_equal(w.when, WORST_BEFORE);
                        assert_int_equal(w.ns, 50 * NS_PER_MS);
                }
        }
        assert_string_equal(worst_when_to_string(WORST_TRIGGER_WINDOW), "trigger_window");
        assert_null(worst_when_to_string(_WORST_WHEN_MAX));
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* A sample of 0 ms: no A, every process of B with its lifetime totals, old ones included. */
/* A blkio wait the kernel ended without a start (kernel-facts.md: blkio-unstarted): its total grew by
 * the time since boot, which is also its new maximum. Taken out of the window's growth, the process's
 * by its own reply's maximum, or by its thread's when the reply shows another thread's; a real long
 * wait, or one from before the window, stays. */
static void test_unstarted_blkio(void **state) {
        const uint64_t S = 1000 * NS_PER_MS;
        Snapshot a = { .real_us = 9000 * USEC_PER_SEC, .mono_us = 13638 * USEC_PER_SEC },
                 b = { .real_us = 9001 * USEC_PER_SEC, .mono_us = 13639 * USEC_PER_SEC };
        uint64_t bogus = 13638 * S + 500 * NS_PER_MS; /* local_clock() as the wait "ended", mid-window */
        Ranking r = {};

        add(&a, 10, 10, "dd", 9000, 0, 100 * NS_PER_MS, 0, 0);
        add(&a, 20, 20, "db", 1000, 0, 1 * S, 0, 0);
        add(&a, 30, 30, "old", 1000, 0, bogus, 0, 0); /* its wait without a start came before the window */
        add(&a, 40, 40, "mt", 1000, 0, 0, 0, 0);
        add(&a, 41, 40, "mt-w", 1000, 0, 0, 0, 0);
        add(&b, 10, 10, "dd", 9000, 0, 100 * NS_PER_MS + bogus + 300 * NS_PER_MS, 0, 0); /* + the wait + 300 ms real */
        add(&b, 20, 20, "db", 1000, 0, 1 * S + 3600 * S, 0, 0); /* a real hour-long wait ended */
        add(&b, 30, 30, "old", 1000, 0, bogus + 200 * NS_PER_MS, 0, 0);
        add(&b, 40, 40, "mt", 1000, 0, 50 * NS_PER_MS, 0, 0);
        add(&b, 41, 40, "mt-w", 1000, 0, bogus, 0, 0);
        done_adding(&a);
        done_adding(&b);
        proc_of(&b, 10)->blkio_max_ns = bogus;
        proc_of(&a, 20)->blkio_max_ns = 10 * NS_PER_MS;
        proc_of(&b, 20)->blkio_max_ns = 3600 * S;
        proc_of(&a, 30)->blkio_max_ns = bogus;
        proc_of(&b, 30)->blkio_max_ns = bogus;
        proc_of(&b, 40)->blkio_max_ns = 50 * NS_PER_MS; /* the TGID reply's last thread: not the one */
        set_max(&b, 41, TASK_DELAY_BLKIO, bogus, 0);
        set_max(&b, 10, TASK_DELAY_BLKIO, bogus, 0); /* one thread: its reply's maximum is the thread's */

        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.unstarted, 1);
        uint64_t got[100] = {};
        for (size_t i = 0; i < r.n_procs; i++)
                got[r.procs[i].tgid] = r.procs[i].delay_ns[TASK_DELAY_BLKIO];
        assert_int_equal(got[10], 300 * NS_PER_MS);
        assert_int_equal(got[20], 3600 * S);
        assert_int_equal(got[30], 200 * NS_PER_MS);
        assert_int_equal(got[40], 50 * NS_PER_MS + bogus); /* until its threads are measured */
        assert_int_equal(r.procs[0].tgid, 40);

        /* Its threads: the one with the wait without a start is corrected, and its process with it. */
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.unstarted, 2); /* processes 10 and 40 */
        for (size_t i = 0; i < r.n_procs; i++)
                got[r.procs[i].tgid] = r.procs[i].delay_ns[TASK_DELAY_BLKIO];
        assert_int_equal(got[40], 50 * NS_PER_MS);
        assert_int_equal(r.procs[0].tgid, 20); /* the real hour-long wait ranks first now */
        for (size_t i = 0; i < r.n_threads; i++)
                if (r.threads[i].tid == 41)
                        assert_int_equal(r.threads[i].delay_ns[TASK_DELAY_BLKIO], 0);
                else if (r.threads[i].tid == 10)
                        assert_int_equal(r.threads[i].delay_ns[TASK_DELAY_BLKIO], 300 * NS_PER_MS);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* A kernel whose replies carry no maxima (taskstats v14, Debian 13's 6.12, which has the delayed
 * dequeue that ends waits without a start): a growth of at least the window's start is taken for as
 * many such waits as it holds, each at most the window's end; a real long wait below it stays. */
static void test_unstarted_blkio_no_maxima(void **state) {
        const uint64_t S = 1000 * NS_PER_MS;
        Snapshot a = { .real_us = 9000 * USEC_PER_SEC, .mono_us = 100 * USEC_PER_SEC, .taskstats_version = 14 },
                 b = { .real_us = 9001 * USEC_PER_SEC, .mono_us = 101 * USEC_PER_SEC, .taskstats_version = 14 };
        uint64_t u = 100 * S + 500 * NS_PER_MS; /* local_clock() as the wait "ended", mid-window */
        Ranking r = {};

        add(&a, 20, 20, "db", 1000, 0, 1 * S, 0, 0);
        add(&a, 40, 40, "mt", 1000, 0, 0, 0, 0);
        add(&a, 41, 40, "mt-w", 1000, 0, 0, 0, 0);
        add(&b, 10, 10, "dd", 9000, 0, u + 300 * NS_PER_MS, 0, 0); /* new: one without a start, 300 ms real */
        add(&b, 20, 20, "db", 1000, 0, 1 * S + 90 * S, 0, 0);      /* a real 90 s wait ended */
        add(&b, 30, 30, "dd2", 9000, 0, 2 * u + 5 * S, 0, 0);      /* two, and 5 s */
        add(&b, 40, 40, "mt", 1000, 0, 10 * NS_PER_MS, 0, 0);
        add(&b, 41, 40, "mt-w", 1000, 0, u, 0, 0);
        done_adding(&a);
        done_adding(&b);
        proc_of(&b, 10)->born_in_sample = proc_of(&b, 30)->born_in_sample = true;

        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        uint64_t got[100] = {};
        for (size_t i = 0; i < r.n_procs; i++)
                got[r.procs[i].tgid] = r.procs[i].delay_ns[TASK_DELAY_BLKIO];
        assert_int_equal(got[10], 0);                           /* u + 300 ms, less one of at most 102 s */
        assert_int_equal(got[20], 90 * S);                      /* below the window's start (99 s): real */
        assert_int_equal(got[30], 2 * u + 5 * S - 2 * 102 * S); /* less two of at most 102 s each */
        assert_int_equal(got[40], 0);                           /* its thread's, in its process's growth */
        assert_int_equal(r.unstarted, 1 + 2 + 1);
        assert_int_equal(r.procs[0].tgid, 20);

        /* The thread's own growth is taken too, and its process's is not taken twice. */
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.unstarted, 1 + 2 + 1);
        for (size_t i = 0; i < r.n_threads; i++)
                if (r.threads[i].tid == 41)
                        assert_int_equal(r.threads[i].delay_ns[TASK_DELAY_BLKIO], 0);

        /* The same growths with maxima (v16) and none that names a wait: nothing is taken. */
        a.taskstats_version = b.taskstats_version = 16;
        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.unstarted, 0);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

/* The kernel ends a task's later waits from the same missing start until one is started: a new
 * dd's first waits can each add the time since boot (kernel-facts.md: blkio-unstarted). Each lies
 * between the window's start and its maximum, so what is left is the least real growth they
 * leave. A process's growth over threads below the window's start stays; one above it is taken
 * for more such waits (the bound of the rule). */
static void test_unstarted_blkio_repeated(void **state) {
        const uint64_t S = 1000 * NS_PER_MS;
        Snapshot a = { .real_us = 9000 * USEC_PER_SEC, .mono_us = 26000 * USEC_PER_SEC },
                 b = { .real_us = 9001 * USEC_PER_SEC, .mono_us = 26001 * USEC_PER_SEC };
        uint64_t u1 = 26000 * S + 100 * NS_PER_MS, u2 = 26000 * S + 400 * NS_PER_MS, u3 = 26000 * S + 900 * NS_PER_MS;
        Ranking r = {};

        add(&a, 10, 10, "dd", 25990, 0, 0, 0, 0);
        add(&a, 20, 20, "pool", 1000, 0, 0, 0, 0);
        add(&a, 40, 40, "mt", 1000, 0, 0, 0, 0);
        add(&a, 41, 40, "mt-w", 1000, 0, 0, 0, 0);
        add(&b, 10, 10, "dd", 25990, 0, u1 + u2 + u3 + 300 * NS_PER_MS, 0, 0); /* three without a start, 300 ms real */
        add(&b, 20, 20, "pool", 1000, 0, u3 + 20000 * S, 0, 0);                /* one, and 20,000 s over its threads */
        add(&b, 30, 30, "dd-end", 26000, 0, u1 + u2 + 2 * S, 0, 0);            /* two, 2 s real; new, not detailed */
        add(&b, 40, 40, "mt", 1000, 0, 10 * NS_PER_MS, 0, 0);
        add(&b, 41, 40, "mt-w", 1000, 0, u1 + u2 + 50 * NS_PER_MS, 0, 0); /* two in a thread its reply does not show */
        done_adding(&a);
        done_adding(&b);
        proc_of(&b, 10)->blkio_max_ns = u3;
        proc_of(&b, 20)->blkio_max_ns = u3;
        proc_of(&b, 30)->blkio_max_ns = u2;
        proc_of(&b, 30)->born_in_sample = true;
        proc_of(&b, 40)->blkio_max_ns = 10 * NS_PER_MS;
        set_max(&b, 10, TASK_DELAY_BLKIO, u3, 0);
        set_max(&b, 41, TASK_DELAY_BLKIO, u2, 0);

        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_IO), 0);
        uint64_t got[100] = {};
        for (size_t i = 0; i < r.n_procs; i++)
                got[r.procs[i].tgid] = r.procs[i].delay_ns[TASK_DELAY_BLKIO];
        assert_int_equal(got[10], 0);               /* u1 + u2 + 300 ms, less two at most u3 each: at least 0 */
        assert_int_equal(got[20], 20000 * S);       /* below the window's start: real */
        assert_int_equal(got[30], u1 + 2 * S - u2); /* u1 + 2 s, less one at most u2 */
        assert_int_equal(got[40], 10 * NS_PER_MS + u1 + u2 + 50 * NS_PER_MS); /* until its threads are measured */
        assert_int_equal(r.unstarted, 3 + 1 + 2);

        /* mt's thread: both out (u1 + 50 ms less at most u2: 0), from its process too, and no worst;
         * dd's thread finds the three its process's reply already gave. */
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_IO), 0);
        for (size_t i = 0; i < r.n_procs; i++)
                got[r.procs[i].tgid] = r.procs[i].delay_ns[TASK_DELAY_BLKIO];
        assert_int_equal(got[10], 0);
        assert_int_equal(got[40], 10 * NS_PER_MS);
        assert_int_equal(r.unstarted, 3 + 1 + 2 + 2);
        for (size_t i = 0; i < r.n_threads; i++)
                if (r.threads[i].tid == 41 || r.threads[i].tid == 10) {
                        assert_int_equal(r.threads[i].delay_ns[TASK_DELAY_BLKIO], 0);
                        assert_false(r.threads[i].worst_present & TASK_DELAY_MASK(TASK_DELAY_BLKIO));
                }
        assert_int_equal(r.procs[0].tgid, 20);
        ranking_done(&r);
        free_snapshot(&a);
        free_snapshot(&b);
}

static void test_lifetime(void **state) {
        Snapshot b = { .real_us = 5000 * USEC_PER_SEC };
        Ranking r = {};

        add(&b, 10, 10, "spin", 1000, 100 * NS_PER_MS, 0, 0, 0);
        add(&b, 11, 10, "spin-w", 1000, 50 * NS_PER_MS, 0, 0, 0);
        add(&b, 20, 20, "reader", 4999, 1 * NS_PER_MS, 0, 0, 0);
        done_adding(&b);
        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[0].score_ns, 150 * NS_PER_MS);
        assert_int_equal(r.procs[1].score_ns, 1 * NS_PER_MS);
        assert_int_equal(ranking_add_threads(&r, NULL, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_threads, 3);
        assert_int_equal(r.procs[0].n, 2);
        ranking_done(&r);
        free_snapshot(&b);
}

/* A wait not ended ranks with the ended ones for io and memory: a process stuck 3 s outranks one
 * that waited 50 ms, and one with no delay at all joins; for cpu it is only noted. */
static void test_blocked(void **state) {
        Snapshot b = { .real_us = 5000 * USEC_PER_SEC };
        Ranking r = {};
        BlockedThreadLook look[] = {
                { .pid = 10, .tid = 11, .state = 'D', .blocked_ns = 3000 * NS_PER_MS },
                { .pid = 10, .tid = 12, .state = 'D', .blocked_ns = 1000 * NS_PER_MS },
                { .pid = 30, .tid = 30, .state = 'D', .blocked_ns = 2000 * NS_PER_MS },
                { .pid = 40, .tid = 40, .state = 'D', .blocked_ns = -1 },               /* not told */
                { .pid = 50, .tid = 50, .state = 'S', .blocked_ns = 9000 * NS_PER_MS }, /* not in D */
        };

        add(&b, 10, 10, "stuck", 1000, 1 * NS_PER_MS, 0, 0, 0);
        add(&b, 11, 10, "stuck", 1000, 0, 0, 0, 0);
        add(&b, 12, 10, "stuck", 1000, 0, 0, 0, 0);
        add(&b, 20, 20, "reader", 1000, 0, 50 * NS_PER_MS, 0, 0);
        done_adding(&b);

        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(r.procs[0].tgid, 20);
        assert_int_equal(ranking_add_blocked(&r, look, ELEMENTSOF(look), PSI_RESOURCE_IO), 0);
        assert_int_equal(r.n_procs, 3);
        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[0].blocked_tid, 11);
        assert_int_equal(r.procs[0].blocked_ns, 3000 * NS_PER_MS);
        assert_int_equal(r.procs[0].score_ns, 3000 * NS_PER_MS);
        assert_int_equal(r.procs[1].tgid, 30); /* no delay in the sample: joined by its wait */
        assert_int_equal(r.procs[1].origin, PROCESS_MEASURED);
        assert_int_equal(r.procs[1].score_ns, 2000 * NS_PER_MS);
        assert_int_equal(r.procs[2].tgid, 20);
        assert_int_equal(r.procs[2].blocked_tid, 0);
        assert_int_equal(r.procs[2].score_ns, 50 * NS_PER_MS);

        /* cpu: a D sleep is no cpu wait; noted on the ranked, no one joins, the order stands. */
        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(ranking_add_blocked(&r, look, ELEMENTSOF(look), PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[0].score_ns, 1 * NS_PER_MS);
        assert_int_equal(r.procs[0].blocked_ns, 3000 * NS_PER_MS);

        /* A wait known to be for the other of io and memory (sampling/waitfor.h) is not this
         * stall's: for memory, process 10's io waits are not even noted, 30's memory one joins. */
        look[0].wait_for = look[1].wait_for = WAIT_FOR_IO;
        look[2].wait_for = WAIT_FOR_MEMORY;
        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_MEMORY), 0);
        assert_int_equal(ranking_add_blocked(&r, look, ELEMENTSOF(look), PSI_RESOURCE_MEMORY), 0);
        assert_int_equal(r.procs[0].tgid, 30);
        assert_int_equal(r.procs[0].score_ns, 2000 * NS_PER_MS);
        for (size_t i = 0; i < r.n_procs; i++)
                assert_true(r.procs[i].tgid != 10 || r.procs[i].blocked_tid == 0);
        /* For io, 30's wait for memory is left out and 10's count. */
        assert_int_equal(ranking_build(&r, NULL, &b, PSI_RESOURCE_IO), 0);
        assert_int_equal(ranking_add_blocked(&r, look, ELEMENTSOF(look), PSI_RESOURCE_IO), 0);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.procs[0].tgid, 10);
        assert_int_equal(r.procs[0].blocked_ns, 3000 * NS_PER_MS);
        ranking_done(&r);
        free_snapshot(&b);
}

static void test_scores(void **state) {
        uint64_t d[_TASK_DELAY_MAX] = { 1, 2, 4, 8, 16, 32, 64, 128 };

        assert_int_equal(rank_score(d, PSI_RESOURCE_CPU), 1);
        assert_int_equal(rank_score(d, PSI_RESOURCE_IO), 2);
        assert_int_equal(rank_score(d, PSI_RESOURCE_MEMORY), 4 + 8 + 16 + 32);
        assert_int_equal(rank_score(d, PSI_RESOURCE_IRQ), 128);
        assert_int_equal(rank_score(d, RANK_SCORE_ALL), 255);
}

static void test_empty(void **state) {
        Snapshot a = {}, b = {};
        Ranking r = {};

        assert_int_equal(ranking_build(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_procs, 0);
        assert_int_equal(ranking_add_threads(&r, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(r.n_threads, 0);
        assert_int_equal(ranking_top_pids(&r, 5, NULL), 0);
        ranking_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_ranking),
                cmocka_unit_test(test_memory_io_all),
                cmocka_unit_test(test_counter_going_backwards),
                cmocka_unit_test(test_ended_processes),
                cmocka_unit_test(test_btime_jitter),
                cmocka_unit_test(test_worst_in_window),
                cmocka_unit_test(test_process_worst),
                cmocka_unit_test(test_unstarted_blkio),
                cmocka_unit_test(test_unstarted_blkio_repeated),
                cmocka_unit_test(test_unstarted_blkio_no_maxima),
                cmocka_unit_test(test_lifetime),
                cmocka_unit_test(test_blocked),
                cmocka_unit_test(test_scores),
                cmocka_unit_test(test_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
