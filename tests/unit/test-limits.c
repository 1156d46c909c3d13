/* SPDX-License-Identifier: MIT */
/* The cpu, memory and io limit parsers and deltas (probes/limits.h, probes/limits-io.h), fed the
 * kernel's formats as 6.18 prints them (cgroup2 and cgroup-v1 files of this machine). The readers
 * and the finder on fixture trees are in test-limits-find.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "probes/cgusage.h"
#include "probes/limits-io.h"
#include "probes/limits.h"
#include "tests/unit/test-util.h"

#define S(x) x, strlen(x)

static void test_value(void **state) {
        uint64_t v = 7;

        assert_int_equal(limits_parse_value(S("max\n"), &v), 0);
        assert_true(v == LIMITS_UNLIMITED);
        assert_int_equal(limits_parse_value(S("134217728\n"), &v), 0);
        assert_int_equal(v, 134217728);
        assert_int_equal(limits_parse_value(S("0"), &v), 0);
        assert_int_equal(v, 0);
        v = 7;
        assert_int_equal(limits_parse_value(S("\n"), &v), -EINVAL);
        assert_int_equal(limits_parse_value(S("maximum\n"), &v), -EINVAL);
        assert_int_equal(limits_parse_value(S("-1\n"), &v), -EINVAL);
        assert_int_equal(v, 7); /* untouched on failure */
}

static void test_cpu_max_and_quota(void **state) {
        uint64_t q = 1, p = 1;

        assert_int_equal(limits_parse_cpu_max(S("max 100000\n"), &q, &p), 0);
        assert_true(q == LIMITS_UNLIMITED);
        assert_int_equal(p, 100000);
        assert_int_equal(limits_parse_cpu_max(S("50000 100000\n"), &q, &p), 0);
        assert_int_equal(q, 50000);
        assert_int_equal(p, 100000);
        assert_int_equal(limits_parse_cpu_max(S("50000\n"), &q, &p), -EINVAL);
        assert_int_equal(limits_parse_cpu_max(S("50000 max\n"), &q, &p), -EINVAL);
        assert_int_equal(limits_parse_cpu_max(S(""), &q, &p), -EINVAL);

        assert_int_equal(limits_parse_cfs_quota(S("-1\n"), &q), 0);
        assert_true(q == LIMITS_UNLIMITED);
        assert_int_equal(limits_parse_cfs_quota(S("50000\n"), &q), 0);
        assert_int_equal(q, 50000);
        assert_int_equal(limits_parse_cfs_quota(S("-2\n"), &q), -EINVAL);
        assert_int_equal(limits_parse_cfs_quota(S("max\n"), &q), -EINVAL);
}

static void test_cpu_stat(void **state) {
        static const char v2[] = "usage_usec 900000\nuser_usec 600000\nsystem_usec 300000\nnice_usec 0\n"
                                 "core_sched.force_idle_usec 0\nnr_periods 500\nnr_throttled 40\n"
                                 "throttled_usec 2000000\nnr_bursts 0\nburst_usec 0\n";
        static const char v1[] =
                "nr_periods 120\nnr_throttled 80\nthrottled_time 4000123456\nnr_bursts 0\nburst_time 0\n";
        static const char core[] = "usage_usec 38638155\nuser_usec 19905835\nsystem_usec 18732319\nnice_usec 0\n";
        uint64_t periods = 9, throttled = 9, us = 9;

        assert_int_equal(limits_parse_cpu_stat(S(v2), &periods, &throttled, &us), 0);
        assert_int_equal(periods, 500);
        assert_int_equal(throttled, 40);
        assert_int_equal(us, 2000000);
        assert_int_equal(limits_parse_cpu_stat(S(v1), &periods, &throttled, &us), 0);
        assert_int_equal(periods, 120);
        assert_int_equal(throttled, 80);
        assert_int_equal(us, 4000123); /* ns to us */
        /* The core cpu.stat of a hybrid host's cgroup2 has no throttling: absent, not an error. */
        assert_int_equal(limits_parse_cpu_stat(S(core), &periods, &throttled, &us), -ENOENT);
        assert_int_equal(limits_parse_cpu_stat(S("nr_periods 1\n"), &periods, &throttled, &us), -EINVAL);
        /* A line it cannot read costs that line: without nr_throttled the throttling is unknown. */
        assert_unparsed(UNPARSED_CPU_STAT, 1,
                        assert_int_equal(limits_parse_cpu_stat(S("nr_periods 1\nnr_throttled x\nthrottled_usec 1\n"),
                                                               &periods, &throttled, &us),
                                         -EINVAL));
        assert_int_equal(periods, 120);
        /* Any other line it cannot read costs only that line. */
        assert_unparsed(UNPARSED_CPU_STAT, 2,
                        assert_int_equal(limits_parse_cpu_stat(S("nr_periods 7\n(unknown) \nnr_throttled 2\nburst x\n"
                                                                 "throttled_usec 3\n"),
                                                               &periods, &throttled, &us),
                                         0));
        assert_int_equal(periods, 7);
        assert_int_equal(throttled, 2);
        assert_int_equal(us, 3);
}

