/* SPDX-License-Identifier: MIT */
/* The sampler (sampling/sampler.c): a whole sample of a scope on a loop, snapshot A, the window,
 * snapshot B, the processes ranked over A..B and the leaders' threads measured; the window counted
 * from A's end; a window of 0 (lifetime totals). */
#include <errno.h>
#include <unistd.h>

#include "sampling/sampler.h"
#include "tests/unit/fake-host.h"
#include "tests/unit/test-util.h"

static void on_sample_done(Sampler *s, int r) {
        int *ret = s->userdata;

        *ret = r;
}

/* The window runs sample_ms from the end of snapshot A, however long A took: libev counts timers
 * from its cached time, which a slow A (here one process at 160 ms a query) leaves behind. */
static void test_sampler_window_after_a(void **state) {
        FakeHost *host = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        SampleScope scope = { .sysroot = host->sysroot, .taskstats = host->ts };
        Sampler s;
        int fd, r = 1;

        assert_int_equal(sysroot_open_cgroup(host->sysroot, "app/web", &fd), 0);
        scope.cgroup_fd = fd;
        fake_taskstats_set_delay(host->ts, 160 * 1000);
        sampler_init(&s, loop, NULL, on_sample_done, &r);
        assert_int_equal(sampler_start(&s, &scope, 100), 0);
        usec_t a_end = now_usec(CLOCK_MONOTONIC);
        assert_true(s.a_cost_us >= 150 * 1000);
        ev_run(loop, 0);
        fake_taskstats_set_delay(host->ts, 0);
        assert_int_equal(r, 0);
        assert_true(s.b_start_us >= a_end + 95 * 1000);
        sampler_free(&s);
        ev_loop_destroy(loop);
        close(fd);
}

/* A whole sample on a loop, the delays growing with every query: processes ranked over A..B,
 * the leaders' threads measured from the middle on, and their deltas within the process's. */
static void test_sampler_process_first(void **state) {
        FakeHost *host = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        SampleScope scope = {
                .sysroot = host->sysroot, .taskstats = host->ts, .resource = PSI_RESOURCE_CPU, .detail = 1
        };
        Sampler s;
        int fd, r = 1;

        assert_int_equal(sysroot_open_cgroup(host->sysroot, "app", &fd), 0);
        scope.cgroup_fd = fd;
        host->tasks[3] =
                (FakeTask) { .tid = 200, .stats = fake_task_stats(200, 200, "batch", NULL) }; /* answers here */
        fake_taskstats_set_growth(host->ts, 1 * NS_PER_MS);
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

        fake_taskstats_set_growth(host->ts, 0);
        host->tasks[3] = (FakeTask) { .tid = 200, .error = -EPERM };
        sampler_free(&s);
        ev_loop_destroy(loop);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sampler_window_after_a),
                cmocka_unit_test(test_sampler_process_first),
        };
        return cmocka_run_group_tests(tests, fake_host_setup_busy, fake_host_teardown);
}
