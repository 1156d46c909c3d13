/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/diskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

/* This VM's /proc/diskstats (6.18: 17 counters), a 4.x line (11 counters), a partition, junk. */
static const char A[] =
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 254       0 vda 225507 133400 373617050 665720 78758 831157 35148160 340198 0 164624 "
        "1083626 1244999 22 36980416 77663 1312 43\n"
        " 254       1 vda1 225000 133000 373000000 665000 78000 831000 35000000 340000 0 164000 1000000\n"
        "   8      16 sdb 10 0 80 5 0 0 0 0 0 4 5\n"
        "garbage line\n"
        " 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";

/* One second later: vda wrote 100 MiB in 400 ios taking 2,000 ms in all, 900 ms busy, 3 in
 * flight; sdb read 8 KiB, 1 io of 4 ms, busy 4 ms; loop0 and zram0 idle. */
static const char B[] =
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 254       0 vda 225507 133400 373617050 665720 79158 831157 35352960 342198 3 165524 "
        "1085626 1244999 22 36980416 77663 1312 43\n"
        " 254       1 vda1 225000 133000 373000000 665000 78400 831000 35204800 342000 3 164900 1000000\n"
        "   8      16 sdb 11 0 96 9 0 0 0 0 0 8 9\n"
        " 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";

static void test_parse(void **state) {
        DiskStats s;

        assert_int_equal(diskstats_parse(A, strlen(A), &s), 0);
        assert_int_equal(s.n, 5);
        assert_string_equal(s.disks[1].name, "vda");
        assert_int_equal(s.disks[1].major, 254);
        assert_int_equal(s.disks[1].rsectors, 373617050);
        assert_int_equal(s.disks[1].wticks_ms, 340198);
        assert_int_equal(s.disks[1].io_ticks_ms, 164624);
        assert_string_equal(s.disks[3].name, "sdb");
        assert_string_equal(s.disks[4].name, "zram0"); /* no newline at the end */
        assert_unparsed(UNPARSED_DISKSTATS, 1, assert_int_equal(diskstats_parse("junk\n", 5, &s), -EINVAL));
        /* A line it cannot read costs that line (a name over the kernel's 32 bytes, cut lines). */
        static const char mixed[] = "junk\n254 0 vda 1 2 3 4 5 6 7 8 9 10 11\n254 16 vdb 1 2\n\n";
        assert_unparsed(UNPARSED_DISKSTATS, 2, assert_int_equal(diskstats_parse(mixed, strlen(mixed), &s), 0));
        assert_int_equal(s.n, 1);
        assert_string_equal(s.disks[0].name, "vda");
        assert_int_equal(diskstats_parse("", 0, &s), -EINVAL);
        /* A name longer than the kernel's 32 bytes is not a disk line. */
        assert_int_equal(
                diskstats_parse("1 2 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1 2 3 4 5 6 7 8 9 10 11\n", 66, &s),
                -EINVAL);
}

static void test_busiest(void **state) {
        DiskStats a, b;
        DiskBusy busy[4];

        assert_int_equal(diskstats_parse(A, strlen(A), &a), 0);
        assert_int_equal(diskstats_parse(B, strlen(B), &b), 0);
        /* Partitions are the reader's to drop; the parser keeps vda1, which ranks after vda. */
        assert_int_equal(diskstats_busiest(&a, &b, 1000000, busy, 4), 3);
        assert_string_equal(busy[0].name, "vda");
        assert_int_equal(busy[0].wbytes, 100 << 20);
        assert_int_equal(busy[0].rbytes, 0);
        assert_int_equal(busy[0].wios, 400);
        assert_true(busy[0].util > 0.899 && busy[0].util < 0.901);
        assert_true(busy[0].await_ms > 4.99 && busy[0].await_ms < 5.01);
        assert_int_equal(busy[0].in_flight, 3);
        assert_string_equal(busy[1].name, "vda1");
        assert_string_equal(busy[2].name, "sdb");
        assert_int_equal(busy[2].rbytes, 8192);
        /* At most max, the busiest kept. */
        assert_int_equal(diskstats_busiest(&a, &b, 1000000, busy, 1), 1);
        assert_string_equal(busy[0].name, "vda");
        /* Utilisation is capped at the interval; a device missing at the start is left out. */
        assert_int_equal(diskstats_busiest(&a, &b, 100000, busy, 4), 3);
        assert_true(busy[0].util == 1.0);
        a.n = 0;
        assert_int_equal(diskstats_busiest(&a, &b, 1000000, busy, 4), 0);
}

/* A device not serving its queue: requests in flight at both ends, fewer completed in the whole
 * interval than wait at its end. Listed first, even when its counters stood still (old kernels
 * moved io_ticks only as requests started and ended); a busy device that completes is not stuck. */
