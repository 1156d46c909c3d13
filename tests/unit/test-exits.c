/* SPDX-License-Identifier: MIT */
/* Exit records (sampling/exits.c) and what they add to a sample's end snapshot. */
#include <errno.h>
#include <string.h>

#include "sampling/exits.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/test-util.h"

static void add_process(Snapshot *s, pid_t tgid, uint64_t cpu_ns) {
        assert_int_equal(snapshot_reserve(s, 8, s->n_procs + 1), 0);
        s->procs[s->n_procs++] = (ProcessDelays) { .tgid = tgid, .uid = -1, .delay_ns = { cpu_ns } };
}

static TaskStats exit_stats(pid_t tid, pid_t tgid, pid_t ppid, const char *comm, uint64_t cpu_ns) {
        uint64_t d[_TASK_DELAY_MAX] = { cpu_ns };
        TaskStats t = fake_task_stats(tid, tgid, comm, d);

        t.ppid = ppid;
        t.uid = 1000;
        return t;
}

/* Exit records (kernel-facts.md: exit-records): a's processes that ended get their final
 * counters in b (the AGGR_TGID aggregate, else a single-threaded process's only record); a process
 * that started and ended inside the sample is placed by its parent, generation after
 * generation; the rest are unattributed; threads of the sample's processes are counted. */
