/* SPDX-License-Identifier: MIT */
/* Finding and reading a cgroup's limits through a sysroot (probes/limits-find.h): a plain cgroup2
 * host (tests/fixtures/limits-cgroup2: kubepods.slice/pod1.slice/ctr, cpu and io limited at
 * kubepods.slice, memory.high at pod1.slice) and a hybrid one (tests/fixtures/limits-hybrid:
 * controllers on v1 where the cgroups have other paths than on cgroup2, found through
 * /proc/<pid>/cgroup). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/limits-find.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void test_proc_cgroup_v1(void **state) {
        static const char cg[] = "12:blkio:/app.slice/web\n11:cpuset:/\n10:memory:/mem/web-v1\n"
                                 "9:cpu,cpuacct:/a:b/c\n1:name=systemd:/x\n0::/app/web\n";
        char out[64], small[4];

        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "memory", out, sizeof out), 0);
        assert_string_equal(out, "/mem/web-v1");
        /* "cpu" is in "cpu,cpuacct" but not "cpuset"; a path may hold ':'. */
        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "cpu", out, sizeof out), 0);
        assert_string_equal(out, "/a:b/c");
        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "cpuacct", out, sizeof out), 0);
        assert_string_equal(out, "/a:b/c");
        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "blkio", out, sizeof out), 0);
        assert_string_equal(out, "/app.slice/web");
        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "pids", out, sizeof out), -ENOENT);
        assert_int_equal(limits_parse_proc_cgroup_v1(cg, strlen(cg), "memory", small, sizeof small), -ENOBUFS);
        assert_int_equal(limits_parse_proc_cgroup_v1("0::/\n", 5, "memory", out, sizeof out), -ENOENT);
        /* A v1 name with a newline adds a line: whichever comes first, a controller listed twice
         * is refused. */
        static const char forged[] = "12:blkio:/user.slice/x\n10:memory:/system.slice\n10:memory:/user.slice\n0::/u\n";
        assert_int_equal(limits_parse_proc_cgroup_v1(forged, strlen(forged), "memory", out, sizeof out), -EBADMSG);
        assert_int_equal(limits_parse_proc_cgroup_v1(forged, strlen(forged), "blkio", out, sizeof out), 0);
}

static void open_hierarchy(const char *root, Sysroot **ret_s, LimitsHierarchy **ret_h) {
        assert_int_equal(sysroot_open(root, ret_s), 0);
        assert_int_equal(limits_hierarchy_open(*ret_s, ret_h), 0);
}

