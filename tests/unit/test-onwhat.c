/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <unistd.h>

#include "incident/onwhat-report.h"
#include "sampling/onwhat.h"
#include "tests/unit/test-util.h"

static void test_verdict(void **state) {
        /* Throttled for half the stall or more; 30% of the sample when the stall is unknown. */
        assert_string_equal(onwhat_cpu_verdict(500000, true, 800000, 1000000), "throttled");
        assert_string_equal(onwhat_cpu_verdict(300000, true, 800000, 1000000), "contention");
        assert_string_equal(onwhat_cpu_verdict(0, true, 0, 1000000), "contention");
        assert_string_equal(onwhat_cpu_verdict(300000, false, 0, 1000000), "throttled");
        assert_string_equal(onwhat_cpu_verdict(200000, false, 0, 1000000), "contention");
        assert_string_equal(onwhat_cpu_verdict(10, true, 0, 1000000), "contention");
}

/* The memory verdict, on the growth of the VM's counters (tests/vm, case memory-high: a thrasher
 * held at memory.high = 32 MiB, no memory.max: 208 high events in 1.02 s, none at max). */
static void test_memory_verdict(void **state) {
        MemoryLimits d = { .source = LIMITS_SOURCE_V2,
                           .has_max = true,
                           .max_bytes = LIMITS_UNLIMITED,
                           .has_high = true,
                           .high_bytes = 32 << 20,
                           .has_current = true,
                           .current_bytes = 33185792 };

        d.events = (MemoryEvents) { .has_high = true, .high = 208, .has_max = true, .max = 0 };
        assert_string_equal(onwhat_memory_verdict(&d), "throttled");
        /* At memory.max too: the hard limit is what held it. */
        d.events.max = 3;
        assert_string_equal(onwhat_memory_verdict(&d), "limit");
        /* Under both limits all sample long: the node's memory, or nothing the cgroup set. */
        d.events = (MemoryEvents) { .has_high = true, .high = 0, .has_max = true, .max = 0 };
        assert_string_equal(onwhat_memory_verdict(&d), "contention");
        /* High events with no memory.high set (an ancestor's counted in the subtree): not its own. */
        d.events.high = 5;
        d.high_bytes = LIMITS_UNLIMITED;
        assert_string_equal(onwhat_memory_verdict(&d), "contention");
        /* cgroup-v1: no high; failcnt growth is max. */
        d = (MemoryLimits) { .source = LIMITS_SOURCE_V1, .has_max = true, .max_bytes = 48 << 20 };
        d.events = (MemoryEvents) { .has_max = true, .max = 41 };
        assert_string_equal(onwhat_memory_verdict(&d), "limit");
}

static OnWhat located(PsiResource res) {
        OnWhat w = { .resource = res, .located = true, .has_a = true, .has_b = true };

        w.loc = (LimitsLocation) { .source = LIMITS_SOURCE_V1, .limited = true };
        strcpy(w.loc.path, "app/web");
        strcpy(w.loc.limited_path, "app");
        return w;
}

static void test_cpu_limits(void **state) {
        OnWhat w = located(PSI_RESOURCE_CPU);
        w.cpu_a = (CpuLimits) { .source = LIMITS_SOURCE_V1,
                                .has_quota = true,
                                .quota_us = 50000,
                                .period_us = 100000,
                                .has_stat = true,
                                .nr_periods = 100,
                                .nr_throttled = 40,
                                .throttled_us = 2000000 };
        w.cpu_b = w.cpu_a;
        w.cpu_b.nr_periods = 110;
        w.cpu_b.nr_throttled = 50;
        w.cpu_b.throttled_us = 2600000;

        json_t *o = onwhat_limits_object(&w, false, true, 900000, 1000000);
        assert_non_null(o);
        json_t *c = json_object_get(o, "cpu");
        assert_string_equal(json_string_value(json_object_get(c, "cgroup")), "/app");
        assert_string_equal(json_string_value(json_object_get(c, "source")), "cgroup-v1");
        assert_int_equal(json_integer_value(json_object_get(c, "quota_us")), 50000);
        assert_int_equal(json_integer_value(json_object_get(c, "nr_periods")), 10);
        assert_int_equal(json_integer_value(json_object_get(c, "nr_throttled")), 10);
        assert_int_equal(json_integer_value(json_object_get(c, "throttled_us")), 600000);
        assert_string_equal(json_string_value(json_object_get(c, "verdict")), "throttled");
        assert_true(json_is_null(json_object_get(o, "memory")));
        assert_true(json_is_null(json_object_get(o, "io")));
        json_decref(o);

        /* No quota: contention, whatever the counters. */
        w.cpu_b.quota_us = LIMITS_UNLIMITED;
        o = onwhat_limits_object(&w, false, true, 900000, 1000000);
        c = json_object_get(o, "cpu");
        assert_true(json_is_null(json_object_get(c, "quota_us")));
        assert_string_equal(json_string_value(json_object_get(c, "verdict")), "contention");
        json_decref(o);

        /* Not located (no process to map a v1 cgroup through): all null. */
        w.located = false;
        o = onwhat_limits_object(&w, false, true, 900000, 1000000);
        assert_true(json_is_null(json_object_get(o, "cpu")));
        json_decref(o);
}

