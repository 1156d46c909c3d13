/* SPDX-License-Identifier: MIT */
/* No heap allocation per thread once a watch's buffers are sized: the real Sampler run on a loop
 * (snapshot A with states, the middle's processes and the candidates' threads, B, the exits
 * merged, ranking, the culprit pass over a scope of its own, "on what" with its looks, the hot
 * cgroups, the identities) and the incident line, on generated cgroups of 10 threads and of
 * 10,000 threads in 100 processes, make the same number of malloc/calloc/realloc calls from our
 * code once the buffers are sized (counted through the linker's --wrap): ALLOCS_PER_SAMPLE, as
 * docs/incident.md says (How it works, "The agent protects itself").
 * jansson's and libev's own allocations, which do not scale with threads, are not counted. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "incident/incident.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-scope.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

/* What one sample allocates once its buffers are sized (the Sampler's preallocated when the watch
 * is armed, the culprit pass's by its first sample, the "on what" looks from the pool): the
 * blocked threads' grouping (blocked_group(): 3) and the incident line (incident_dump_line()). */
#define ALLOCS_PER_SAMPLE 4

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

/* Some threads blocked, so "on what" groups them. */
static char state_of(int tid) {
        return tid % 7 == 0 ? 'R' : tid % 5 == 0 ? 'D' : 'S';
}

static void on_done(Sampler *s, int r) {
        *(int *) s->userdata = r;
}

/* Allocations made by each of two samples after the buffers were reserved for n threads, as the
 * agent reserves them when it arms a watch: the first sample's in ret[0], the second's in ret[1]. */
static void sample_allocs(int n, int per, unsigned long ret[2]) {
        static const uint64_t d[_TASK_DELAY_MAX] = { 1000000 };
        static const HostInfo host = { .hostname = "node-1", .kernel = "6.18.0", .boot_id = "b" };
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        FakeScope fs;
        FakeTask *tasks = calloc((size_t) n, sizeof *tasks);
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        ProcessInfoBuffer ids = { .items = calloc(20, sizeof(ProcessInfo)), .cap = 20 };
        OnWhat onwhat = {};
        Sampler s;
        size_t reserved;
        int r = 1;

        assert_non_null(tasks);
        assert_non_null(loop);
        assert_non_null(ids.items);
        for (int i = 0; i < n; i++)
                tasks[i] = (FakeTask) { .tid = 1000 + i,
                                        .stats = fake_task_stats(1000 + i, 1000 + i / per * per, "t", d) };
        TaskstatsSource *ts = fake_taskstats_new(tasks, (size_t) n);
        fake_taskstats_set_growth(ts, 1000);
        assert_int_equal(fake_tree_make(dir, 1000, n, per, state_of), 0);
        fake_scope_open(&fs, dir, ts, &onwhat, &ids);

        /* What the agent does when it arms the watch, and at start for "on what". */
        sampler_init(&s, loop, NULL, on_done, &r);
        assert_int_equal(sampler_preallocate(&s, &fs.scope, &reserved), 0);
        assert_true(reserved >= (size_t) n);
        assert_int_equal(onwhat_init(&onwhat), 0);

        for (int k = 0; k < 2; k++) {
                json_t *j = NULL;
                char *line = NULL;
                size_t len;
                unsigned long before = allocs;

                r = 1;
                assert_int_equal(sampler_start(&s, &fs.scope, 2), 0);
                ev_run(loop, 0);
                assert_int_equal(r, 0);
                assert_false(s.partial);
                assert_int_equal(incident_build(&s.result,
                                                &(IncidentContext) { .type = "pressure", .id = "x", .host = &host },
                                                &j),
                                 0);
                assert_int_equal(incident_dump_line(j, &line, &len), 0);
                ret[k] = allocs - before;
                json_decref(j);
                sampler_drop_onwhat(&s);

                /* The whole path ran: the middle's threads, the culprits, the looks. */
                assert_ptr_equal(s.result.threads_base, &s.m);
                assert_int_equal(s.a.listed, n);
                assert_int_equal(s.a.processes, (n + per - 1) / per);
                assert_non_null(s.result.culprits);
                assert_true(s.result.culprits->n_procs > 0);
                assert_true(onwhat.n_looks > 0);
                assert_non_null(strstr(line, "\"most_delayed\":[{"));
                assert_non_null(strstr(line, "\"culprits\":{"));
                free(line);
        }

        sampler_free(&s);
        onwhat_done(&onwhat);
        ev_loop_destroy(loop);
        fake_scope_close(&fs);
        taskstats_source_free(ts);
        free(ids.items);
        free(tasks);
        fake_tree_remove(dir);
}

static void test_no_allocation_per_thread(void **state) {
        unsigned long small[2], large[2];

        sample_allocs(10, 10, small);
        sample_allocs(10000, 100, large);
        print_message("allocations in one sample: %lu then %lu at 10 threads, %lu then %lu at 10,000\n", small[0],
                      small[1], large[0], large[1]);
        /* The first sample also sizes the culprit pass's buffers, not preallocated (its scope is
         * decided at the wakeup): they grow with its processes, never per thread. */
        assert_true(small[0] < 64 && large[0] < 160);
        assert_int_equal(small[1], ALLOCS_PER_SAMPLE);
        assert_int_equal(large[1], ALLOCS_PER_SAMPLE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_allocation_per_thread),
        };

        log_set_level(LOG_LEVEL_ERROR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