static void test_merge_exits(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        TaskStats t, p;

        /* a: processes 10 (alive), 20 (multi-threaded, ends), 30 (single-threaded, ends),
         * 50 (ends unheard). b: 10. */
        add_process(&a, 10, 100 * NS_PER_MS);
        add_process(&a, 20, 100 * NS_PER_MS);
        add_process(&a, 30, 100 * NS_PER_MS);
        add_process(&a, 50, 1 * NS_PER_MS);
        add_process(&b, 10, 300 * NS_PER_MS);

        t = exit_stats(11, 10, 1, "w", 5 * NS_PER_MS); /* a thread of 10 ended: 10 is still in b */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(21, 20, 1, "db-w", 50 * NS_PER_MS); /* a thread of 20, then its last, with the aggregate */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(20, 20, 1, "db", 70 * NS_PER_MS);
        p = exit_stats(20, 20, 1, "db", 400 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, &p), 0);
        /* 60: killed, its leader's record first, the last thread's (with the aggregate, named as
         * that thread) after it: the process keeps its leader's name. */
        add_process(&a, 60, 1 * NS_PER_MS);
        t = exit_stats(60, 60, 1, "redis-server", 2 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(63, 60, 1, "bio_aof_fsync", 1 * NS_PER_MS);
        p = exit_stats(60, 60, 1, "bio_aof_fsync", 9 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, &p), 0);
        t = exit_stats(30, 30, 1, "cron", 250 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        /* 41 (child of 40) ends before its parent 40 (child of 10): both are placed. */
        t = exit_stats(41, 41, 40, "gzip", 7 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(40, 40, 10, "sh", 3 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        /* Another host's process whose parent is not in the sample; a thread of it. */
        t = exit_stats(99, 99, 1, "elsewhere", 9 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(98, 99, 1, "elsewhere", 1 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        e.lost = 2;

        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);
        assert_true(b.has_exit_listener);
        assert_int_equal(b.lost_exit_records, 2);
        assert_int_equal(b.n_procs, 6); /* 10, 20, 30, 40, 41, 60 */
        const ProcessDelays *x = snapshot_find_process(&b, 60);
        assert_non_null(x);
        assert_int_equal(x->origin, PROCESS_ENDED);
        assert_int_equal(x->delay_ns[TASK_DELAY_CPU], 9 * NS_PER_MS);
        assert_string_equal(x->comm, "redis-server");
        x = snapshot_find_process(&b, 20);
        assert_non_null(x);
        assert_int_equal(x->origin, PROCESS_ENDED);
        assert_int_equal(x->delay_ns[TASK_DELAY_CPU], 400 * NS_PER_MS); /* the aggregate, not a thread */
        x = snapshot_find_process(&b, 30);
        assert_int_equal(x->origin, PROCESS_ENDED);
        assert_int_equal(x->delay_ns[TASK_DELAY_CPU], 250 * NS_PER_MS);
        assert_string_equal(x->comm, "cron");
        x = snapshot_find_process(&b, 40);
        assert_int_equal(x->origin, PROCESS_SHORT);
        assert_int_equal(x->ppid, 10);
        assert_int_equal(x->uid, 1000);
        x = snapshot_find_process(&b, 41);
        assert_int_equal(x->origin, PROCESS_SHORT);
        assert_int_equal(x->ppid, 40);
        assert_null(snapshot_find_process(&b, 50));
        assert_int_equal(b.ended_unheard, 1);
        assert_int_equal(b.unattributed, 1);
        assert_int_equal(b.unattributed_ns[TASK_DELAY_CPU], 9 * NS_PER_MS);
        /* Thread records of the sample's processes: 11, 21, 20, 30, 41, 40, 60, 63. */
        assert_int_equal(b.exit_records, 8);

        /* Every process gone by B: b has no buffer at all (UBSan caught bsearch on NULL). */
        Snapshot empty = {};
        assert_int_equal(snapshot_merge_exits(&empty, &a, NULL, &e), 0);
        assert_non_null(snapshot_find_process(&empty, 20));
        assert_int_equal(empty.ended_unheard, 2); /* 10 (no record of its end) and 50 */
        snapshot_done(&empty);

        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

static TaskStats with_use(TaskStats t, uint64_t hiwater_kib, uint64_t read_bytes, uint64_t write_bytes) {
        t.hiwater_rss_kib = hiwater_kib;
        t.has_hiwater_rss = true;
        t.read_bytes = read_bytes;
        t.write_bytes = write_bytes;
        t.has_io = true;
        return t;
}

/* What an ended process last used, from its thread records (the AGGR_TGID record has neither):
 * io summed over its threads, the resident high-water mark of its address space as its size. */
static void test_merge_exits_last_use(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        TaskStats t, p;

        add_process(&a, 10, 0);
        add_process(&a, 20, 0); /* a grower killed mid-sample */
        add_process(&a, 30, 0); /* two threads */
        add_process(&b, 10, 0);
        t = with_use(exit_stats(20, 20, 1, "grower", 0), 150 << 10, 0, 0);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = with_use(exit_stats(31, 30, 1, "db-w", 0), 4 << 10, 4096, 1 << 20);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = with_use(exit_stats(30, 30, 1, "db", 0), 0, 0, 2 << 20); /* the mm already gone: 0 */
        p = exit_stats(30, 30, 1, "db", 0);                          /* the accumulator: no use */
        assert_int_equal(exit_records_add(&e, &t, &p), 0);
        /* A short writer of 10's: started and ended in the sample. */
        t = with_use(exit_stats(40, 40, 10, "writer", 0), 2 << 10, 0, 3 << 20);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);

        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);
        const ProcessDelays *x = snapshot_find_process(&b, 20);
        assert_int_equal(x->origin, PROCESS_ENDED);
        assert_true(x->has_mem);
        assert_int_equal(x->rss_bytes, 150ull << 20);
        x = snapshot_find_process(&b, 30);
        assert_true(x->has_io && x->has_mem);
        assert_int_equal(x->read_bytes, 4096);
        assert_int_equal(x->write_bytes, 3 << 20);
        assert_int_equal(x->rss_bytes, 4 << 20);
        x = snapshot_find_process(&b, 40);
        assert_int_equal(x->origin, PROCESS_SHORT);
        assert_true(x->has_io);
        assert_int_equal(x->write_bytes, 3 << 20);
        assert_false(snapshot_find_process(&b, 10)->has_io); /* alive: /proc's, not read here */

        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

/* Before taskstats v12 records carry no tgid: one whose task was a process of a is that
 * process's end; the others cannot be placed, and are neither placed nor unattributed. */
static void test_merge_exits_without_tgid(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        TaskStats t;

        add_process(&a, 10, 100 * NS_PER_MS);
        add_process(&a, 30, 100 * NS_PER_MS);
        add_process(&b, 10, 300 * NS_PER_MS);
        t = exit_stats(30, 0, 1, "old-kernel", 250 * NS_PER_MS);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(11, 0, 10, "a-thread", 5 * NS_PER_MS); /* a thread of 10, or a child: unknown */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);

        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);
        assert_int_equal(b.n_procs, 2);
        assert_int_equal(snapshot_find_process(&b, 30)->origin, PROCESS_ENDED);
        assert_null(snapshot_find_process(&b, 11));
        assert_int_equal(b.unattributed, 0);
        assert_int_equal(b.ended_unheard, 0);

        /* No listener at all: the processes that ended are counted, nothing else. */
        Snapshot c = {};
        add_process(&c, 10, 300 * NS_PER_MS);
        assert_int_equal(snapshot_merge_exits(&c, &a, NULL, NULL), 0);
        assert_false(c.has_exit_listener);
        assert_int_equal(c.ended_unheard, 1);
        assert_int_equal(c.n_procs, 1);

        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
        snapshot_done(&c);
}

/* The detailed threads of the thread base that died before B get their final counters; reused
 * tids and threads B still has are left alone. */
static void test_merge_thread_exits(void **state) {
        Snapshot m = {}, b = {};
        ExitRecords e = {};
        TaskStats t;

        assert_int_equal(snapshot_reserve(&m, 4, 1), 0);
        assert_int_equal(snapshot_reserve(&b, 4, 1), 0);
        m.threads[m.n++] = (ThreadDelays) { .tid = 10, .tgid = 10, .btime_s = 1000 };
        m.threads[m.n++] = (ThreadDelays) { .tid = 12, .tgid = 10, .btime_s = 1000 };
        m.threads[m.n++] = (ThreadDelays) { .tid = 13, .tgid = 10, .btime_s = 1000 };
        b.threads[b.n++] = (ThreadDelays) { .tid = 10, .tgid = 10, .btime_s = 1000 };

        t = exit_stats(12, 10, 1, "dying", 90 * NS_PER_MS); /* died: kept */
        t.btime_s = 1001;                                   /* the kernel's one-second jitter */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(13, 10, 1, "reused", 10 * NS_PER_MS); /* same tid, another thread */
        t.btime_s = 1500;
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_stats(10, 10, 1, "alive", 10 * NS_PER_MS); /* b has newer counters */
        t.btime_s = 1000;
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);

        assert_int_equal(snapshot_merge_exits(&b, &m, &m, &e), 0);
        assert_int_equal(b.n, 2);
        const ThreadDelays *x = snapshot_find(&b, 12);
        assert_non_null(x);
        assert_int_equal(x->delay_ns[TASK_DELAY_CPU], 90 * NS_PER_MS);
        assert_string_equal(x->comm, "dying");
        assert_null(snapshot_find(&b, 13));

        exit_records_done(&e);
        snapshot_done(&m);
        snapshot_done(&b);
}