static void test_keyed(void **state) {
        static const char stat[] = "file_mapped 4096\nfile 125829120\nanon_thp 0\nanon 402653184\nanon 1\n";
        uint64_t file = 0, anon = 0, shmem = 0;
        bool has_file = false, has_anon = false, has_shmem = false;
        const KeyedWant want[] = { { "file", &file, &has_file },
                                   { "anon", &anon, &has_anon },
                                   { "shmem", &shmem, &has_shmem } };

        /* "file" is not "file_mapped", "anon" not "anon_thp"; the first line of a key wins. */
        assert_unparsed(UNPARSED_MEMORY_STAT, 0,
                        assert_int_equal(parse_keyed(S(stat), UNPARSED_MEMORY_STAT, want, 3), 5));
        assert_true(has_file && has_anon && !has_shmem);
        assert_int_equal(file, 125829120);
        assert_int_equal(anon, 402653184);
        /* Lines that are not "key N" each cost their line, noted under the file's kind; a blank
         * line is no loss, a wanted key on a bad line stays unset. */
        has_file = has_anon = false;
        assert_unparsed(UNPARSED_MEMORY_STAT, 5,
                        assert_int_equal(parse_keyed(S("anon 1x\n\n(unknown) \nfile\n 5\nkey  5\nfile 9"),
                                                     UNPARSED_MEMORY_STAT, want, 3),
                                         1));
        assert_true(has_file && !has_anon);
        assert_int_equal(file, 9);
        assert_int_equal(anon, 402653184); /* untouched */
        assert_unparsed(UNPARSED_CPU_STAT, 1, parse_keyed(S("x\n"), UNPARSED_CPU_STAT, want, 0));
}

static void test_memory_events(void **state) {
        MemoryEvents e;

        assert_int_equal(
                limits_parse_memory_events(S("low 0\nhigh 17\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n"), &e), 0);
        assert_true(e.has_high && e.has_max && e.has_oom && e.has_oom_kill);
        assert_int_equal(e.high, 17);
        assert_int_equal(e.max, 3);
        assert_int_equal(e.oom, 1);
        assert_int_equal(e.oom_kill, 1);
        /* memory.oom_control: only oom_kill is an event ("oom_kill_disable" is not "oom_kill"). */
        assert_int_equal(limits_parse_memory_events(S("oom_kill_disable 1\nunder_oom 0\noom_kill 2\n"), &e), 0);
        assert_false(e.has_high || e.has_max || e.has_oom);
        assert_true(e.has_oom_kill);
        assert_int_equal(e.oom_kill, 2);
        assert_unparsed(UNPARSED_MEMORY_EVENTS, 2,
                        assert_int_equal(limits_parse_memory_events(S("max -1\n(unknown) \noom 4\n"), &e), 0));
        assert_false(e.has_max || e.has_high || e.has_oom_kill);
        assert_true(e.has_oom);
        assert_int_equal(e.oom, 4);
}