static void test_memory_io_limits(void **state) {
        OnWhat w = located(PSI_RESOURCE_MEMORY);
        w.mem_a = (MemoryLimits) { .has_max = true,
                                   .max_bytes = 128 << 20,
                                   .has_current = true,
                                   .current_bytes = 100 << 20,
                                   .events = { .has_max = true, .max = 3, .has_oom_kill = true },
                                   .has_refault_file = true,
                                   .refault_file = 1000 };
        w.mem_b = w.mem_a;
        w.mem_b.current_bytes = 127 << 20;
        w.mem_b.events.max = 44;
        w.mem_b.refault_file = 5000;
        json_t *o = onwhat_limits_object(&w, false, false, 0, 1000000), *m = json_object_get(o, "memory");
        assert_int_equal(json_integer_value(json_object_get(m, "max_bytes")), 128 << 20);
        assert_true(json_is_null(json_object_get(m, "high_bytes")));
        assert_int_equal(json_integer_value(json_object_get(m, "current_bytes")), 127 << 20);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "events"), "max")), 41);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "events"), "oom_kill")), 0);
        assert_true(json_is_null(json_object_get(json_object_get(m, "events"), "high")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "refault"), "file")), 4000);
        assert_string_equal(json_string_value(json_object_get(m, "verdict")), "limit");
        json_decref(o);

        w = located(PSI_RESOURCE_IO);
        w.io_a = (IoLimits) { .has_stat = true, .n_devices = 1 };
        w.io_a.devices[0] = (IoDeviceLimits) {
                .major = 254, .minor = 0, .has_stat = true, .wbytes = 1 << 20, .wios = 2, .has_max = false
        };
        strcpy(w.io_a.devices[0].name, "vda");
        w.io_b = w.io_a;
        w.io_b.devices[0].wbytes = 211 << 20;
        w.has_io_max = true;
        w.io_max = (IoLimits) { .has_max = true, .n_devices = 1 };
        w.io_max.devices[0] = (IoDeviceLimits) { .major = 254,
                                                 .minor = 0,
                                                 .has_max = true,
                                                 .rbps = LIMITS_UNLIMITED,
                                                 .wbps = 1 << 20,
                                                 .riops = LIMITS_UNLIMITED,
                                                 .wiops = LIMITS_UNLIMITED };
        o = onwhat_limits_object(&w, false, false, 0, 1000000);
        json_t *io = json_object_get(o, "io"), *d = json_array_get(json_object_get(io, "devices"), 0);
        assert_string_equal(json_string_value(json_object_get(io, "cgroup")), "/app/web");
        assert_string_equal(json_string_value(json_object_get(io, "limited_by")), "/app");
        assert_string_equal(json_string_value(json_object_get(d, "device")), "vda");
        assert_int_equal(json_integer_value(json_object_get(d, "wbytes")), 210 << 20);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "max"), "wbps")), 1 << 20);
        assert_true(json_is_null(json_object_get(json_object_get(d, "max"), "rbps")));
        assert_string_equal(json_string_value(json_object_get(io, "devices_source")), "cgroup");
        assert_true(json_is_null(json_object_get(io, "node_devices"))); /* no disk readings */
        json_decref(o);
}

/* A hybrid host's blkio counts nothing without a throttle rule: the node's /proc/diskstats names
 * the disk, busiest first. */
