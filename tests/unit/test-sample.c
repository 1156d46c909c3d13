/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include "sampling/snapshot.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define MS 1000000ULL

typedef struct Env {
        Sysroot *sysroot;
        FakeTask tasks[6];
        TaskstatsSource *ts;
} Env;

static int setup(void **state) {
        static Env env;
        static const uint64_t busy[_TASK_DELAY_MAX] = { 300 * MS, 0, 0, 5 * MS }, calm[_TASK_DELAY_MAX] = { 1 * MS };

        env = (Env) {
                .tasks = {
                        { .tid = 100, .stats = fake_task_stats(100, 100, "web", busy) },
                        { .tid = 101, .stats = fake_task_stats(101, 100, "worker", calm) },
                        { .tid = 102, .error = -ESRCH },
                        { .tid = 200, .error = -EPERM },
                        { .tid = 201, .stats = fake_task_stats(201, 200, "cruncher", calm) },
                        { .tid = 1, .stats = fake_task_stats(1, 1, "systemd", calm) },
                },
        };
        assert_int_equal(sysroot_open(fixture("hybrid"), &env.sysroot), 0);
        env.ts = fake_taskstats_new(env.tasks, 6);
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;

        sysroot_free(env->sysroot);
        taskstats_source_free(env->ts);
        return 0;
}

static void test_cgroup_snapshot(void **state) {
        Env *env = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts, .exclude_tgid = 0 };
        int fd;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app", &fd), 0);
        scope.cgroup_fd = fd;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);

        /* 100, 101 and 201 measured; 102 exited (ESRCH); 200 refused (an error, not an exit). */
        assert_int_equal(s.n, 3);
        assert_int_equal(s.threads[0].tid, 100);
        assert_int_equal(s.threads[1].tid, 101);
        assert_int_equal(s.threads[1].tgid, 100);
        assert_int_equal(s.threads[2].tid, 201);
        assert_int_equal(s.listed, 5);
        assert_int_equal(s.exited, 1);
        assert_int_equal(s.errors, 1);
        assert_int_equal(s.first_error, -EPERM);
        assert_int_equal(s.taskstats_version, 16);
        assert_non_null(snapshot_find(&s, 201));
        assert_null(snapshot_find(&s, 102));

        /* States from the fixture's stat files: R, D, T, R, I. */
        assert_true(s.has_states);
        assert_int_equal(s.states.source, TASK_STATE_SOURCE_PROCFS);
        assert_int_equal(s.states.running, 2);
        assert_int_equal(s.states.uninterruptible, 1);
        assert_int_equal(s.states.stopped, 1);
        assert_int_equal(s.states.sleeping, 1);
        assert_int_equal(s.states.io_wait, -1);

        /* Pressure of the cgroup itself; irq.pressure is absent in the fixture. */
        assert_true(s.has_pressure[PSI_RESOURCE_CPU]);
        assert_int_equal(s.pressure[PSI_RESOURCE_CPU].line[PSI_STALL_SOME].total_us, 5000000);
        assert_false(s.has_pressure[PSI_RESOURCE_IRQ]);

        /* Taken again: buffers reused, same answer, no states when not asked. */
        assert_int_equal(snapshot_take(&s, &scope, false), 0);
        assert_int_equal(s.n, 3);
        assert_false(s.has_states);

        snapshot_done(&s);
        close(fd);
}

static void test_excludes_the_agent(void **state) {
        Env *env = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts, .exclude_tgid = 100 };
        int fd;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        /* 100 by tid, 101 by its tgid; 102 exited. */
        assert_int_equal(s.n, 0);
        assert_int_equal(s.listed, 1);
        assert_int_equal(s.exited, 1);
        snapshot_done(&s);
        close(fd);
}

static void test_node_wide_and_without_taskstats(void **state) {
        Env *env = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts, .cgroup_fd = -1 };

        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_int_equal(s.n, 4); /* 1, 100, 101, 201 */
        assert_int_equal(s.states.running + s.states.sleeping + s.states.uninterruptible + s.states.stopped, 6);
        /* Node-wide pressure comes from /proc/pressure. */
        assert_int_equal(s.pressure[PSI_RESOURCE_MEMORY].line[PSI_STALL_FULL].total_us, 6000000);

        scope.taskstats = NULL;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_int_equal(s.n, 0);
        assert_int_equal(s.listed, 6);
        assert_int_equal(s.errors, 0);
        assert_int_equal(s.taskstats_version, 16); /* kept from the last reply */
        assert_int_equal(s.states.running, 2);
        snapshot_done(&s);
}

