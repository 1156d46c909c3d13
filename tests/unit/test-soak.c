/* SPDX-License-Identifier: MIT */
/* No leak over 10,000 samples: the real Sampler on a loop (snapshot A with states, the middle's
 * processes and candidates' threads, B, the exits merged, ranking, the culprit pass over a scope
 * of its own, "on what" with its looks of blocked threads, the hot cgroups, the identities), the
 * incident and its write to an output, 10,000 times on a generated cgroup with the fake taskstats,
 * the delays and cpu time growing with every query. The heap in use after the last sample must
 * equal the heap after the first hundred (reused buffers only grow to the largest sample, then
 * stay). Heap accounting comes from glibc (mallinfo2) or, under ASan, from the sanitizer's
 * allocator; under valgrind (a tenth of the samples) memcheck's leak check judges instead.
 *
 * mallinfo2 counts chunks parked in glibc's per-thread cache (tcache) as in use, so with it on the
 * figure moves by a chunk or two with the order of the last frees: one CI run saw 160 bytes "grow"
 * that way. The test therefore runs itself with the tcache off (GLIBC_TUNABLES, set and re-exec'd
 * in main), where the figure is exactly the bytes of live chunks. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if HAVE_VALGRIND_H
#include <valgrind/valgrind.h>
#else
/* Without valgrind's header (a host or an architecture without valgrind) the test cannot be under
 * it either. */
#define RUNNING_ON_VALGRIND 0
#endif

#include "base/log.h"
#include "sinks/registry.h"
#include "sinks/sink.h"
#include "incident/incident.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-scope.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#if defined(__SANITIZE_ADDRESS__)
/* From the sanitizer runtime (gcc ships no allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void) {
        return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
}
#endif

#define SAMPLES 10000
#define WARMUP 100

/* Two processes of three threads, one of two, some threads blocked. */
static char state_of(int tid) {
        return tid % 3 == 0 ? 'D' : 'S';
}

static void on_done(Sampler *s, int r) {
        *(int *) s->userdata = r;
}

static void test_no_growth_over_10000_samples(void **state) {
        static const uint64_t d0[_TASK_DELAY_MAX] = { 1 * NS_PER_MS };
        static const HostInfo host = { .hostname = "node-1", .kernel = "6.18.0", .boot_id = "b" };
        FakeTask tasks[] = {
                { .tid = 100, .stats = fake_task_stats(100, 100, "web", d0) },
                { .tid = 101, .stats = fake_task_stats(101, 100, "worker", d0) },
                { .tid = 102, .error = -ESRCH },
                { .tid = 103, .stats = fake_task_stats(103, 103, "batch\n\"x\xff", d0) },
                { .tid = 104, .stats = fake_task_stats(104, 103, "cruncher", d0) },
                { .tid = 105, .stats = fake_task_stats(105, 103, "cruncher", d0) },
                { .tid = 106, .stats = fake_task_stats(106, 106, "log", d0) },
                { .tid = 107, .stats = fake_task_stats(107, 106, "log", d0) },
        };
        char dir[] = "/tmp/psidiag-soak-XXXXXX";
        FakeScope fs;
        TaskstatsSource *ts = fake_taskstats_new(tasks, ELEMENTSOF(tasks));
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        ProcessInfoBuffer ids = { .items = calloc(20, sizeof(ProcessInfo)), .cap = 20 };
        OnWhat onwhat = {};
        Sampler s;
        Sink *out = NULL;
        char why[160];
        size_t base = 0, bytes = 0;
        unsigned samples = RUNNING_ON_VALGRIND ? SAMPLES / 10 : SAMPLES;
        int r;

        assert_non_null(loop);
        assert_non_null(ids.items);
        fake_taskstats_set_growth(ts, 1 * NS_PER_MS);
        assert_int_equal(fake_tree_make(dir, 100, 8, 3, state_of), 0);
        fake_scope_open(&fs, dir, ts, &onwhat, &ids);
        assert_int_equal(sink_open("/dev/null", SINK_FORMAT_INCIDENT, &out, why, sizeof why), 0);
        sampler_init(&s, loop, NULL, on_done, &r);

        for (unsigned i = 0; i < samples; i++) {
                json_t *incident = NULL;
                char *line = NULL;
                size_t len;

                r = 1;
                assert_int_equal(sampler_start(&s, &fs.scope, 1), 0);
                ev_run(loop, 0);
                assert_int_equal(r, 0);
                assert_false(s.partial);
                assert_non_null(s.result.culprits);
                assert_int_equal(incident_build(&s.result,
                                                &(IncidentContext) {
                                                        .type = "pressure",
                                                        .id = "soak",
                                                        .host = &host,
                                                        .has_trigger = true,
                                                        .trigger_cgroup = "app",
                                                        .trigger = { PSI_RESOURCE_CPU, PSI_STALL_SOME, 50000, 2000000 },
                                                        .trigger_spec = "cpu some 50ms 2s",
                                                },
                                                &incident),
                                 0);
                assert_int_equal(incident_dump_line(incident, &line, &len), 0);
                assert_non_null(strstr(line, "\"comm\":\"web\""));
                assert_non_null(strstr(line, "\"culprits\":{"));
                assert_int_equal(sink_write(out, incident), 0);
                json_decref(incident);
                sampler_drop_onwhat(&s);
                bytes += len;
                free(line);
                if (i + 1 == WARMUP)
                        base = heap_in_use();
        }
        size_t end = heap_in_use();
        print_message("%u samples, %zu bytes of incidents; heap in use %zu bytes after %u, %zu after %u\n", samples,
                      bytes, base, WARMUP, end, samples);
        assert_int_equal(out->written, samples);
        assert_true(onwhat.n_looks > 0);
        /* Valgrind replaces malloc, so mallinfo2 says nothing there; memcheck's own leak check at
         * exit stands in for the growth check. */
        if (!RUNNING_ON_VALGRIND) {
                assert_true(base > 0);
                assert_int_equal(end, base);
        }

        sink_free(out);
        sampler_free(&s);
        onwhat_done(&onwhat);
        ev_loop_destroy(loop);
        free(ids.items);
        fake_scope_close(&fs);
        taskstats_source_free(ts);
        fake_tree_remove(dir);
}

#define NO_TCACHE "glibc.malloc.tcache_count=0"

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_no_growth_over_10000_samples),
        };

#if !defined(__SANITIZE_ADDRESS__)
        const char *tunables = getenv("GLIBC_TUNABLES");
        if (!RUNNING_ON_VALGRIND && argc > 0 && (!tunables || !strstr(tunables, NO_TCACHE))) {
                if (setenv("GLIBC_TUNABLES", NO_TCACHE, 1) < 0)
                        return 1;
                execv("/proc/self/exe", argv);
                fprintf(stderr, "re-exec with %s: %s\n", NO_TCACHE, strerror(errno));
                return 1;
        }
#endif
        log_set_level(LOG_LEVEL_ERROR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