static void test_io_node_devices(void **state) {
        static const char a[] = " 254 0 vda 100 0 800 50 10 0 80 5 0 40 55\n 8 16 sdb 5 0 40 1 0 0 0 0 0 1 1\n";
        static const char b[] =
                " 254 0 vda 100 0 800 50 410 0 204880 2005 3 940 2055\n 8 16 sdb 6 0 48 2 0 0 0 0 0 2 2\n";
        OnWhat w = located(PSI_RESOURCE_IO);
        OnWhatDisks disks = { .has_a = true, .has_b = true, .a_us = 5000000, .b_us = 6000000 };

        w.io_a = (IoLimits) { .has_stat = true };
        w.io_b = w.io_a;
        assert_int_equal(diskstats_parse(a, strlen(a), &disks.a), 0);
        assert_int_equal(diskstats_parse(b, strlen(b), &disks.b), 0);
        w.disks = &disks;
        json_t *o = onwhat_limits_object(&w, false, false, 0, 1000000), *io = json_object_get(o, "io");
        json_t *nodes = json_object_get(io, "node_devices"), *d = json_array_get(nodes, 0);
        assert_string_equal(json_string_value(json_object_get(io, "devices_source")), "node");
        assert_int_equal(json_array_size(nodes), 2);
        assert_string_equal(json_string_value(json_object_get(d, "device")), "vda");
        assert_int_equal(json_integer_value(json_object_get(d, "wbytes")), 204800 * 512);
        assert_int_equal(json_integer_value(json_object_get(d, "wios")), 400);
        assert_true(json_real_value(json_object_get(d, "util")) > 0.899 &&
                    json_real_value(json_object_get(d, "util")) < 0.901);
        assert_true(json_real_value(json_object_get(d, "await_ms")) > 4.99);
        assert_int_equal(json_integer_value(json_object_get(d, "in_flight")), 3);
        json_decref(o);
        /* Node-wide (nothing located): io holds the node's disks only. */
        OnWhat node = { .resource = PSI_RESOURCE_IO, .disks = &disks };
        json_t *n = onwhat_limits_object(&node, false, false, 0, 1000000), *nio = json_object_get(n, "io");
        assert_true(json_is_null(json_object_get(n, "cpu")));
        assert_string_equal(json_string_value(json_object_get(nio, "cgroup")), "/");
        assert_string_equal(json_string_value(json_object_get(nio, "source")), "none");
        assert_int_equal(json_array_size(json_object_get(nio, "devices")), 0);
        assert_string_equal(json_string_value(json_object_get(nio, "devices_source")), "node");
        assert_string_equal(
                json_string_value(json_object_get(json_array_get(json_object_get(nio, "node_devices"), 0), "device")),
                "vda");
        json_decref(n);
        /* A 0 ms sample has no interval to measure. */
        o = onwhat_limits_object(&w, true, false, 0, 0);
        assert_true(json_is_null(json_object_get(json_object_get(o, "io"), "node_devices")));
        json_decref(o);
}

static void test_blocked(void **state) {
        OnWhat w = { .has_blocked = true, .has_stack = true, .stack = { .n_frames = 2 } };
        strcpy(w.stack.frames[0], "folio_wait_bit_common");
        strcpy(w.stack.frames[1], "ext4_wait_block_bitmap");
        strcpy(w.stack_wchan, "ext4_wait_block_bitmap");
        w.blocked.n_groups = 2;
        w.blocked.groups[0] = (BlockedGroup) { .seen = 5, .n_threads_total = 3, .n_threads = 1 };
        strcpy(w.blocked.groups[0].wchan, "io_schedule");
        w.blocked.groups[0].threads[0] = (BlockedThread) { .pid = 10, .tid = 11, .seen = 2 };
        strcpy(w.blocked.groups[0].threads[0].comm, "wr\xff");
        w.blocked.groups[1] = (BlockedGroup) { .seen = 1, .n_threads_total = 1 };
        strcpy(w.blocked.groups[1].wchan, "ext4_wait_block_bitmap");

        json_t *a = onwhat_blocked_array(&w), *g0 = json_array_get(a, 0), *g1 = json_array_get(a, 1);
        assert_int_equal(json_array_size(a), 2);
        assert_string_equal(json_string_value(json_object_get(g0, "wchan")), "io_schedule");
        assert_int_equal(json_integer_value(json_object_get(g0, "threads_total")), 3);
        assert_true(json_is_null(json_object_get(g0, "stack"))); /* the stack is the other group's */
        assert_string_equal(json_string_value(json_array_get(json_object_get(g1, "stack"), 1)),
                            "ext4_wait_block_bitmap");
        /* A hostile comm stays valid UTF-8. */
        const char *comm =
                json_string_value(json_object_get(json_array_get(json_object_get(g0, "threads"), 0), "comm"));
        assert_string_equal(comm, "wr\xef\xbf\xbd");
        json_decref(a);
        assert_null(onwhat_stack_unavailable(&w));
        w.has_stack = false;
        w.stack_error = -EACCES;
        assert_string_equal(onwhat_stack_unavailable(&w), "needs CAP_SYS_ADMIN");
}

/* The agent's pool: an OnWhat allocated once, its looks ready, reused by sample after sample
 * (onwhat_begin() forgets the last sample's looks and stack, keeps the buffer). */
