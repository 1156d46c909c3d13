/* SPDX-License-Identifier: MIT */
/* The snapshot (sampling/snapshot.c) of a scope on the hybrid fixture: processes measured first,
 * their threads listed, the detail of the processes asked for, the cgroup's pressure, and the task
 * states, read exactly up to SAMPLE_STATES_MAX threads and sampled evenly above it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sampling/rank.h"
#include "sampling/result.h"
#include "sampling/snapshot.h"
#include "tests/unit/fake-host.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void test_cgroup_snapshot(void **state) {
        FakeHost *host = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts, .exclude_tgid = 0 };
        int fd;

        assert_int_equal(sysroot_open_cgroup(host->sysroot, "app", &fd), 0);
        scope.cgroup_fd = fd;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);

        /* Processes 100 (web: threads 100 and 101 summed; 102 is gone) and 200 (refused: an
         * error, not an exit). No thread is measured one by one. */
        assert_int_equal(s.processes, 2);
        assert_int_equal(s.n_procs, 1);
        const ProcessDelays *p = snapshot_find_process(&s, 100);
        assert_non_null(p);
        assert_int_equal(p->delay_ns[TASK_DELAY_CPU], 301 * NS_PER_MS);
        assert_int_equal(p->delay_ns[TASK_DELAY_RECLAIM], 5 * NS_PER_MS);
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

        /* The processes alone: no pressure read, no threads listed, no states. */
        assert_int_equal(snapshot_take_processes(&s, &scope, false), 0);
        assert_int_equal(s.n_procs, 1);
        assert_int_equal(s.listed, 0);
        assert_false(s.has_states);
        assert_int_equal(s.blocked.n, 0);
        /* With their states (the sampler's middle look): the process of the thread in D again. */
        assert_int_equal(snapshot_take_processes(&s, &scope, true), 0);
        assert_int_equal(s.n_procs, 1);
        assert_int_equal(s.listed, 4);
        assert_true(s.has_states);
        assert_int_equal(s.states.uninterruptible, 1);
        assert_int_equal(s.blocked.n, 1);
        assert_int_equal(s.blocked.pids[0], 100);

        snapshot_done(&s);
        close(fd);
}

/* A process listed, then gone before its TGID query: counted as exited, not as an error. */
static void test_process_gone_before_query(void **state) {
        FakeHost *host = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts };
        int fd;

        assert_int_equal(sysroot_open_cgroup(host->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        host->tasks[0].ended = host->tasks[1].ended = true;
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        host->tasks[0].ended = host->tasks[1].ended = false;
        assert_int_equal(s.processes, 1);
        assert_int_equal(s.n_procs, 0);
        assert_int_equal(s.exited, 1);
        assert_int_equal(s.errors, 0);
        snapshot_done(&s);
        close(fd);
}

static void test_excludes_the_agent(void **state) {
        FakeHost *host = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts, .exclude_tgid = 100 };
        int fd;

        assert_int_equal(sysroot_open_cgroup(host->sysroot, "app/web", &fd), 0);
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
        FakeHost *host = *state;
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts };
        Snapshot s = {};

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "cgroup.type", "threaded\n"), 0);
        /* two of web's threads, one of batch's */
        assert_int_equal(fake_tree_write(dir, "cgroup.threads", "101\n201\n100\n"), 0);
        scope.cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(cgroup_is_threaded(scope.cgroup_fd));

        host->tasks[3] = (FakeTask) { .tid = 200, .stats = fake_task_stats(200, 200, "batch", NULL) };
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        host->tasks[3] = (FakeTask) { .tid = 200, .error = -EPERM };
        assert_int_equal(s.processes, 2);
        assert_int_equal(s.listed, 3);
        assert_non_null(snapshot_find_process(&s, 100));
        assert_non_null(snapshot_find_process(&s, 200));
        assert_int_equal(snapshot_find_process(&s, 100)->delay_ns[TASK_DELAY_CPU], 301 * NS_PER_MS);

        snapshot_done(&s);
        close(scope.cgroup_fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void test_node_wide_and_without_taskstats(void **state) {
        FakeHost *host = *state;
        Snapshot s = {};
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts, .cgroup_fd = -1 };

        /* /proc's numeric entries. The fixture has a directory per thread at its top (real
         * procfs lists only processes there), so 101 and 201 are asked for too, and answered
         * for their whole processes as the kernel does. */
        assert_int_equal(snapshot_take(&s, &scope, true), 0);
        assert_int_equal(s.processes, 6);
        assert_non_null(snapshot_find_process(&s, 1));
        assert_non_null(snapshot_find_process(&s, 100));
        assert_int_equal(snapshot_find_process(&s, 101)->delay_ns[TASK_DELAY_CPU], 301 * NS_PER_MS);
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
        FakeHost *host = *state;
        Snapshot s = {};
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts };

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

/* The one builder of a sample's scope (the agent's watches and `psidiag snapshot`): the agent
 * itself left out, the cgroups walked only when ranked on one resource. */
static void test_sample_scope_make(void **state) {
        Sysroot sysroot = {};
        TaskstatsSource ts = {};
        ProcessInfoBuffer ids = {};
        const SampleOwner o = { .sysroot = &sysroot, .taskstats = &ts, .identities = &ids };
        SampleScope s;

        (void) state;
        s = sample_scope_make(&o, 7, "a/b", PSI_RESOURCE_IO, 5);
        assert_ptr_equal(s.sysroot, &sysroot);
        assert_ptr_equal(s.taskstats, &ts);
        assert_int_equal(s.cgroup_fd, 7);
        assert_string_equal(s.cgroup_path, "a/b");
        assert_int_equal(s.exclude_tgid, getpid());
        assert_int_equal(s.pid, 0);
        assert_true(s.walk_cgroups);
        assert_int_equal(s.cgroups_resource, PSI_RESOURCE_IO);
        assert_int_equal(s.resource, PSI_RESOURCE_IO);
        assert_int_equal(s.detail, 5);
        assert_int_equal(s.stall, PSI_STALL_SOME);
        assert_ptr_equal(s.identities, &ids);
        assert_null(s.containers);
        assert_null(s.culprit);
        assert_null(s.limits_cgroup);
        assert_null(s.onwhat);

        s = sample_scope_make(&o, -1, NULL, RANK_SCORE_ALL, 3);
        assert_int_equal(s.cgroup_fd, -1);
        assert_null(s.cgroup_path);
        assert_false(s.walk_cgroups);
        assert_int_equal(s.cgroups_resource, PSI_RESOURCE_CPU);
        assert_int_equal(s.resource, RANK_SCORE_ALL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_snapshot),
                cmocka_unit_test(test_excludes_the_agent),
                cmocka_unit_test(test_node_wide_and_without_taskstats),
                cmocka_unit_test(test_threaded_cgroup),
                cmocka_unit_test(test_cgroup_gone),
                cmocka_unit_test(test_states_exact_then_sampled),
                cmocka_unit_test(test_process_gone_before_query),
                cmocka_unit_test(test_sample_scope_make),
        };
        return cmocka_run_group_tests(tests, fake_host_setup_busy, fake_host_teardown);
}
