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

        /* Processes 100 (web: threads 100 and 101 summed; 102 is gone) and 200 (refused: an
         * error, not an exit). No thread is measured one by one. */
        assert_int_equal(s.processes, 2);
        assert_int_equal(s.n_procs, 1);
        const ProcessDelays *p = snapshot_find_process(&s, 100);
        assert_non_null(p);
        assert_int_equal(p->delay_ns[TASK_DELAY_CPU], 301 * MS);
        assert_int_equal(p->delay_ns[TASK_DELAY_RECLAIM], 5 * MS);
        assert_int_equal(p->origin, PROCESS_MEASURED);
        assert_null(snapshot_find_process(&s, 200));
        assert_int_equal(s.n, 0);
        /* Threads, from each process's /proc/<pid>/task: 100 and 101, 200 and 201 (102, still in
         * the fixture's cgroup.threads, has ended). */
        assert_int_equal(s.listed, 4);
        assert_int_equal(s.exited, 0);
        assert_int_equal(s.errors, 1);
        assert_int_equal(s.first_error, -EPERM);
        assert_int_equal(s.taskstats_version, 16);

        /* States from the fixture's stat files of those threads: R, D, R, I. */
        assert_true(s.has_states);
        assert_int_equal(s.states.source, TASK_STATE_SOURCE_PROCFS);
        assert_int_equal(s.states.running, 2);
        assert_int_equal(s.states.uninterruptible, 1);
        assert_int_equal(s.states.stopped, 0);
        assert_int_equal(s.states.sleeping, 1);
        assert_int_equal(s.states.read, 4);
        assert_false(s.states.scaled);
        assert_int_equal(s.states.io_wait, -1);
        /* The process of the thread in D is kept for the looks (a wait that has not ended). */
        assert_int_equal(s.blocked.n, 1);
        assert_int_equal(s.blocked.pids[0], 100);

        /* Pressure of the cgroup itself; irq.pressure is absent in the fixture. */
        assert_true(s.has_pressure[PSI_RESOURCE_CPU]);
        assert_int_equal(s.pressure[PSI_RESOURCE_CPU].line[PSI_STALL_SOME].total_us, 5000000);
        assert_false(s.has_pressure[PSI_RESOURCE_IRQ]);

        /* The detail of one process: each of its threads that taskstats still answers for. */
        pid_t web = 100, none = 4242;
        assert_int_equal(snapshot_take_threads(&s, &scope, (pid_t[]) { none, web }, 2), 0);
        assert_int_equal(s.n, 2);
        assert_int_equal(s.threads[0].tid, 100);
        assert_int_equal(s.threads[1].tid, 101);
        assert_int_equal(s.threads[1].tgid, 100);
        assert_string_equal(s.threads[1].comm, "worker");
        assert_null(snapshot_find(&s, 102));
        assert_true(s.threads_mono_us > 0);

        /* Taken again: buffers reused, same answer, no states when not asked, no threads. */
        assert_int_equal(snapshot_take(&s, &scope, false), 0);
        assert_int_equal(s.n_procs, 1);
        assert_int_equal(s.n, 0);
        assert_false(s.has_states);

        /* The processes alone: no pressure read, no threads listed. */
        assert_int_equal(snapshot_take_processes(&s, &scope), 0);
        assert_int_equal(s.n_procs, 1);
        assert_int_equal(s.listed, 0);

        snapshot_done(&s);
        close(fd);
}

/* A process listed, then gone before its TGID query: counted as exited, not as an error. */
static void test_process_gone_before_query(void **state) {
        Env *env = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts };
        int fd;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        env->tasks[0].ended = env->tasks[1].ended = true;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        env->tasks[0].ended = env->tasks[1].ended = false;
        assert_int_equal(s.processes, 1);
        assert_int_equal(s.n_procs, 0);
        assert_int_equal(s.exited, 1);
        assert_int_equal(s.errors, 0);
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
        /* Process 100 is ours: not measured, and its threads 100 and 101 not counted. */
        assert_int_equal(s.n_procs, 0);
        assert_int_equal(s.processes, 0);
        assert_int_equal(s.listed, 0);
        snapshot_done(&s);
        close(fd);
}

/* A threaded cgroup: no cgroup.procs of its own; its threads name their processes (Tgid), each
 * counted with the threads it has there and measured whole. */