static void test_memory_stat(void **state) {
        static const char v2[] = "anon 402653184\nfile 125829120\nkernel 8388608\nanon_thp 0\n"
                                 "workingset_refault_anon 12\nworkingset_refault_file 3400\n";
        static const char v2_old[] = "anon 1\nfile 2\nworkingset_refault 77\nworkingset_activate 3\n";
        static const char v1[] = "cache 0\nrss 0\nworkingset_refault_anon 0\nworkingset_refault_file 0\n"
                                 "total_cache 20971520\ntotal_rss 83886080\ntotal_workingset_refault_anon 5\n"
                                 "total_workingset_refault_file 48211\n";
        static const char v1_flat[] = "cache 4096\nrss 8192\nworkingset_refault 3\n"; /* no totals */
        MemoryLimits m = {};

        assert_int_equal(limits_parse_memory_stat(S(v2), false, &m), 0);
        assert_true(m.has_anon && m.has_file && m.has_refault_anon && m.has_refault_file);
        assert_int_equal(m.anon_bytes, 402653184);
        assert_int_equal(m.file_bytes, 125829120);
        assert_int_equal(m.refault_anon, 12);
        assert_int_equal(m.refault_file, 3400);

        m = (MemoryLimits) {};
        assert_int_equal(limits_parse_memory_stat(S(v2_old), false, &m), 0);
        assert_false(m.has_refault_anon);
        assert_true(m.has_refault_file);
        assert_int_equal(m.refault_file, 77);

        m = (MemoryLimits) {};
        assert_int_equal(limits_parse_memory_stat(S(v1), true, &m), 0);
        assert_int_equal(m.anon_bytes, 83886080); /* total_rss, not the memcg's own rss */
        assert_int_equal(m.file_bytes, 20971520);
        assert_int_equal(m.refault_anon, 5);
        assert_int_equal(m.refault_file, 48211);

        m = (MemoryLimits) {};
        assert_int_equal(limits_parse_memory_stat(S(v1_flat), true, &m), 0);
        assert_int_equal(m.anon_bytes, 8192);
        assert_int_equal(m.file_bytes, 4096);
        assert_false(m.has_refault_anon || m.has_refault_file);

        m = (MemoryLimits) {};
        assert_unparsed(UNPARSED_MEMORY_STAT, 2,
                        assert_int_equal(limits_parse_memory_stat(S("anon x\n(unknown) \nfile 3\n"), false, &m), 0));
        assert_false(m.has_anon);
        assert_true(m.has_file);
        assert_int_equal(m.file_bytes, 3);
}

static void test_v1_memory_limit(void **state) {
        /* What an unset limit reads as: PAGE_COUNTER_MAX pages (LONG_MAX / PAGE_SIZE). */
        assert_true(limits_v1_memory_limit(9223372036854771712ULL, 4096) == LIMITS_UNLIMITED);
        assert_true(limits_v1_memory_limit(9223372036854710272ULL, 65536) == LIMITS_UNLIMITED);
        assert_int_equal(limits_v1_memory_limit(9223372036854710272ULL, 4096), 9223372036854710272ULL);
        assert_int_equal(limits_v1_memory_limit(134217728, 4096), 134217728);
}

