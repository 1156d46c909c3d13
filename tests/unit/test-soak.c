/* SPDX-License-Identifier: MIT */
/* No leak over 10,000 samples: the agent's whole sample path (both snapshots, ranking, the
 * incident line, the output write) run 10,000 times on a fixture host with the fake taskstats,
 * with the delays growing every time. The heap in use after the last sample must equal the heap
 * after the first hundred (reused buffers only grow to the largest sample, then stay). Heap
 * accounting comes from glibc (mallinfo2) or, under ASan, from the sanitizer's allocator; under
 * valgrind (a tenth of the samples) memcheck's leak check judges instead.
 *
 * mallinfo2 counts chunks parked in glibc's per-thread cache (tcache) as in use, so with it on the
 * figure moves by a chunk or two with the order of the last frees: one CI run saw 160 bytes "grow"
 * that way. The test therefore runs itself with the tcache off (GLIBC_TUNABLES, set and re-exec'd
 * in main), where the figure is exactly the bytes of live chunks. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

#include "base/log.h"
#include "sinks/registry.h"
#include "sinks/sink.h"
#include "incident/compose.h"
#include "tests/unit/fake-taskstats.h"
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
#define MS 1000000ULL

static void test_no_growth_over_10000_samples(void **state) {
        static const uint64_t d0[_TASK_DELAY_MAX] = { 1 * MS };
        FakeTask tasks[] = {
                { .tid = 100, .stats = fake_task_stats(100, 100, "web", d0) },
                { .tid = 101, .stats = fake_task_stats(101, 100, "worker", d0) },
                { .tid = 102, .error = -ESRCH },
                { .tid = 200, .stats = fake_task_stats(200, 200, "batch\n\"x\xff", d0) },
                { .tid = 201, .stats = fake_task_stats(201, 200, "cruncher", d0) },
        };
        static const HostInfo host = { .hostname = "node-1", .kernel = "6.18.0", .boot_id = "b" };
        TaskstatsSource *ts = fake_taskstats_new(tasks, ELEMENTSOF(tasks));
        Sysroot *sysroot = NULL;
        Snapshot a = {}, b = {};
        Ranking ranking = {};
        ProcessInfo procs[10];
        Sink *out = NULL;
        char why[160];
        size_t base = 0, bytes = 0;
        unsigned samples = RUNNING_ON_VALGRIND ? SAMPLES / 10 : SAMPLES;
        int fd;

        assert_int_equal(sysroot_open(fixture("hybrid"), &sysroot), 0);
        assert_int_equal(sysroot_open_cgroup(sysroot, "app", &fd), 0);
        assert_int_equal(sink_open("/dev/null", SINK_FORMAT_INCIDENT, &out, why, sizeof why), 0);
        SampleScope scope = { .sysroot = sysroot, .taskstats = ts, .cgroup_fd = fd, .detail = ELEMENTSOF(procs) };
        pid_t top[ELEMENTSOF(procs)];

        for (unsigned i = 0; i < samples; i++) {
                char *line = NULL;
                size_t len;

                assert_int_equal(snapshot_take(&a, &scope, true), 0);
                /* The sampler's steps, its middle folded into A: the candidates' threads. */
                size_t n_top = 0;
                for (size_t k = 0; k < a.n_procs && n_top < ELEMENTSOF(top); k++)
                        top[n_top++] = a.procs[k].tgid;
                assert_int_equal(snapshot_take_threads(&a, &scope, top, n_top), 0);
                for (size_t t = 0; t < ELEMENTSOF(tasks); t++)
                        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                                tasks[t].stats.delay_ns[d] += (t + 1) * (d + 1) * MS;
                assert_int_equal(snapshot_take(&b, &scope, false), 0);
                assert_int_equal(snapshot_take_threads(&b, &scope, top, n_top), 0);
                assert_int_equal(ranking_build(&ranking, &a, &b, PSI_RESOURCE_CPU), 0);
                assert_int_equal(ranking_add_threads(&ranking, &a, &b, PSI_RESOURCE_CPU), 0);
                json_t *incident = NULL;

                assert_int_equal(report_build(
                                         &(Report) {
                                                 .sysroot = sysroot,
                                                 .host = &host,
                                                 .type = "pressure",
                                                 .id = "soak",
                                                 .has_trigger = true,
                                                 .trigger_cgroup = "app",
                                                 .trigger = { PSI_RESOURCE_CPU, PSI_STALL_SOME, 50000, 2000000 },
                                                 .trigger_spec = "cpu some 50ms 2s",
                                                 .resource = PSI_RESOURCE_CPU,
                                                 .has_stall = true,
                                                 .top = ELEMENTSOF(procs),
                                                 .a = &a,
                                                 .b = &b,
                                                 .threads_base = &a,
                                                 .ranking = &ranking,
                                                 .procs = procs,
                                         },
                                         &incident),
                                 0);
                assert_int_equal(incident_dump_line(incident, &line, &len), 0);
                assert_non_null(strstr(line, "\"comm\":\"web\""));
                assert_int_equal(sink_write(out, incident), 0);
                json_decref(incident);
                bytes += len;
                free(line);
                if (i + 1 == WARMUP)
                        base = heap_in_use();
        }
        size_t end = heap_in_use();
        print_message("%u samples, %zu bytes of incidents; heap in use %zu bytes after %u, %zu after %u\n", samples,
                      bytes, base, WARMUP, end, samples);
        assert_int_equal(out->written, samples);
        /* Valgrind replaces malloc, so mallinfo2 says nothing there; memcheck's own leak check at
         * exit stands in for the growth check. */
        if (!RUNNING_ON_VALGRIND) {
                assert_true(base > 0);
                assert_int_equal(end, base);
        }

        sink_free(out);
        snapshot_done(&a);
        snapshot_done(&b);
        ranking_done(&ranking);
        safe_close(fd);
        sysroot_free(sysroot);
        taskstats_source_free(ts);
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