static void test_cgroup_gone(void **state) {
        Env *env = *state;
        Snapshot s = {};
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts };

        /* A directory without cgroup.threads: what a removed cgroup looks like to a reader. */
        assert_non_null(mkdtemp(dir));
        scope.cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_int_equal(snapshot_take(&s, &scope, true), -ENOENT);
        close(scope.cgroup_fd);
        rmdir(dir);
        snapshot_done(&s);
}

/* The state letter the generated tree gives a tid: pseudo-random, so an evenly spaced sample is
 * not aliased with a pattern in the tids. 20% R, 10% D, the rest S. */
static char state_of(int tid) {
        unsigned h = (unsigned) tid * 2654435761u >> 16;
        return h % 10 < 2 ? 'R' : h % 10 == 2 ? 'D' : 'S';
}

/* A generated cgroup of n threads, its states counted. */
static void state_counts_of(int n, TaskStateCounts *ret, unsigned expect[3]) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[256];
        Sysroot sysroot = { .root_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        SampleScope scope = { .sysroot = &sysroot };
        Snapshot s = {};

        expect[0] = expect[1] = expect[2] = 0;
        for (int tid = 1000; tid < 1000 + n; tid++) {
                char st = state_of(tid);
                expect[st == 'R' ? 0 : st == 'D' ? 1 : 2]++;
        }
        assert_int_equal(fake_tree_make(dir, 1000, n, state_of), 0);
        snprintf(path, sizeof path, "%s/proc", dir);
        sysroot.proc_fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        scope.cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_true(s.has_states);
        assert_int_equal(s.listed, n);
        *ret = s.states;
        snapshot_done(&s);
        close(sysroot.proc_fd);
        close(scope.cgroup_fd);
        fake_tree_remove(dir);
}

static void test_states_exact_then_sampled(void **state) {
        TaskStateCounts c;
        unsigned want[3];

        /* Up to SAMPLE_STATES_MAX threads every state is read. */
        state_counts_of(200, &c, want);
        assert_int_equal(c.read, 200);
        assert_false(c.scaled);
        assert_int_equal(c.running, want[0]);
        assert_int_equal(c.uninterruptible, want[1]);
        assert_int_equal(c.sleeping, want[2]);

        /* Above it, an evenly spaced sample (every 4th of 1,000) scaled to the whole. */
        state_counts_of(1000, &c, want);
        assert_int_equal(c.read, 250);
        assert_true(c.scaled);
        assert_in_range(c.running + c.uninterruptible + c.sleeping, 998, 1002);
        assert_in_range(c.running, want[0] - 60, want[0] + 60);
        assert_in_range(c.uninterruptible, want[1] - 45, want[1] + 45);
        assert_in_range(c.sleeping, want[2] - 60, want[2] + 60);
}

/* Exit records: a's threads that died during the sample get their final counters in b; other
 * tasks of the host, reused tids, and threads b still has are ignored. */