static void test_limited_and_delta(void **state) {
        CpuLimits a = { .has_quota = true,
                        .quota_us = LIMITS_UNLIMITED,
                        .period_us = 100000,
                        .has_stat = true,
                        .nr_periods = 10,
                        .nr_throttled = 4,
                        .throttled_us = 1000 };
        CpuLimits b = a, d;
        MemoryLimits ma = { .has_max = true,
                            .max_bytes = LIMITS_UNLIMITED,
                            .has_high = true,
                            .high_bytes = LIMITS_UNLIMITED,
                            .events = { .has_max = true, .max = 5 },
                            .has_refault_file = true,
                            .refault_file = 100,
                            .has_current = true,
                            .current_bytes = 10 };
        MemoryLimits mb = ma, md;

        assert_false(limits_cpu_is_limited(&a));
        b.quota_us = 50000;
        assert_true(limits_cpu_is_limited(&b));
        b.nr_periods = 20;
        b.nr_throttled = 3; /* went backwards: the cgroup was made again */
        b.throttled_us = 501000;
        limits_cpu_delta(&a, &b, &d);
        assert_true(d.has_stat);
        assert_int_equal(d.quota_us, 50000); /* the end's limit */
        assert_int_equal(d.nr_periods, 10);
        assert_int_equal(d.nr_throttled, 0);
        assert_int_equal(d.throttled_us, 500000);
        b.has_stat = false;
        limits_cpu_delta(&a, &b, &d);
        assert_false(d.has_stat);
        assert_int_equal(limits_counter_delta(5, 3), 0);
        assert_int_equal(limits_counter_delta(3, 5), 2);

        assert_false(limits_memory_is_limited(&ma));
        mb.high_bytes = 1 << 30;
        assert_true(limits_memory_is_limited(&mb));
        mb.events.max = 9;
        mb.refault_file = 150;
        mb.current_bytes = 4;
        mb.events.has_oom_kill = true; /* only at the end: no delta */
        limits_memory_delta(&ma, &mb, &md);
        assert_true(md.events.has_max);
        assert_int_equal(md.events.max, 4);
        assert_false(md.events.has_oom_kill);
        assert_int_equal(md.refault_file, 50);
        assert_int_equal(md.current_bytes, 4); /* a level: the end's */
}

static void test_io_stat_and_max(void **state) {
        static const char stat[] =
                "254:0 rbytes=1048576 wbytes=8388608 rios=256 wios=2048 dbytes=0 dios=0\n"
                "8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=12\n";
        static const char max[] = "254:0 rbps=max wbps=10485760 riops=max wiops=max\n"
                                  "8:16 rbps=2097152 wbps=max riops=max wiops=120\n";
        IoLimits io = {};

        assert_int_equal(limits_parse_io_stat(S(stat), &io), 0);
        assert_true(io.has_stat && !io.has_max);
        assert_int_equal(io.n_devices, 2);
        assert_int_equal(io.devices[0].major, 254);
        assert_int_equal(io.devices[0].wbytes, 8388608);
        assert_int_equal(io.devices[0].wios, 2048);
        assert_int_equal(io.devices[1].minor, 16);
        assert_int_equal(io.devices[1].rbytes, 4096);
        assert_false(limits_io_is_limited(&io));

        assert_int_equal(limits_parse_io_max(S(max), &io), 0); /* merged by device */
        assert_int_equal(io.n_devices, 2);
        assert_true(io.has_max && io.devices[0].has_max && io.devices[0].has_stat);
        assert_true(io.devices[0].rbps == LIMITS_UNLIMITED);
        assert_int_equal(io.devices[0].wbps, 10485760);
        assert_int_equal(io.devices[1].rbps, 2097152);
        assert_int_equal(io.devices[1].wiops, 120);
        assert_true(limits_io_is_limited(&io));

        /* An empty io.max: the file is there, no rule. */
        IoLimits none = {};
        assert_int_equal(limits_parse_io_max(S(""), &none), 0);
        assert_true(none.has_max);
        assert_int_equal(none.n_devices, 0);
        assert_false(limits_io_is_limited(&none));

        /* A line it cannot read costs that line, and only that line: the device keeps what it had. */
        assert_unparsed(UNPARSED_IO_STAT, 5, {
                assert_int_equal(limits_parse_io_stat(S("254:0 wbytes=-1 rbytes=5\n"), &io), 0);
                assert_int_equal(limits_parse_io_stat(S("254:0 wbytes\n"), &io), 0);
                assert_int_equal(limits_parse_io_stat(S("254:0x rbytes=1\n"), &io), 0);
                assert_int_equal(limits_parse_io_stat(S("rbytes=1\n8:16 rbytes=8192\n"), &io), 0);
                assert_int_equal(limits_parse_io_stat(S("77:0 rbytes=1 x\n"), &io), 0);
        });
        assert_unparsed(UNPARSED_IO_MAX, 1, assert_int_equal(limits_parse_io_max(S("254:0 rbps=lots\n"), &io), 0));
        assert_int_equal(io.n_devices, 2);
        assert_int_equal(io.devices[0].rbytes, 1048576);
        assert_int_equal(io.devices[0].wbytes, 8388608);
        assert_true(io.devices[0].rbps == LIMITS_UNLIMITED);
        assert_int_equal(io.devices[1].rbytes, 8192);
}