static void test_threaded_cgroup(void **state) {
        Env *env = *state;
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[512];
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts };
        Snapshot s = {};
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/cgroup.type", dir);
        assert_non_null(f = fopen(path, "we"));
        fputs("threaded\n", f);
        assert_int_equal(fclose(f), 0);
        snprintf(path, sizeof path, "%s/cgroup.threads", dir);
        assert_non_null(f = fopen(path, "we"));
        fputs("101\n201\n100\n", f); /* two of web's threads, one of batch's */
        assert_int_equal(fclose(f), 0);
        scope.cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(cgroup_is_threaded(scope.cgroup_fd));

        env->tasks[3] = (FakeTask) { .tid = 200, .stats = fake_task_stats(200, 200, "batch", NULL) };
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        env->tasks[3] = (FakeTask) { .tid = 200, .error = -EPERM };
        assert_int_equal(s.processes, 2);
        assert_int_equal(s.listed, 3);
        assert_non_null(snapshot_find_process(&s, 100));
        assert_non_null(snapshot_find_process(&s, 200));
        assert_int_equal(snapshot_find_process(&s, 100)->delay_ns[TASK_DELAY_CPU], 301 * MS);

        snapshot_done(&s);
        close(scope.cgroup_fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void test_node_wide_and_without_taskstats(void **state) {
        Env *env = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts, .cgroup_fd = -1 };

        /* /proc's numeric entries. The fixture has a directory per thread at its top (real
         * procfs lists only processes there), so 101 and 201 are asked for too, and answered
         * for their whole processes as the kernel does. */
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_int_equal(s.processes, 6);
        assert_non_null(snapshot_find_process(&s, 1));
        assert_non_null(snapshot_find_process(&s, 100));
        assert_int_equal(snapshot_find_process(&s, 101)->delay_ns[TASK_DELAY_CPU], 301 * MS);
        assert_null(snapshot_find_process(&s, 102)); /* ended */
        assert_int_equal(s.exited, 1);
        assert_int_equal(s.listed, 6); /* /proc/<pid>/task of each */
        assert_int_equal(s.states.running + s.states.sleeping + s.states.uninterruptible + s.states.stopped, 6);
        /* Node-wide pressure comes from /proc/pressure. */
        assert_int_equal(s.pressure[PSI_RESOURCE_MEMORY].line[PSI_STALL_FULL].total_us, 6000000);

        scope.taskstats = NULL;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_int_equal(s.n_procs, 0);
        assert_int_equal(s.processes, 6);
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

        /* A directory without cgroup.procs: what a removed cgroup looks like to a reader. */
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

/* A generated cgroup of n threads in processes of per threads, its states counted. */
static void state_counts_by(int n, int per, FakeTreeState state_fn, TaskStateCounts *ret, unsigned expect[3]) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[256];
        Sysroot sysroot = { .root_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        SampleScope scope = { .sysroot = &sysroot };
        Snapshot s = {};

        expect[0] = expect[1] = expect[2] = 0;
        for (int tid = 1000; tid < 1000 + n; tid++) {
                char st = state_fn(tid);
                expect[st == 'R' ? 0 : st == 'D' ? 1 : 2]++;
        }
        assert_int_equal(fake_tree_make(dir, 1000, n, per, state_fn), 0);
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

static void state_counts_of(int n, int per, TaskStateCounts *ret, unsigned expect[3]) {
        state_counts_by(n, per, state_of, ret, expect);
}

/* Whole processes in one state, as a busy or blocked service is: here the second of ten
 * 100-thread processes is in D, all others sleep. */
static char state_of_process(int tid) {
        return (tid - 1000) / 100 == 1 ? 'D' : 'S';
}

static void test_states_exact_then_sampled(void **state) {
        TaskStateCounts c;
        unsigned want[3];

        /* Up to SAMPLE_STATES_MAX threads every state is read. */
        state_counts_of(200, 10, &c, want);
        assert_int_equal(c.read, 200);
        assert_false(c.scaled);
        assert_int_equal(c.running, want[0]);
        assert_int_equal(c.uninterruptible, want[1]);
        assert_int_equal(c.sleeping, want[2]);

        /* Above it, 256 threads evenly spaced over all of them, process after process, each
         * standing for its share: 256 reads, scaled to the whole, whatever the processes' sizes. */
        static const int per[] = { 100, 1000, 10 };
        for (size_t k = 0; k < ELEMENTSOF(per); k++) {
                state_counts_of(1000, per[k], &c, want);
                assert_int_equal(c.read, 256);
                assert_true(c.scaled);
                assert_in_range(c.running + c.uninterruptible + c.sleeping, 998, 1002);
                assert_in_range(c.running, want[0] - 60, want[0] + 60);
                assert_in_range(c.uninterruptible, want[1] - 45, want[1] + 45);
                assert_in_range(c.sleeping, want[2] - 60, want[2] + 60);
        }

        /* States that go by process: every process is read in proportion to its threads, so one
         * blocked process of 100 is counted near its 100 (a sample of 16 processes, 16 threads
         * each, read it once at weight 62.5, or missed it). */
        state_counts_by(1000, 100, state_of_process, &c, want);
        assert_int_equal(want[1], 100);
        assert_int_equal(c.read, 256);
        assert_in_range(c.uninterruptible, 95, 105);
        assert_int_equal(c.running, 0);
        assert_in_range(c.sleeping, 895, 905);
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
 * from its cached time, which a slow A (here one process at 160 ms a query) leaves behind. */
static void test_sampler_window_after_a(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        SampleScope scope = { .sysroot = env->sysroot, .taskstats = env->ts };
        Sampler s;
        int fd, r = 1;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        fake_taskstats_set_delay(env->ts, 160 * 1000);
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

/* A whole sample on a loop, the delays growing with every query: processes ranked over A..B,
 * the leaders' threads measured from the middle on, and their deltas within the process's. */
static void test_sampler_process_first(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        SampleScope scope = {
                .sysroot = env->sysroot, .taskstats = env->ts, .resource = PSI_RESOURCE_CPU, .detail = 1
        };
        Sampler s;
        int fd, r = 1;

        assert_int_equal(sysroot_open_cgroup(env->sysroot, "app", &fd), 0);
        scope.cgroup_fd = fd;
        env->tasks[3] = (FakeTask) { .tid = 200, .stats = fake_task_stats(200, 200, "batch", NULL) }; /* answers here */
        fake_taskstats_set_growth(env->ts, 1 * MS);
        sampler_init(&s, loop, NULL, on_sample_done, &r);
        assert_int_equal(sampler_start(&s, &scope, 200), 0);
        ev_run(loop, 0);
        assert_int_equal(r, 0);
        assert_ptr_equal(s.threads_base, &s.m);
        assert_int_equal(s.ranking.n_procs, 2);
        /* 200 (tasks 200, 201: the 4th and 5th) grows faster than 100 (the 1st and 2nd). */
        assert_int_equal(s.ranking.procs[0].tgid, 200);
        assert_int_equal(s.ranking.procs[1].tgid, 100);
        /* Candidates: twice the detail. Both have their threads, within their own totals. */
        assert_int_equal(s.n_candidates, 2);
        for (size_t i = 0; i < s.ranking.n_procs; i++) {
                const ProcessDelta *p = &s.ranking.procs[i];
                uint64_t sum = 0;

                assert_int_equal(p->n, 2);
                for (size_t k = 0; k < p->n; k++)
                        sum += s.ranking.threads[p->first + k].delay_ns[TASK_DELAY_CPU];
                assert_true(sum > 0);
                assert_true(sum <= p->delay_ns[TASK_DELAY_CPU]);
        }

        /* A window of 0: lifetime totals, the leader's threads measured once. */
        assert_int_equal(sampler_start(&s, &scope, 0), 0);
        assert_int_equal(r, 0);
        assert_null(s.threads_base);
        assert_int_equal(s.ranking.n_procs, 2);
        assert_int_equal(s.ranking.procs[0].n, 2);
        assert_int_equal(s.ranking.procs[1].n, 0); /* detail 1: only the leader */

        fake_taskstats_set_growth(env->ts, 0);
        env->tasks[3] = (FakeTask) { .tid = 200, .error = -EPERM };
        sampler_free(&s);
        ev_loop_destroy(loop);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_snapshot),
                cmocka_unit_test(test_excludes_the_agent),
                cmocka_unit_test(test_node_wide_and_without_taskstats),
                cmocka_unit_test(test_threaded_cgroup),
                cmocka_unit_test(test_cgroup_gone),
                cmocka_unit_test(test_states_exact_then_sampled),
                cmocka_unit_test(test_scale),
                cmocka_unit_test(test_process_gone_before_query),
                cmocka_unit_test(test_sampler_window_after_a),
                cmocka_unit_test(test_sampler_process_first),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