static void test_stuck(void **state) {
        static const char a_text[] = " 254 0 vda 100 0 800 50 400 0 8000 2000 21 5000 7000\n"
                                     " 254 16 vdb 100 0 800 50 400 0 8000 2000 4 5000 7000\n"
                                     " 254 32 vdc 100 0 800 50 400 0 8000 2000 0 5000 7000\n"
                                     " 8 0 sda 10 0 80 5 40 0 800 200 3 500 700\n";
        static const char b_text[] = " 254 0 vda 100 0 800 50 400 0 8000 2000 21 5000 7000\n"
                                     " 254 16 vdb 100 0 800 50 900 0 9000 2900 4 6000 8000\n"
                                     " 254 32 vdc 100 0 800 50 401 0 8008 2001 9 5010 7010\n"
                                     " 8 0 sda 10 0 80 5 41 0 808 201 5 1500 1700\n";
        DiskStats a, b;
        DiskBusy busy[4];

        assert_int_equal(diskstats_parse(a_text, strlen(a_text), &a), 0);
        assert_int_equal(diskstats_parse(b_text, strlen(b_text), &b), 0);
        assert_int_equal(diskstats_busiest(&a, &b, 1000000, busy, 4), 4);
        /* sda: 3 then 5 waiting, 1 completed in 1 s though 100% busy: stuck, and first. */
        assert_string_equal(busy[0].name, "sda");
        assert_true(busy[0].stuck);
        assert_int_equal(busy[0].in_flight_start, 3);
        assert_int_equal(busy[0].in_flight, 5);
        /* vda: 21 waiting at both ends, its counters still: listed, stuck. */
        assert_string_equal(busy[1].name, "vda");
        assert_true(busy[1].stuck);
        assert_int_equal(busy[1].wios + busy[1].rios, 0);
        /* vdb completed 500 with 4 waiting: serving; vdc had none waiting at the start. */
        for (size_t i = 2; i < 4; i++)
                assert_false(busy[i].stuck);
}

/* The reader drops partitions (sys/dev/block/MAJ:MIN/partition) and says when the file is too
 * large for its buffer. */
/* The node's dirty page cache (/proc/meminfo as 6.18 prints it): both lines or nothing. */
static void test_node_dirty(void **state) {
        static const char mi[] =
                "MemTotal:       24564780 kB\nMemFree:         9630672 kB\nDirty:           2293964 kB\n"
                "Writeback:          4096 kB\nAnonPages:       1211444 kB\nWritebackTmp:          0 kB\n";
        NodeDirty d = { 7, 7 };

        assert_int_equal(node_dirty_parse(mi, strlen(mi), &d), 0);
        assert_int_equal(d.dirty_bytes, 2293964ULL * 1024);
        assert_int_equal(d.writeback_bytes, 4096ULL * 1024);
        d = (NodeDirty) { 7, 7 };
        assert_int_equal(node_dirty_parse("Dirty: 1 kB\n", 12, &d), -EINVAL); /* no Writeback: */
        assert_int_equal(node_dirty_parse("Dirty: 1 kB\nWritebackTmp: 0 kB\n", 31, &d), -EINVAL);
        assert_int_equal(node_dirty_parse("Dirty: 1 MB\nWriteback: 0 kB\n", 28, &d), -EINVAL);
        assert_int_equal(node_dirty_parse("Dirty: x kB\nWriteback: 0 kB\n", 28, &d), -EINVAL);
        assert_int_equal(d.dirty_bytes, 7);
        assert_int_equal(node_dirty_parse("Dirty: 1 kB\nWriteback: 2 kB", 27, &d), 0); /* no last newline */
        assert_int_equal(d.writeback_bytes, 2048);
}

static void test_read(void **state) {
        char dir[] = "/tmp/psidiag-test-diskstats-XXXXXX", path[256], buf[4096];
        DiskStats s;
        int root;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "proc/diskstats", B), 0);
        assert_int_equal(fake_tree_write(dir, "sys/dev/block/254:1/partition", ""), 0);
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);

        assert_int_equal(diskstats_read(root, buf, sizeof buf, &s), 0);
        assert_int_equal(s.n, 4);
        for (size_t i = 0; i < s.n; i++)
                assert_string_not_equal(s.disks[i].name, "vda1");
        assert_int_equal(diskstats_read(root, buf, 64, &s), -ENOBUFS);
        close(root);

        /* A storage node: 300 partitions listed before its last disks; the cap counts disks only. */
        char big[65536];
        size_t o = 0;
        for (int i = 0; i < 300; i++) {
                o += (size_t) snprintf(big + o, sizeof big - o, " 8 %d sda%d 1 0 8 1 1 0 8 1 0 2 2\n", i + 1, i + 1);
                snprintf(path, sizeof path, "sys/dev/block/8:%d/partition", i + 1);
                assert_int_equal(fake_tree_write(dir, path, ""), 0);
        }
        o += (size_t) snprintf(big + o, sizeof big - o, " 65 0 sdq 5 0 40 1 0 0 0 0 0 1 1\n");
        assert_int_equal(fake_tree_write_bytes(dir, "proc/diskstats", big, o), 0);
        char *large = malloc(65536);
        assert_non_null(large);
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(diskstats_read(root, large, 65536, &s), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.disks[0].name, "sdq");
        assert_int_equal(s.dropped, 0);
        close(root);
        free(large);

        /* No /proc/diskstats (a restricted /proc): -ENOENT. */
        snprintf(path, sizeof path, "%s/proc/diskstats", dir);
        assert_int_equal(unlink(path), 0);
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(diskstats_read(root, buf, sizeof buf, &s), -ENOENT);
        close(root);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),      cmocka_unit_test(test_busiest), cmocka_unit_test(test_stuck),
                cmocka_unit_test(test_node_dirty), cmocka_unit_test(test_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
