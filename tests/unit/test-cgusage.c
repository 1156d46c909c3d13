/* SPDX-License-Identifier: MIT */
/* A cgroup's own counters: the cgroup2 files and their cgroup-v1 equivalents, parsed from the
 * kernel's formats (copied from 6.18) and read from scratch directories laid out like the
 * mounts. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/cgusage.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void test_cpu_stat(void **state) {
        static const char stat[] = "usage_usec 3400762847\nuser_usec 2367339643\nsystem_usec 1033423203\n";
        uint64_t us = 7;

        assert_int_equal(cgroup_usage_parse_cpu_stat(stat, strlen(stat), &us), 0);
        assert_int_equal(us, 3400762847ULL);
        assert_int_equal(cgroup_usage_parse_cpu_stat("user_usec 1\n", 12, &us), -ENOENT);
        assert_unparsed(UNPARSED_CPU_STAT, 1,
                        assert_int_equal(cgroup_usage_parse_cpu_stat("usage_usec x\n", 13, &us), -ENOENT));
        assert_int_equal(us, 3400762847ULL); /* untouched on failure */
        assert_unparsed(UNPARSED_CPU_STAT, 1,
                        assert_int_equal(cgroup_usage_parse_cpu_stat("(unknown) \nusage_usec 5\n", 24, &us), 0));
        assert_int_equal(us, 5);
}

static void test_io_stat(void **state) {
        /* Two devices; iocost's keys hold decimals and are skipped. */
        static const char io[] = "8:0 rbytes=1048576 wbytes=4096 rios=10 wios=1 dbytes=0 dios=0\n"
                                 "259:0 rbytes=10 wbytes=20 rios=1 wios=1 dbytes=0 dios=0 cost.vrate=100.00\n";
        uint64_t r = 1, w = 1;

        assert_int_equal(cgroup_usage_parse_io_stat(io, strlen(io), &r, &w), 0);
        assert_int_equal(r, 1048586);
        assert_int_equal(w, 4116);
        assert_int_equal(cgroup_usage_parse_io_stat("", 0, &r, &w), 0); /* no io yet */
        assert_int_equal(r, 0);
        assert_int_equal(w, 0);
        /* A line it cannot read costs that line, the other devices still count. */
        static const char bad[] = "rbytes=1\n8:0 rbytes=-1 wbytes=9\n8:16 rbytes=3 wbytes=4\n(unknown) \n";
        assert_unparsed(UNPARSED_IO_STAT, 3, assert_int_equal(cgroup_usage_parse_io_stat(bad, strlen(bad), &r, &w), 0));
        assert_int_equal(r, 3);
        assert_int_equal(w, 4);
        /* Sums saturate instead of wrapping. */
        static const char big[] = "8:0 rbytes=18446744073709551615\n8:16 rbytes=5\n";
        assert_int_equal(cgroup_usage_parse_io_stat(big, strlen(big), &r, &w), 0);
        assert_true(r == UINT64_MAX);
}

static void test_blkio_bytes(void **state) {
        static const char v1[] = "254:0 Read 221047480320\n254:0 Write 4132110336\n254:0 Sync 230522560512\n"
                                 "254:0 Async 1312788480\n254:0 Discard 6655758336\n254:0 Total 237490407424\n"
                                 "8:0 Read 10\n8:0 Write 20\nTotal 237490407454\n";
        uint64_t r, w;

        assert_int_equal(cgroup_usage_parse_blkio_bytes(v1, strlen(v1), &r, &w), 0);
        assert_int_equal(r, 221047480330ULL);
        assert_int_equal(w, 4132110356ULL);
        assert_int_equal(cgroup_usage_parse_blkio_bytes("Total 0\n", 8, &r, &w), 0);
        assert_int_equal(r, 0);
        assert_unparsed(UNPARSED_BLKIO, 1,
                        assert_int_equal(cgroup_usage_parse_blkio_bytes("8:0 Read\n8:0 Write 2\n", 20, &r, &w), 0));
        assert_int_equal(r, 0);
        assert_int_equal(w, 2);
}

#define put(dir, name, text) assert_int_equal(fake_tree_write((dir), (name), (text)), 0)