static void test_init_reuse(void **state) {
        OnWhat w;
        BlockedThreadLook *looks;

        assert_int_equal(onwhat_init(&w), 0);
        looks = w.look_threads;
        assert_non_null(looks);
        looks[ONWHAT_LOOKS_MAX * ONWHAT_LOOK_THREADS_MAX - 1].tid = 7; /* all of it is writable */
        w.n_looks = 2;
        w.has_blocked = w.has_stack = w.located = true;
        w.stack_error = -EPERM;
        onwhat_begin(&w, NULL, NULL, PSI_RESOURCE_CPU); /* no hierarchy: nothing to read */
        assert_ptr_equal(w.look_threads, looks);
        assert_int_equal(w.n_looks, 0);
        assert_false(w.has_blocked || w.has_stack || w.located || w.has_a);
        assert_int_equal(w.stack_error, 0);
        onwhat_done(&w);
        assert_null(w.look_threads);
        onwhat_done(&w); /* twice is harmless */
}

/* What a D thread waits for, from a fake /proc (tests/fixtures/blocked-waits, stacks as 6.12 and
 * 7.2 print them): the sleep over memory.high by its wchan alone, a reclaimer by its PF_MEMALLOC
 * flag, an fsync and a swap-in that share a wchan by their stacks, a page cache read-in as
 * unknown, a direct write by its wchan without a stack file; each (wchan, what for) its own group,
 * and "resource" in the incident's blocked[]. */
static void test_look_wait_for(void **state) {
        ThreadDelays threads[] = { { .tid = 100, .tgid = 100 }, { .tid = 101, .tgid = 100 },
                                   { .tid = 200, .tgid = 200 }, { .tid = 300, .tgid = 300 },
                                   { .tid = 400, .tgid = 400 }, { .tid = 500, .tgid = 500 },
                                   { .tid = 600, .tgid = 600 } };
        const pid_t pids[] = { 100, 200, 300, 400, 500, 600 };
        Snapshot s = { .threads = threads, .n = ELEMENTSOF(threads) };
        int proc = open(fixture("blocked-waits/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        const WaitFor want[] = { WAIT_FOR_MEMORY, WAIT_FOR_MEMORY,  WAIT_FOR_IO,
                                 WAIT_FOR_MEMORY, WAIT_FOR_UNKNOWN, WAIT_FOR_IO };
        OnWhat w;
        const BlockedThreadLook *look;
        size_t n;

        assert_true(proc >= 0);
        assert_int_equal(onwhat_init(&w), 0);
        onwhat_begin(&w, NULL, NULL, PSI_RESOURCE_MEMORY);
        onwhat_look(&w, proc, &s, pids, ELEMENTSOF(pids));
        look = onwhat_last_look(&w, &n);
        assert_int_equal(n, 7);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(look[i].state, 'D');
                assert_int_equal(look[i].wait_for, want[i]);
        }
        assert_int_equal(look[6].state, 'R');
        /* The first stack read (the fsync's) is the incident's. */
        assert_true(w.has_stack);
        assert_string_equal(w.stack.frames[1], "folio_wait_writeback");
        assert_int_equal(w.stack_wait_for, WAIT_FOR_IO);

        onwhat_end(&w, NULL);
        assert_true(w.has_blocked);
        /* folio_wait_bit_common for memory (101, 300), io (200) and unknown (400): three groups of five. */
        assert_int_equal(w.blocked.n_groups, 5);
        json_t *a = onwhat_blocked_array(&w);
        size_t memory = 0, io = 0, unknown = 0;
        for (size_t i = 0; i < json_array_size(a); i++) {
                json_t *g = json_array_get(a, i), *r = json_object_get(g, "resource");
                const char *wchan = json_string_value(json_object_get(g, "wchan"));
                pid_t pid = (pid_t) json_integer_value(
                        json_object_get(json_array_get(json_object_get(g, "threads"), 0), "pid"));
                assert_non_null(r);
                if (json_is_null(r))
                        unknown++, assert_int_equal(pid, 400);
                else if (strcmp(json_string_value(r), "io") == 0)
                        io++, assert_true(pid == 200 || pid == 500);
                else
                        memory++, assert_true(pid == 100 || pid == 300);
                /* The stack goes with the fsync's group only, not the other folio_wait_bit_common ones. */
                assert_true(json_is_null(json_object_get(g, "stack")) || pid == 200);
                assert_non_null(wchan);
        }
        assert_int_equal(memory, 2);
        assert_int_equal(io, 2);
        assert_int_equal(unknown, 1);
        json_decref(a);
        onwhat_done(&w);
        close(proc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_verdict),         cmocka_unit_test(test_memory_verdict),
                cmocka_unit_test(test_cpu_limits),      cmocka_unit_test(test_memory_io_limits),
                cmocka_unit_test(test_blocked),         cmocka_unit_test(test_init_reuse),
                cmocka_unit_test(test_io_node_devices), cmocka_unit_test(test_look_wait_for),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