/* The cgroup2 fixture's limits and counters, read from root (the fixture or a copy of it). */
static void check_cgroup2(const char *root) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        LimitsLocation loc;
        CpuLimits cpu;
        MemoryLimits mem;
        IoLimits io;

        open_hierarchy(root, &s, &h);
        for (PsiResource r = 0; r <= PSI_RESOURCE_IO; r++) {
                assert_int_equal(h->source[r], LIMITS_SOURCE_V2);
                assert_true(h->v1_fd[r] < 0);
        }

        assert_int_equal(limits_locate(h, "/kubepods.slice/pod1.slice/ctr", PSI_RESOURCE_CPU, &loc), 0);
        assert_int_equal(loc.source, LIMITS_SOURCE_V2);
        assert_string_equal(loc.path, "kubepods.slice/pod1.slice/ctr");
        assert_true(loc.limited);
        assert_string_equal(loc.limited_path, "kubepods.slice"); /* pod1 and ctr say "max 100000" */
        assert_int_equal(loc.via_pid, 0);
        assert_int_equal(loc.limit.kind, LIMITS_KIND_CPU_MAX);
        assert_int_equal(loc.limit.value, 200000);
        assert_int_equal(loc.limit.period_us, 100000);
        assert_string_equal(limits_kind_file(loc.limit.kind), "cpu.max");
        assert_int_equal(limits_read_cpu_at(h, loc.source, loc.limited_path, &cpu), 0);
        assert_true(cpu.has_quota && cpu.has_stat);
        assert_int_equal(cpu.quota_us, 200000);
        assert_int_equal(cpu.period_us, 100000);
        assert_int_equal(cpu.nr_throttled, 40);
        assert_int_equal(cpu.throttled_us, 2000000);

        /* memory.high alone is a limit: the nearest is pod1.slice, not kubepods.slice's max. */
        assert_int_equal(limits_locate(h, "kubepods.slice/pod1.slice/ctr", PSI_RESOURCE_MEMORY, &loc), 0);
        assert_string_equal(loc.limited_path, "kubepods.slice/pod1.slice");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_MEMORY_HIGH);
        assert_int_equal(loc.limit.value, 1073741824);
        assert_int_equal(limits_read_memory_at(h, loc.source, loc.path, &mem), 0);
        assert_true(mem.has_max && mem.max_bytes == LIMITS_UNLIMITED);
        assert_true(mem.has_current && mem.current_bytes == 536870912);
        assert_false(mem.has_soft_limit);
        assert_true(mem.events.has_high && mem.events.high == 17 && mem.events.max == 3 && mem.events.oom == 1);
        assert_true(mem.events_local.has_high && mem.events_local.high == 0 && mem.events_local.oom_kill == 1);
        assert_int_equal(mem.anon_bytes, 402653184);
        assert_int_equal(mem.refault_file, 3400);

        /* The cgroup itself when it sets the limit; a finite memory.max before memory.high. */
        assert_int_equal(limits_locate(h, "kubepods.slice", PSI_RESOURCE_MEMORY, &loc), 0);
        assert_string_equal(loc.limited_path, "kubepods.slice");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_MEMORY_MAX);
        assert_int_equal(loc.limit.value, 2147483648);

        assert_int_equal(limits_locate(h, "kubepods.slice/pod1.slice/ctr", PSI_RESOURCE_IO, &loc), 0);
        assert_string_equal(loc.limited_path, "kubepods.slice");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_IO_MAX);
        assert_int_equal(limits_read_io_at(h, loc.source, loc.path, &io), 0);
        assert_int_equal(io.n_devices, 2);
        assert_string_equal(io.devices[0].name, "vda"); /* through /sys/dev/block's symlink */
        assert_string_equal(io.devices[1].name, "sdb");
        assert_int_equal(io.devices[0].wbytes, 8388608);
        assert_false(limits_io_is_limited(&io));
        assert_int_equal(limits_read_io_at(h, loc.source, loc.limited_path, &io), 0);
        assert_true(limits_io_is_limited(&io));
        assert_int_equal(io.devices[0].wbps, 10485760);

        /* The root sets nothing (it has no cpu.max, memory.max nor io.max). */
        assert_int_equal(limits_locate(h, "", PSI_RESOURCE_CPU, &loc), 0);
        assert_false(loc.limited);
        assert_int_equal(loc.limit.kind, LIMITS_KIND_NONE);
        assert_string_equal(loc.path, "");
        assert_int_equal(limits_read_cpu_at(h, LIMITS_SOURCE_V2, "", &cpu), 0);
        assert_false(cpu.has_quota || cpu.has_stat); /* core cpu.stat only: absent */

        assert_int_equal(limits_locate(h, "kubepods.slice/gone", PSI_RESOURCE_CPU, &loc), -ENOENT);
        assert_int_equal(limits_locate(h, "kubepods.slice/../x", PSI_RESOURCE_CPU, &loc), -EINVAL);
        /* irq has no limits. */
        assert_int_equal(h->source[PSI_RESOURCE_IRQ], LIMITS_SOURCE_NONE);
        assert_int_equal(limits_locate(h, "kubepods.slice", PSI_RESOURCE_IRQ, &loc), -EOPNOTSUPP);
}

static void test_cgroup2(void **state) {
        check_cgroup2(fixture("limits-cgroup2"));
}

/* Every keyed file of the fixture with a line no parser knows planted before and after its own
 * ("(unknown) ", what 6.12's root io.stat holds for a nameless device: kernel-facts.md:
 * unknown-lines): each costs its line, every figure the fixture gives is read as before. */