/* The root's io.stat on 6.12 and 7.2 in a QEMU guest: a line "(unknown) " for each device
 * without a registered name (the absent floppy drives), beside the disk's own line (kernel-facts.md:
 * unknown-lines). Each costs its line; the disk is read. */
static void test_io_stat_unknown(void **state) {
        static const char stat[] = "(unknown) \n(unknown) \n254:0 rbytes=734003200 wbytes=52428800 rios=9120 wios=310 "
                                   "dbytes=0 dios=0\n(unknown) \n";
        IoLimits io = {};
        uint64_t r, w;

        assert_unparsed(UNPARSED_IO_STAT, 3, assert_int_equal(limits_parse_io_stat(S(stat), &io), 0));
        assert_true(io.has_stat);
        assert_int_equal(io.n_devices, 1);
        assert_int_equal(io.devices[0].major, 254);
        assert_int_equal(io.devices[0].rbytes, 734003200);
        assert_int_equal(io.devices[0].wios, 310);
        assert_unparsed(UNPARSED_IO_STAT, 3, assert_int_equal(cgroup_usage_parse_io_stat(S(stat), &r, &w), 0));
        assert_int_equal(r, 734003200);
        assert_int_equal(w, 52428800);
}

static void test_io_bounds(void **state) {
        char buf[4096];
        size_t n = 0;
        IoLimits io = {};

        for (int i = 0; i < LIMITS_IO_DEVICES_MAX + 3; i++)
                n += (size_t) snprintf(buf + n, sizeof buf - n, "8:%d rbytes=%d wbytes=0 rios=1 wios=0\n", i * 16, i);
        assert_int_equal(limits_parse_io_stat(buf, n, &io), 0);
        assert_int_equal(io.n_devices, LIMITS_IO_DEVICES_MAX);
        assert_int_equal(io.devices_dropped, 3);
        assert_int_equal(io.devices[LIMITS_IO_DEVICES_MAX - 1].rbytes, LIMITS_IO_DEVICES_MAX - 1);
}

static void test_blkio(void **state) {
        static const char bytes[] = "254:0 Read 4096\n254:0 Write 16777216\n254:0 Sync 33554432\n254:0 Async 0\n"
                                    "254:0 Discard 16777216\n254:0 Total 33558528\nTotal 33558528\n";
        static const char ios[] = "254:0 Read 1\n254:0 Write 16\n254:0 Sync 18\n254:0 Async 0\n254:0 Discard 2\n"
                                  "254:0 Total 19\nTotal 19\n";
        IoLimits io = {};

        assert_int_equal(limits_parse_blkio(S("Total 0\n"), IO_V1_SERVICE_BYTES, &io), 0);
        assert_true(io.has_stat);
        assert_int_equal(io.n_devices, 0);
        assert_int_equal(limits_parse_blkio(S(bytes), IO_V1_SERVICE_BYTES, &io), 0);
        assert_int_equal(limits_parse_blkio(S(ios), IO_V1_SERVICED, &io), 0);
        assert_int_equal(io.n_devices, 1);
        assert_int_equal(io.devices[0].rbytes, 4096);
        assert_int_equal(io.devices[0].wbytes, 16777216); /* not Sync nor Total */
        assert_int_equal(io.devices[0].dbytes, 16777216);
        assert_int_equal(io.devices[0].rios, 1);
        assert_int_equal(io.devices[0].wios, 16);
        assert_int_equal(io.devices[0].dios, 2);
        assert_false(io.has_max || limits_io_is_limited(&io));

        assert_int_equal(limits_parse_blkio(S("254:0 1073741824\n8:0 100\n"), IO_V1_WRITE_BPS, &io), 0);
        assert_int_equal(limits_parse_blkio(S("8:0 50\n"), IO_V1_READ_IOPS, &io), 0);
        assert_int_equal(limits_parse_blkio(S(""), IO_V1_READ_BPS, &io), 0);
        assert_true(io.has_max && limits_io_is_limited(&io));
        assert_int_equal(io.devices[0].wbps, 1073741824);
        assert_true(io.devices[0].rbps == LIMITS_UNLIMITED && io.devices[0].wiops == LIMITS_UNLIMITED);
        assert_int_equal(io.devices[1].major, 8);
        assert_int_equal(io.devices[1].wbps, 100);
        assert_int_equal(io.devices[1].riops, 50);
        assert_false(io.devices[1].has_stat);

        assert_unparsed(UNPARSED_BLKIO, 4, {
                assert_int_equal(limits_parse_blkio(S("254:0 Read\n"), IO_V1_SERVICE_BYTES, &io), 0);
                assert_int_equal(limits_parse_blkio(S("254:0 Read x\n254:0 Write 7\n"), IO_V1_SERVICE_BYTES, &io), 0);
                assert_int_equal(limits_parse_blkio(S("254:0\n"), IO_V1_WRITE_BPS, &io), 0);
                assert_int_equal(limits_parse_blkio(S("vda 1\n"), IO_V1_WRITE_BPS, &io), 0);
        });
        assert_int_equal(io.devices[0].rbytes, 4096);
        assert_int_equal(io.devices[0].wbytes, 7);
        assert_int_equal(io.devices[0].wbps, 1073741824);
}