static void test_merge_exits(void **state) {
        static const uint64_t d1[_TASK_DELAY_MAX] = { 10 * MS }, d2[_TASK_DELAY_MAX] = { 90 * MS };
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        TaskStats t;

        assert_int_equal(snapshot_reserve(&a, 4), 0);
        assert_int_equal(snapshot_reserve(&b, 4), 0);
        a.threads[a.n++] = (ThreadDelays) { .tid = 10, .tgid = 10, .btime_s = 1000 };
        a.threads[a.n++] = (ThreadDelays) { .tid = 20, .tgid = 20, .btime_s = 1000 };
        a.threads[a.n++] = (ThreadDelays) { .tid = 30, .tgid = 30, .btime_s = 1000 };
        b.threads[b.n++] = (ThreadDelays) { .tid = 10, .tgid = 10, .btime_s = 1000 };

        t = fake_task_stats(20, 20, "dying", d2); /* died: kept */
        t.btime_s = 1001;                         /* the kernel's one-second jitter */
        assert_int_equal(exit_records_add(&e, &t), 0);
        t = fake_task_stats(30, 30, "reused", d1); /* same tid, another thread */
        t.btime_s = 1500;
        assert_int_equal(exit_records_add(&e, &t), 0);
        t = fake_task_stats(99, 99, "elsewhere", d1); /* not ours */
        assert_int_equal(exit_records_add(&e, &t), 0);
        t = fake_task_stats(10, 10, "alive", d1); /* b has newer counters */
        t.btime_s = 1000;
        assert_int_equal(exit_records_add(&e, &t), 0);
        e.lost = 2;

        assert_int_equal(snapshot_merge_exits(&b, &a, &e), 0);
        assert_true(b.has_exit_listener);
        assert_int_equal(b.exit_records, 1);
        assert_int_equal(b.lost_exit_records, 2);
        assert_int_equal(b.n, 2);
        const ThreadDelays *x = snapshot_find(&b, 20);
        assert_non_null(x);
        assert_int_equal(x->delay_ns[TASK_DELAY_CPU], 90 * MS);
        assert_string_equal(x->comm, "dying");
        assert_null(snapshot_find(&b, 30));

        /* Every thread gone by B: b has no buffer at all yet (UBSan caught bsearch on NULL). */
        Snapshot empty = {};
        assert_int_equal(snapshot_merge_exits(&empty, &a, &e), 0);
        assert_int_equal(empty.exit_records, 2); /* 20, and 10 whose record this b does not overrule */
        assert_non_null(snapshot_find(&empty, 20));
        assert_non_null(snapshot_find(&empty, 10));
        snapshot_done(&empty);

        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

/* An oom victim's final delays: its threads' exit records summed; nothing written when none. */
static void test_victim_exit_delays(void **state) {
        static const uint64_t d1[_TASK_DELAY_MAX] = { 10 * MS, 0, 0, 5 * MS },
                              d2[_TASK_DELAY_MAX] = { 90 * MS, 0, 0, 1 * MS };
        Sampler s = {};
        TaskStats t;
        uint64_t got[_TASK_DELAY_MAX] = { 7 };
        uint32_t present = 0xabc;

        t = fake_task_stats(40, 40, "hog", d1);
        assert_int_equal(exit_records_add(&s.exits, &t), 0);
        t = fake_task_stats(41, 40, "hog-worker", d2);
        assert_int_equal(exit_records_add(&s.exits, &t), 0);
        t = fake_task_stats(50, 50, "other", d2);
        assert_int_equal(exit_records_add(&s.exits, &t), 0);

        /* Not heard: the caller's values stay as they were (a taskstats reading, say). */
        assert_false(sampler_exit_delays(&s, 60, got, &present));
        assert_int_equal(got[0], 7);
        assert_int_equal(present, 0xabc);

        assert_true(sampler_exit_delays(&s, 40, got, &present));
        assert_int_equal(got[TASK_DELAY_CPU], 100 * MS);
        assert_int_equal(got[TASK_DELAY_RECLAIM], 6 * MS);
        assert_int_equal(present, t.present);
        exit_records_done(&s.exits);
}

static void test_scale(void **state) {
        TaskStateCounts c;

        task_state_counts_init_procfs(&c);
        for (int i = 0; i < 256; i++)
                task_state_counts_add(&c, i < 10 ? 'R' : i < 16 ? 'D' : i < 17 ? 'Z' : 'S');
        assert_int_equal(c.read, 256);
        task_state_counts_scale(&c, 256); /* everything read: unchanged */
        assert_false(c.scaled);
        task_state_counts_scale(&c, 1024);
        assert_true(c.scaled);
        assert_int_equal(c.running, 40);
        assert_int_equal(c.uninterruptible, 24);
        assert_int_equal(c.sleeping, 956);
        assert_int_equal(c.stopped, 0);
}

static void on_sample_done(Sampler *s, int r) {
        int *ret = s->userdata;

        *ret = r;
}

/* The window runs sample_ms from the end of snapshot A, however long A took: libev counts timers
 * from its cached time, which a slow A (here 3 threads at 60 ms a query) leaves behind. */
static void test_sampler_window_after_a(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts };
        Sampler s;
        int fd, r = 1;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        fake_taskstats_set_delay(env->ts, 60 * 1000);
        sampler_init(&s, loop, NULL, on_sample_done, &r);
        assert_int_equal(sampler_start(&s, &scope, 100), 0);
        usec_t a_end = now_usec(CLOCK_MONOTONIC);
        assert_true(s.a_cost_us >= 150 * 1000);
        ev_run(loop, 0);
        fake_taskstats_set_delay(env->ts, 0);
        assert_int_equal(r, 0);
        assert_true(s.b_start_us >= a_end + 95 * 1000);
        sampler_free(&s);
        ev_loop_destroy(loop);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_snapshot),
                cmocka_unit_test(test_victim_exit_delays),
                cmocka_unit_test(test_excludes_the_agent),
                cmocka_unit_test(test_node_wide_and_without_taskstats),
                cmocka_unit_test(test_cgroup_gone),
                cmocka_unit_test(test_states_exact_then_sampled),
                cmocka_unit_test(test_scale),
                cmocka_unit_test(test_merge_exits),
                cmocka_unit_test(test_sampler_window_after_a),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