static void test_cgroup2_unknown_lines(void **state) {
        static const UnparsedFile kinds[] = { UNPARSED_IO_STAT, UNPARSED_MEMORY_STAT, UNPARSED_MEMORY_EVENTS,
                                              UNPARSED_CPU_STAT };
        char dir[] = "/tmp/psidiag-test-XXXXXX", cmd[1024];
        uint64_t before[ELEMENTSOF(kinds)];

        assert_non_null(mkdtemp(dir));
        snprintf(cmd, sizeof cmd,
                 "cp -a '%s/.' '%s' && find '%s' -type f \\( -name io.stat -o -name io.max -o -name memory.stat "
                 "-o -name 'memory.events*' -o -name cpu.stat \\) -exec sh -c "
                 "'for f; do { printf \"(unknown) \\n\"; cat \"$f\"; printf \"a line of 7.9\\n\"; } >\"$f.new\" "
                 "&& mv \"$f.new\" \"$f\"; done' sh {} +",
                 fixture("limits-cgroup2"), dir, dir);
        assert_int_equal(system(cmd), 0);
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                before[i] = unparsed_count(kinds[i]);
        check_cgroup2(dir);
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++)
                assert_true(unparsed_count(kinds[i]) >= before[i] + 2);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void test_hybrid(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        LimitsLocation loc;
        CpuLimits cpu;
        MemoryLimits mem;
        IoLimits io;

        open_hierarchy(fixture("limits-hybrid"), &s, &h);
        for (PsiResource r = 0; r <= PSI_RESOURCE_IO; r++) {
                assert_int_equal(h->source[r], LIMITS_SOURCE_V1);
                assert_true(h->v1_fd[r] >= 0);
        }

        /* app/web on cgroup2 is app.slice/web for cpu (quota -1, its parent 50000) ... */
        assert_int_equal(limits_locate(h, "app/web", PSI_RESOURCE_CPU, &loc), 0);
        assert_int_equal(loc.source, LIMITS_SOURCE_V1);
        assert_int_equal(loc.via_pid, 100);
        assert_string_equal(loc.path, "app.slice/web");
        assert_true(loc.limited);
        assert_string_equal(loc.limited_path, "app.slice");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_CPU_CFS_QUOTA);
        assert_int_equal(loc.limit.value, 50000);
        assert_int_equal(loc.limit.period_us, 100000);
        assert_int_equal(limits_read_cpu_at(h, loc.source, loc.limited_path, &cpu), 0);
        assert_int_equal(cpu.source, LIMITS_SOURCE_V1);
        assert_int_equal(cpu.quota_us, 50000);
        assert_int_equal(cpu.period_us, 100000);
        assert_int_equal(cpu.nr_throttled, 80);
        assert_int_equal(cpu.throttled_us, 4000123);

        /* ... mem/web-v1 for memory, limited by its parent's 128 MiB ... */
        assert_int_equal(limits_locate(h, "/app/web", PSI_RESOURCE_MEMORY, &loc), 0);
        assert_string_equal(loc.path, "mem/web-v1");
        assert_string_equal(loc.limited_path, "mem");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_MEMORY_LIMIT_IN_BYTES);
        assert_int_equal(loc.limit.value, 134217728);
        assert_int_equal(limits_read_memory_at(h, loc.source, loc.limited_path, &mem), 0);
        assert_int_equal(mem.max_bytes, 134217728);
        assert_int_equal(limits_read_memory_at(h, loc.source, loc.path, &mem), 0);
        assert_true(mem.max_bytes == LIMITS_UNLIMITED);
        assert_false(mem.has_high); /* v1 has no high; the soft limit is not one */
        assert_true(mem.has_soft_limit && mem.soft_limit_bytes == 67108864);
        assert_true(mem.events.has_max && mem.events.max == 42); /* failcnt */
        assert_true(mem.events.has_oom_kill && mem.events.oom_kill == 2);
        assert_false(mem.events.has_high || mem.events.has_oom || mem.events_local.has_max);
        assert_int_equal(mem.anon_bytes, 83886080);
        assert_int_equal(mem.refault_file, 48211);

        /* ... and app.slice/web for blkio, limited by app.slice's write_bps_device rule. */
        assert_int_equal(limits_locate(h, "app/web", PSI_RESOURCE_IO, &loc), 0);
        assert_string_equal(loc.path, "app.slice/web");
        assert_string_equal(loc.limited_path, "app.slice");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_BLKIO_THROTTLE);
        assert_int_equal(limits_read_io_at(h, loc.source, loc.path, &io), 0);
        assert_int_equal(io.n_devices, 1);
        assert_string_equal(io.devices[0].name, "vda");
        assert_int_equal(io.devices[0].wbytes, 16777216);
        assert_int_equal(io.devices[0].wios, 16);
        assert_int_equal(limits_read_io_at(h, loc.source, loc.limited_path, &io), 0);
        assert_int_equal(io.devices[0].wbps, 1073741824);
        assert_true(io.devices[0].rbps == LIMITS_UNLIMITED);

        /* An empty cgroup: a process of a descendant (the first one listed has ended), with the
         * descendant's part of the path taken off where the v1 path ends with it. */
        assert_int_equal(limits_locate(h, "svc", PSI_RESOURCE_MEMORY, &loc), 0);
        assert_int_equal(loc.via_pid, 300);
        assert_string_equal(loc.path, "svc");
        assert_false(loc.limited);
        assert_int_equal(limits_locate(h, "svc", PSI_RESOURCE_CPU, &loc), 0);
        assert_string_equal(loc.path, "svc-v1");
        assert_int_equal(limits_locate(h, "svc", PSI_RESOURCE_IO, &loc), 0);
        assert_string_equal(loc.path, ""); /* the process is in the blkio root */

        /* No process anywhere below: nothing to learn the v1 cgroup from. */
        assert_int_equal(limits_locate(h, "idle", PSI_RESOURCE_MEMORY, &loc), -ESRCH);
        assert_int_equal(limits_locate(h, "nosuch", PSI_RESOURCE_MEMORY, &loc), -ENOENT);
}