static void test_io_delta(void **state) {
        IoLimits a = {}, b = {}, d;

        assert_int_equal(limits_parse_io_stat(S("254:0 rbytes=100 wbytes=1000 rios=1 wios=10\n"), &a), 0);
        assert_int_equal(limits_parse_io_stat(S("254:0 rbytes=150 wbytes=900 rios=3 wios=12\n"
                                                "8:0 rbytes=7 wbytes=8 rios=1 wios=1\n"),
                                              &b),
                         0);
        limits_io_delta(&a, &b, &d);
        assert_int_equal(d.n_devices, 2);
        assert_int_equal(d.devices[0].rbytes, 50);
        assert_int_equal(d.devices[0].wbytes, 0); /* backwards: 0, never negative */
        assert_int_equal(d.devices[0].wios, 2);
        assert_int_equal(d.devices[1].rbytes, 7); /* no io at the start: all growth */
        a.has_stat = false;
        limits_io_delta(&a, &b, &d);
        assert_false(d.has_stat || d.devices[0].has_stat);
}

static void test_uevent(void **state) {
        char name[LIMITS_DEVNAME_MAX] = "x", small[4];

        assert_int_equal(
                limits_parse_uevent_devname(S("MAJOR=254\nMINOR=0\nDEVNAME=vda\nDEVTYPE=disk\n"), name, sizeof name),
                0);
        assert_string_equal(name, "vda");
        assert_int_equal(limits_parse_uevent_devname(S("DEVNAME=nvme0n1p2"), small, sizeof small), 0);
        assert_string_equal(small, "nvm");
        assert_int_equal(limits_parse_uevent_devname(S("MAJOR=1\n"), name, sizeof name), -ENOENT);
        assert_int_equal(limits_parse_uevent_devname(S("DEVNAME=\n"), name, sizeof name), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_value),           cmocka_unit_test(test_cpu_max_and_quota),
                cmocka_unit_test(test_cpu_stat),        cmocka_unit_test(test_keyed),
                cmocka_unit_test(test_memory_events),   cmocka_unit_test(test_memory_stat),
                cmocka_unit_test(test_v1_memory_limit), cmocka_unit_test(test_limited_and_delta),
                cmocka_unit_test(test_io_stat_and_max), cmocka_unit_test(test_io_stat_unknown),
                cmocka_unit_test(test_io_bounds),       cmocka_unit_test(test_blkio),
                cmocka_unit_test(test_io_delta),        cmocka_unit_test(test_uevent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
