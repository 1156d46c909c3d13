/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "tests/unit/fake-host.h"
#include "tests/unit/test-util.h"

static void fake_host_open(FakeHost *h, const char *root, const FakeTask *tasks, size_t n) {
        assert_true(n <= FAKE_HOST_TASKS_MAX);
        *h = (FakeHost) { .n_tasks = n };
        for (size_t i = 0; i < n; i++)
                h->tasks[i] = tasks[i];
        assert_int_equal(sysroot_open(root, &h->sysroot), 0);
        h->ts = fake_taskstats_new(h->tasks, n);
        assert_non_null(h->ts);
}

void fake_host_open_busy(FakeHost *h) {
        static const uint64_t busy[_TASK_DELAY_MAX] = { 300 * NS_PER_MS, 0, 0, 5 * NS_PER_MS },
                              calm[_TASK_DELAY_MAX] = { 1 * NS_PER_MS };

        fake_host_open(h, fixture("hybrid"),
                       (FakeTask[]) {
                               { .tid = 100, .stats = fake_task_stats(100, 100, "web", busy) },
                               { .tid = 101, .stats = fake_task_stats(101, 100, "worker", calm) },
                               { .tid = 102, .error = -ESRCH },
                               { .tid = 200, .error = -EPERM },
                               { .tid = 201, .stats = fake_task_stats(201, 200, "cruncher", calm) },
                               { .tid = 1, .stats = fake_task_stats(1, 1, "systemd", calm) },
                       },
                       6);
}

void fake_host_open_calm(FakeHost *h, const char *root) {
        static const uint64_t calm[_TASK_DELAY_MAX] = { 1 * NS_PER_MS };

        fake_host_open(h, root,
                       (FakeTask[]) {
                               { .tid = 100, .stats = fake_task_stats(100, 100, "web", calm) },
                               { .tid = 101, .stats = fake_task_stats(101, 100, "worker", calm) },
                               { .tid = 200, .stats = fake_task_stats(200, 200, "batch", calm) },
                       },
                       3);
}

void fake_host_close(FakeHost *h) {
        h->sysroot = sysroot_free(h->sysroot);
        h->ts = taskstats_source_free(h->ts);
}

int fake_host_setup_busy(void **state) {
        static FakeHost host;

        fake_host_open_busy(&host);
        *state = &host;
        return 0;
}

int fake_host_teardown(void **state) {
        fake_host_close(*state);
        return 0;
}