/* A host without a controller anywhere: located nowhere, not an error. */
static void test_no_controller(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        LimitsLocation loc;
        CpuLimits cpu;

        /* tests/fixtures/hybrid: cgroup2 without cgroup.controllers, v1 memory and cpu,cpuacct
         * mounts (found by the sysroot), no blkio one. */
        open_hierarchy(fixture("hybrid"), &s, &h);
        assert_string_equal(s->cpu_v1_path, "/sys/fs/cgroup/cpu,cpuacct");
        assert_string_equal(s->cpuacct_v1_path, "/sys/fs/cgroup/cpu,cpuacct");
        assert_null(s->blkio_v1_path);
        assert_int_equal(h->source[PSI_RESOURCE_IO], LIMITS_SOURCE_NONE);
        assert_int_equal(limits_locate(h, "app/web", PSI_RESOURCE_IO, &loc), 0);
        assert_int_equal(loc.source, LIMITS_SOURCE_NONE);
        assert_false(loc.limited);
        assert_int_equal(limits_read_cpu_at(h, LIMITS_SOURCE_NONE, "", &cpu), -ENODEV);

        /* The controllers there are: web's memcg is app's, 256 MiB; batch's own cfs quota; web
         * has no quota (its cpu cgroup has no cpu.cfs_quota_us, nor has app). */
        assert_int_equal(h->source[PSI_RESOURCE_MEMORY], LIMITS_SOURCE_V1);
        assert_int_equal(limits_locate(h, "app/web", PSI_RESOURCE_MEMORY, &loc), 0);
        assert_string_equal(loc.path, "app");
        assert_string_equal(loc.limited_path, "app");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_MEMORY_LIMIT_IN_BYTES);
        assert_int_equal(loc.limit.value, 268435456);
        assert_int_equal(limits_locate(h, "app/batch", PSI_RESOURCE_CPU, &loc), 0);
        assert_string_equal(loc.limited_path, "app/batch");
        assert_int_equal(loc.limit.kind, LIMITS_KIND_CPU_CFS_QUOTA);
        assert_int_equal(loc.limit.value, 50000);
        assert_int_equal(loc.limit.period_us, 100000);
        assert_int_equal(limits_locate(h, "app/web", PSI_RESOURCE_CPU, &loc), 0);
        assert_false(loc.limited);
        assert_int_equal(loc.limit.kind, LIMITS_KIND_NONE);
}

