/* SPDX-License-Identifier: MIT */
/* No heap allocation per thread once a watch's buffers are sized: the whole sample path (two
 * process snapshots with states, the leaders' threads at both ends, ranking, incident line) on
 * generated cgroups of 10 threads and of 10,000 threads in 100 processes makes the same number
 * of malloc/calloc/realloc calls from our code (counted through the linker's --wrap), and that
 * number is small. jansson's own allocations, which scale with
 * the reported processes (top), not with threads, are not counted. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "incident/compose.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static unsigned long allocs;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n) {
        allocs++;
        return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
        allocs++;
        return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
        allocs++;
        return __real_realloc(p, n);
}

static char sleeping(int tid) {
        return tid % 7 == 0 ? 'R' : 'S';
}

/* Allocations made by one sample after the buffers were reserved for n threads. */
static unsigned long sample_allocs(int n, int per) {
        static const uint64_t d[_TASK_DELAY_MAX] = { 1000000 };
        static const HostInfo host = { .hostname = "node-1", .kernel = "6.18.0", .boot_id = "b" };
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[256];
        Sysroot sysroot = { .root_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        FakeTask *tasks = calloc((size_t) n, sizeof *tasks);
        Snapshot a = {}, b = {};
        Ranking ranking = {};
        ProcessInfo procs[10];
        pid_t top[10];
        size_t n_top;
        unsigned long before, used;
        char *line = NULL;
        size_t len;

        assert_non_null(tasks);
        for (int i = 0; i < n; i++)
                tasks[i] = (FakeTask) { .tid = 1000 + i,
                                        .stats = fake_task_stats(1000 + i, 1000 + i / per * per, "t", d) };
        TaskstatsSource *ts = fake_taskstats_new(tasks, (size_t) n);
        assert_int_equal(fake_tree_make(dir, 1000, n, per, sleeping), 0);
        snprintf(path, sizeof path, "%s/proc", dir);
        sysroot.proc_fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        SampleScope scope = { .sysroot = &sysroot,
                              .taskstats = ts,
                              .cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC),
                              .resource = PSI_RESOURCE_CPU,
                              .detail = 10 };
        assert_true(sysroot.proc_fd >= 0 && scope.cgroup_fd >= 0);

        /* What the agent does when it arms the watch. */
        size_t procs_n = (size_t) ((n + per - 1) / per);
        assert_int_equal(snapshot_reserve(&a, (size_t) n, procs_n), 0);
        assert_int_equal(snapshot_reserve(&b, (size_t) n, procs_n), 0);
        assert_int_equal(ranking_reserve(&ranking, (size_t) n, procs_n), 0);

        /* The sampler's steps, the middle's folded into A (the same calls). */
        before = allocs;
        assert_int_equal(snapshot_take(&a, &scope, true), 0);
        assert_int_equal(ranking_build(&ranking, NULL, &a, PSI_RESOURCE_CPU), 0);
        n_top = ranking_top_pids(&ranking, 10, top);
        assert_int_equal(snapshot_take_threads(&a, &scope, top, n_top), 0);
        for (int i = 0; i < n; i++)
                tasks[i].stats.delay_ns[TASK_DELAY_CPU] += (uint64_t) i * 1000;
        assert_int_equal(snapshot_take(&b, &scope, false), 0);
        assert_int_equal(snapshot_take_threads(&b, &scope, top, n_top), 0);
        assert_int_equal(ranking_build(&ranking, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(ranking_add_threads(&ranking, &a, &b, PSI_RESOURCE_CPU), 0);
        assert_int_equal(report_build_line(&(Report) { .sysroot = &sysroot,
                                                       .host = &host,
                                                       .type = "pressure",
                                                       .id = "x",
                                                       .resource = PSI_RESOURCE_CPU,
                                                       .top = 10,
                                                       .a = &a,
                                                       .b = &b,
                                                       .ranking = &ranking,
                                                       .procs = procs },
                                           &line, &len),
                         0);
        used = allocs - before;
        assert_int_equal(a.listed, n);
        assert_int_equal(a.processes, procs_n);
        assert_true(a.n > 0 && a.n <= (size_t) n);
        assert_non_null(strstr(line, "\"most_delayed\":[{"));

        free(line);
        snapshot_done(&a);
        snapshot_done(&b);
        ranking_done(&ranking);
        close(scope.cgroup_fd);
        close(sysroot.proc_fd);
        taskstats_source_free(ts);
        free(tasks);
        fake_tree_remove(dir);
        return used;
}

static void test_no_allocation_per_thread(void **state) {
        unsigned long small = sample_allocs(10, 10), large = sample_allocs(10000, 100);

        print_message("allocations in one sample: %lu at 10 threads, %lu at 10,000\n", small, large);
        assert_int_equal(large, small);
        assert_true(small < 64);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_allocation_per_thread),
        };

        log_set_level(LOG_LEVEL_ERROR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