static int open_dir(const char *dir, const char *sub) {
        char path[512];
        int fd;

        assert_int_equal(fake_tree_mkdirs(dir, sub), 0);
        snprintf(path, sizeof path, "%s/%s", dir, sub);
        fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

/* A plain cgroup2 host: everything from the cgroup's own files. A hybrid one: cpu.stat from
 * cgroup2 (its core file), io and memory from the v1 controllers' directories. */
static void test_read_v2_then_v1(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", sub[600];
        CgroupUsage u;

        assert_non_null(mkdtemp(dir));
        int v2 = open_dir(dir, "v2"), blkio = open_dir(dir, "blkio"), mem = open_dir(dir, "memory"),
            cpuacct = open_dir(dir, "cpuacct");
        snprintf(sub, sizeof sub, "%s/v2", dir);
        put(sub, "cpu.stat", "usage_usec 5000\nuser_usec 4000\n");
        put(sub, "memory.current", "1048576\n");
        put(sub, "io.stat", "8:0 rbytes=100 wbytes=200 rios=1 wios=1\n");
        assert_int_equal(cgroup_usage_read_v2(v2, &u), 0);
        assert_true(u.has_cpu && u.has_io && u.has_memory);
        assert_int_equal(u.cpu_us, 5000);
        assert_int_equal(u.read_bytes, 100);
        assert_int_equal(u.write_bytes, 200);
        assert_int_equal(u.memory_bytes, 1048576);
        assert_false(u.has_dirty); /* no memory.stat: no memory controller */
        /* With the memory controller, the io counter comes with the page cache waiting for the disks. */
        put(sub, "memory.stat", "anon 4096\nfile 8192\nfile_dirty 3000\nfile_writeback 1000\nshmem 0\n");
        assert_int_equal(cgroup_usage_read_v2(v2, &u), 0);
        assert_true(u.has_dirty);
        assert_int_equal(u.dirty_bytes, 4000);
        uint64_t dirty = 9;
        assert_int_equal(cgroup_usage_parse_dirty("file_dirty 1\n", 13, &dirty), -ENOENT);
        assert_int_equal(cgroup_usage_parse_dirty("file_dirty 1\n(unknown) 9\nfile_writeback 2\n", 42, &dirty), 0);
        assert_int_equal(dirty, 3);
        snprintf(sub, sizeof sub, "%s/v2/memory.stat", dir);
        assert_int_equal(unlink(sub), 0);
        snprintf(sub, sizeof sub, "%s/v2", dir);

        /* Hybrid: no io.stat nor memory.current in cgroup2; v1 fills them, not cpu. */
        snprintf(sub, sizeof sub, "%s/v2/io.stat", dir);
        assert_int_equal(unlink(sub), 0);
        snprintf(sub, sizeof sub, "%s/v2/memory.current", dir);
        assert_int_equal(unlink(sub), 0);
        snprintf(sub, sizeof sub, "%s/blkio", dir);
        put(sub, "blkio.throttle.io_service_bytes_recursive", "8:0 Read 7\n8:0 Write 9\nTotal 16\n");
        snprintf(sub, sizeof sub, "%s/memory", dir);
        put(sub, "memory.usage_in_bytes", "4096\n");
        snprintf(sub, sizeof sub, "%s/cpuacct", dir);
        put(sub, "cpuacct.usage", "999999000\n");
        assert_int_equal(cgroup_usage_read_v2(v2, &u), 0);
        assert_true(u.has_cpu);
        assert_false(u.has_io || u.has_memory);
        assert_int_equal(cgroup_usage_read_v1(cpuacct, blkio, mem, &u), 0);
        assert_true(u.has_io && u.has_memory);
        assert_int_equal(u.cpu_us, 5000); /* cgroup2's own, kept */
        assert_int_equal(u.read_bytes, 7);
        assert_int_equal(u.write_bytes, 9);
        assert_int_equal(u.memory_bytes, 4096);

        /* Without cgroup2's cpu.stat (not a cgroup2 host): cpuacct in ns. No controller: nothing. */
        CgroupUsage none = {};
        assert_int_equal(cgroup_usage_read_v1(cpuacct, -1, -1, &none), 0);
        assert_true(none.has_cpu && !none.has_io && !none.has_memory);
        assert_int_equal(none.cpu_us, 999999);

        /* A malformed counter is an error, not a zero. */
        snprintf(sub, sizeof sub, "%s/memory", dir);
        put(sub, "memory.usage_in_bytes", "lots\n");
        none = (CgroupUsage) {};
        assert_int_equal(cgroup_usage_read_v1(-1, -1, mem, &none), -EINVAL);

        close(v2);
        close(blkio);
        close(mem);
        close(cpuacct);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A subtree walk under the walk's policy (probes/cgwalk.h): a child whose counter cannot be read
 * (here a directory where cpu.stat should be; a malformed line only costs that line) is left out and its parent says
 * children are missing; a child without cgroup.procs any more (being removed) lists no processes; the others are read.
 */
static void test_walk_unreadable_child(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        CgroupUsages t = {};
        bool ok = false;
        int fd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "cpu.stat", "usage_usec 900\n"), 0);
        assert_int_equal(fake_tree_write(dir, "cgroup.procs", ""), 0);
        assert_int_equal(fake_tree_write(dir, "a/cpu.stat", "usage_usec 500\n"), 0);
        assert_int_equal(fake_tree_write(dir, "a/cgroup.procs", "7\n"), 0);
        assert_int_equal(fake_tree_write(dir, "a/bad/cpu.stat/x", ""), 0);
        assert_int_equal(fake_tree_write(dir, "a/bad/below/cpu.stat", "usage_usec 1\n"), 0);
        assert_int_equal(fake_tree_write(dir, "ok/cpu.stat", "usage_usec 100\n"), 0);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgroup_usages_read(fd, -1, PSI_RESOURCE_CPU, &t), 0);
        assert_int_equal(t.n, 3); /* "", a, ok */
        for (size_t i = 0; i < t.n; i++) {
                const char *p = cgroup_usage_path(&t, &t.items[i]);
                assert_null(strstr(p, "bad"));
                assert_int_equal(t.items[i].children_missing, strcmp(p, "a") == 0);
                if (strcmp(p, "ok") == 0) {
                        ok = true;
                        assert_int_equal(t.items[i].usage.cpu_us, 100);
                        assert_int_equal(t.items[i].n_pids, 0);
                }
        }
        assert_true(ok);
        assert_false(cgroup_usages_complete(&t));
        close(fd);
        cgroup_usages_done(&t);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu_stat),
                cmocka_unit_test(test_io_stat),
                cmocka_unit_test(test_blkio_bytes),
                cmocka_unit_test(test_read_v2_then_v1),
                cmocka_unit_test(test_walk_unreadable_child),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