/* Which cgroup2 cgroup's processes compete for a located limit. */
static void test_location_scope(void **state) {
        LimitsLocation loc = { .source = LIMITS_SOURCE_V2, .limited = true };
        size_t len;

        /* cgroup2: the limited cgroup itself, a leading '/' counted as given. */
        strcpy(loc.path, "a/b/c");
        strcpy(loc.limited_path, "a/b");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), 0);
        assert_int_equal(len, strlen("a/b"));
        assert_int_equal(limits_location_scope(&loc, "/a/b/c", &len), 0);
        assert_int_equal(len, strlen("/a/b"));
        strcpy(loc.limited_path, "a/b/c");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), 0);
        assert_int_equal(len, strlen("a/b/c"));
        /* Not limited, or limited at the root: the node. */
        strcpy(loc.limited_path, "");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), -ENOENT);
        loc.limited = false;
        strcpy(loc.limited_path, "a");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), -ENOENT);

        /* v1 with the same paths: the same cgroup; "a/bx" is no ancestor of "a/b/c". */
        loc = (LimitsLocation) { .source = LIMITS_SOURCE_V1, .limited = true };
        strcpy(loc.path, "a/b/c");
        strcpy(loc.limited_path, "a/b");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), 0);
        assert_int_equal(len, strlen("a/b"));
        /* v1 cgroup mem/web-v1 of cgroup2 app/web, limited at mem: one level up, app. */
        strcpy(loc.path, "mem/web-v1");
        strcpy(loc.limited_path, "mem");
        assert_int_equal(limits_location_scope(&loc, "app/web", &len), 0);
        assert_int_equal(len, strlen("app"));
        strcpy(loc.limited_path, "mem/web-v1");
        assert_int_equal(limits_location_scope(&loc, "/app/web", &len), 0);
        assert_int_equal(len, strlen("/app/web"));
        /* A memcg deeper than the cgroup2 cgroup, limited above its depth: the node. */
        strcpy(loc.path, "x/y/z");
        strcpy(loc.limited_path, "x");
        assert_int_equal(limits_location_scope(&loc, "app/web", &len), -ENOENT);
        strcpy(loc.limited_path, "x/y");
        assert_int_equal(limits_location_scope(&loc, "app/web", &len), 0);
        assert_int_equal(len, strlen("app"));
        /* The v1 path agrees with an ancestor of the cgroup2 one: that ancestor. */
        strcpy(loc.path, "app");
        strcpy(loc.limited_path, "app");
        assert_int_equal(limits_location_scope(&loc, "app/web", &len), 0);
        assert_int_equal(len, strlen("app"));
        strcpy(loc.path, "a/bx");
        strcpy(loc.limited_path, "a/bx");
        assert_int_equal(limits_location_scope(&loc, "a/b/c", &len), 0);
        assert_int_equal(len, strlen("a/b/c"));
}

/* An io.stat longer than the reader's buffer (hundreds of devices): the line the buffer cuts is
 * dropped, not misread, and the devices over the bound are counted. */
static void test_io_stat_too_long(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", text[400 * 96];
        size_t len = 0;
        IoLimits io;
        int fd;

        assert_non_null(mkdtemp(dir));
        for (int i = 0; i < 400; i++)
                len += (size_t) snprintf(text + len, sizeof text - len,
                                         "7:%d rbytes=123456789 wbytes=123456789 rios=1234 wios=1234 dbytes=0 dios=0\n",
                                         i);
        assert_true(len < sizeof text);
        assert_int_equal(fake_tree_write(dir, "io.stat", text), 0);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(limits_read_io_v2(fd, &io), 0);
        assert_int_equal(io.n_devices, LIMITS_IO_DEVICES_MAX);
        assert_true(io.devices_dropped > 100 && io.devices_dropped < 400 - LIMITS_IO_DEVICES_MAX);
        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_proc_cgroup_v1),        cmocka_unit_test(test_cgroup2),
                cmocka_unit_test(test_cgroup2_unknown_lines), cmocka_unit_test(test_hybrid),
                cmocka_unit_test(test_no_controller),         cmocka_unit_test(test_location_scope),
                cmocka_unit_test(test_io_stat_too_long),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
