/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/sample.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/test-util.h"

#define MS 1000000ULL

typedef struct Env {
        Sysroot *sysroot;
        FakeTask tasks[6];
        TaskstatsSource *ts;
} Env;

static int setup(void **state) {
        static Env env;
        static const uint64_t busy[_TASK_DELAY_MAX] = { 300 * MS, 0, 0, 5 * MS },
                              calm[_TASK_DELAY_MAX] = { 1 * MS };

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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_snapshot),
                cmocka_unit_test(test_excludes_the_agent),
                cmocka_unit_test(test_node_wide_and_without_taskstats),
                cmocka_unit_test(test_cgroup_gone),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