/* An oom victim's final delays: its AGGR_TGID record when heard (it has the threads that ended
 * before the listener too), else its threads' records summed; nothing written when none. */
static void test_victim_exit_delays(void **state) {
        Sampler s = {};
        TaskStats t, p;
        uint64_t got[_TASK_DELAY_MAX] = { 7 };
        uint32_t present = 0xabc;

        t = exit_stats(40, 40, 1, "hog", 10 * NS_PER_MS);
        t.delay_ns[TASK_DELAY_RECLAIM] = 5 * NS_PER_MS;
        assert_int_equal(exit_records_add(&s.exits, &t, NULL), 0);
        t = exit_stats(41, 40, 1, "hog-worker", 90 * NS_PER_MS);
        t.delay_ns[TASK_DELAY_RECLAIM] = 1 * NS_PER_MS;
        assert_int_equal(exit_records_add(&s.exits, &t, NULL), 0);
        t = exit_stats(50, 50, 1, "other", 90 * NS_PER_MS);
        assert_int_equal(exit_records_add(&s.exits, &t, NULL), 0);

        /* Not heard: the caller's values stay as they were (a taskstats reading, say). */
        assert_false(sampler_exit_delays(&s, 60, got, &present));
        assert_int_equal(got[0], 7);
        assert_int_equal(present, 0xabc);

        assert_true(sampler_exit_delays(&s, 40, got, &present));
        assert_int_equal(got[TASK_DELAY_CPU], 100 * NS_PER_MS);
        assert_int_equal(got[TASK_DELAY_RECLAIM], 6 * NS_PER_MS);
        assert_int_equal(present, t.present);

        t = exit_stats(42, 40, 1, "hog-last", 1 * NS_PER_MS);
        p = exit_stats(42, 40, 1, "hog", 700 * NS_PER_MS);
        assert_int_equal(exit_records_add(&s.exits, &t, &p), 0);
        assert_true(sampler_exit_delays(&s, 40, got, &present));
        assert_int_equal(got[TASK_DELAY_CPU], 700 * NS_PER_MS);
        exit_records_done(&s.exits);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_merge_exits),
                cmocka_unit_test(test_merge_exits_last_use),
                cmocka_unit_test(test_merge_exits_without_tgid),
                cmocka_unit_test(test_merge_thread_exits),
                cmocka_unit_test(test_victim_exit_delays),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
