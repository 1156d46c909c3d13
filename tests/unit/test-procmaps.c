/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/procmaps.h"
#include "tests/unit/test-util.h"

/* The shape of a real /proc/self/maps (6.18, cat), as the fixture tree's 4242/maps holds it. */
static const char real_maps[] =
        "557b8c24e000-557b8c250000 r--p 00000000 fe:00 247134                     /usr/bin/cat\n"
        "557b8c250000-557b8c255000 r-xp 00002000 fe:00 247134                     /usr/bin/cat\n"
        "557b8ceb0000-557b8ced1000 rw-p 00000000 00:00 0                          [heap]\n"
        "7fe7e1879000-7fe7e193d000 rw-p 00000000 00:00 0 \n"
        "7fe7e19c4000-7fe7e1b1a000 r-xp 00026000 fe:00 332835                     "
        "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fe7e1b83000-7fe7e1b8a000 r--s 00000000 103:0a 332280                    "
        "/usr/lib/x86_64-linux-gnu/gconv/gconv-modules.cache\n"
        "7fe7e1b8b000-7fe7e1b8d000 rw-p 00000000 00:00 0                          [anon:[vdso]]\n"
        "7fe7e1b8d000-7fe7e1b91000 r--p 00000000 00:00 0                          [vvar]\n"
        "7fe7e1b93000-7fe7e1b95000 r-xp 00000000 00:00 0                          [vdso]\n"
        "7ffd2a1f1000-7ffd2a212000 rw-p 00000000 00:00 0                          [stack]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static int parse(const char *s, ProcMaps *m) {
        return procmaps_parse_buf(s, strlen(s), m);
}

static void test_real_shape(void **state) {
        ProcMaps m = {};

        assert_int_equal(parse(real_maps, &m), 0);
        /* cat twice, libc, the cache, the vDSO, vsyscall; not the heap, the stack, [vvar], an
         * anonymous row, nor an anonymous row a program named "[vdso]" (prctl PR_SET_VMA). */
        assert_int_equal(m.n, 6);
        assert_int_equal(m.n_skipped, 0);
        assert_false(m.truncated);
        assert_int_equal(m.rows[0].start, 0x557b8c24e000);
        assert_int_equal(m.rows[0].end, 0x557b8c250000);
        assert_int_equal(m.rows[0].dev_major, 0xfe);
        assert_int_equal(m.rows[0].inode, 247134);
        assert_true(m.rows[0].read && !m.rows[0].write && !m.rows[0].exec && !m.rows[0].shared);
        assert_string_equal(m.rows[0].path, "/usr/bin/cat");
        assert_int_equal(m.rows[1].offset, 0x2000);
        assert_true(m.rows[1].exec);
        assert_string_equal(m.rows[2].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_true(m.rows[3].shared);
        assert_int_equal(m.rows[3].dev_major, 0x103);
        assert_int_equal(m.rows[3].dev_minor, 0x0a);
        assert_string_equal(m.rows[4].path, "[vdso]");
        assert_int_equal(m.rows[4].inode, 0);
        assert_string_equal(m.rows[5].path, "[vsyscall]");
        assert_int_equal(m.rows[5].end, 0xffffffffff601000);
        for (size_t i = 0; i < m.n; i++)
                assert_false(m.rows[i].deleted || m.rows[i].path_cut);
        procmaps_clear(&m);
        assert_null(m.rows);
        assert_int_equal(m.n, 0);
        procmaps_clear(&m);
        procmaps_clear(NULL);
}

/* Names a user chose, as 6.18 wrote them for files mapped here: spaces inside and at the end kept,
 * " (deleted)" taken off, a newline shown as "\012" (and a name holding "\012" itself the same). */
static void test_user_names(void **state) {
        static const char maps[] =
                "1000-2000 r--s 00000000 fe:00 10952994                   /tmp/pm a b\\012c\n"
                "2000-3000 r--s 00000000 fe:00 10952995                   /tmp/pm back\\012slash\n"
                "3000-4000 r--s 00000000 fe:00 10952996                   /tmp/pm trailing  \n"
                "4000-5000 r-xp 00001000 fe:00 10952997                   /tmp/pm gone (deleted)\n"
                "5000-6000 r-xp 00000000 00:01 77 /memfd:jit (deleted)\n"
                "6000-7000 r-xp 00000000 fe:00 12                         /tmp/ (deleted) (deleted)\n"
                "7000-8000 r-xp 00000000 fe:00 13                         (deleted)\n";
        ProcMaps m = {};

        assert_int_equal(parse(maps, &m), 0);
        assert_int_equal(m.n, 7);
        assert_int_equal(m.n_skipped, 0);
        assert_string_equal(m.rows[0].path, "/tmp/pm a b\\012c");
        assert_string_equal(m.rows[1].path, "/tmp/pm back\\012slash");
        assert_string_equal(m.rows[2].path, "/tmp/pm trailing  ");
        assert_false(m.rows[2].deleted);
        assert_string_equal(m.rows[3].path, "/tmp/pm gone");
        assert_true(m.rows[3].deleted);
        assert_string_equal(m.rows[4].path, "/memfd:jit");
        assert_true(m.rows[4].deleted);
        /* Only the last suffix is the kernel's. */
        assert_string_equal(m.rows[5].path, "/tmp/ (deleted)");
        assert_true(m.rows[5].deleted);
        /* The whitespace after the inode was the suffix's own space. */
        assert_string_equal(m.rows[6].path, "(deleted)");
        assert_false(m.rows[6].deleted);
        procmaps_clear(&m);
}

/* A row that starts before the previous one ended (out of order, or overlapping) is skipped. */
static void test_out_of_order(void **state) {
        static const char maps[] = "5000-6000 r-xp 00000000 fe:00 1 /a\n"
                                   "1000-2000 r-xp 00000000 fe:00 2 /before\n"
                                   "5800-7000 r-xp 00000000 fe:00 3 /overlap\n"
                                   "6000-7000 rw-p 00000000 00:00 0 \n"
                                   "6800-7000 r-xp 00000000 fe:00 4 /inside-anon\n"
                                   "7000-8000 r-xp 00000000 fe:00 5 /b\n";
        ProcMaps m = {};

        assert_int_equal(parse(maps, &m), 0);
        assert_int_equal(m.n, 2);
        assert_int_equal(m.n_skipped, 3);
        assert_string_equal(m.rows[0].path, "/a");
        assert_string_equal(m.rows[1].path, "/b");
        procmaps_clear(&m);
}

/* Every line here is broken and skipped; the good ones around them are kept. */
static void test_hostile_lines(void **state) {
        static const char *bad[] = {
                "",
                "1000-2000",
                "1000-2000 r-xp",
                "1000-2000 r-xp 00000000 fe:00",
                "1000-2000 r-xp 00000000 fe:00 ",
                "1000 2000 r-xp 00000000 fe:00 9 /x",
                "g000-2000 r-xp 00000000 fe:00 9 /x",
                "1000-2000 r-xq 00000000 fe:00 9 /x",
                "1000-2000 rwx 00000000 fe:00 9 /x",
                "1000-2000 r-xp 0000000z fe:00 9 /x",
                "1000-2000 r-xp 00000000 fe00 9 /x",
                "1000-2000 r-xp 00000000 fe:00 9x /x",
                "1000-2000 r-xp 00000000 fe:00 -9 /x",
                "10000000000000000-10000000000000001 r-xp 00000000 fe:00 9 /x",
                "1000-2000 r-xp 10000000000000000 fe:00 9 /x",
                "1000-2000 r-xp 00000000 100000000:00 9 /x",
                "1000-2000 r-xp 00000000 fe:100000000 9 /x",
                "1000-2000 r-xp 00000000 fe:00 18446744073709551616 /x",
                "2000-2000 r-xp 00000000 fe:00 9 /x",
                "3000-2000 r-xp 00000000 fe:00 9 /x",
                "1000-2000\tr-xp 00000000 fe:00 9 /x",
        };
        char buf[4096];
        size_t len = 0;
        ProcMaps m = {};

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                len += (size_t) snprintf(buf + len, sizeof buf - len, "%s\n", bad[i]);
        len += (size_t) snprintf(buf + len, sizeof buf - len, "%s",
                                 "ffffffffffffe000-ffffffffffffffff r-xp ffffffffffffffff ffffffff:ffffffff "
                                 "18446744073709551615 /max\n");
        /* A NUL inside a path would cut it short for whoever reads it. */
        memcpy(buf + len, "1000-2000 r-xp 00000000 fe:00 9 /nul\0x\n", 39);
        len += 39;
        assert_true(len < sizeof buf);
        assert_int_equal(procmaps_parse_buf(buf, len, &m), 0);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.n_skipped, ELEMENTSOF(bad) + 1);
        assert_string_equal(m.rows[0].path, "/max");
        assert_int_equal(m.rows[0].offset, UINT64_MAX);
        assert_int_equal(m.rows[0].dev_major, UINT32_MAX);
        assert_int_equal(m.rows[0].dev_minor, UINT32_MAX);
        assert_int_equal(m.rows[0].inode, UINT64_MAX);
        procmaps_clear(&m);
        /* A last line without its '\n' is a line; len 0 is no rows, not an error. */
        assert_int_equal(parse("1000-2000 r-xp 00000000 fe:00 9 /last", &m), 0);
        assert_int_equal(m.n, 1);
        assert_string_equal(m.rows[0].path, "/last");
        procmaps_clear(&m);
        assert_int_equal(procmaps_parse_buf(NULL, 0, &m), 0);
        assert_int_equal(m.n, 0);
        assert_false(m.truncated);
        procmaps_clear(&m);
}

/* A path of PROCMAPS_PATH_MAX - 1 bytes is kept; one byte more keeps its row, path "" and cut. */
static void test_path_cut(void **state) {
        char path[PROCMAPS_PATH_MAX + 64], buf[4 * sizeof path];
        ProcMaps m = {};
        int n;

        memset(path, 'a', sizeof path);
        path[0] = '/';
        n = snprintf(buf, sizeof buf,
                     "1000-2000 r-xp 00000000 fe:00 1 %.*s\n"
                     "2000-3000 r-xp 00000000 fe:00 2 %.*s\n"
                     "3000-4000 r-xp 00000000 fe:00 3 %.*s (deleted)\n"
                     "4000-5000 r-xp 00000000 fe:00 4 %.*s (deleted)\n"
                     "5000-6000 r-xp 00000000 fe:00 5 /after\n",
                     PROCMAPS_PATH_MAX - 1, path, PROCMAPS_PATH_MAX, path, PROCMAPS_PATH_MAX - 1, path,
                     (int) sizeof path, path);
        assert_true(n > 0 && (size_t) n < sizeof buf);
        assert_int_equal(procmaps_parse_buf(buf, (size_t) n, &m), 0);
        assert_int_equal(m.n, 5);
        assert_int_equal(m.n_skipped, 0);
        assert_int_equal(strlen(m.rows[0].path), PROCMAPS_PATH_MAX - 1);
        assert_false(m.rows[0].path_cut);
        assert_string_equal(m.rows[1].path, "");
        assert_true(m.rows[1].path_cut);
        assert_int_equal(m.rows[1].inode, 2);
        assert_int_equal(strlen(m.rows[2].path), PROCMAPS_PATH_MAX - 1);
        assert_true(m.rows[2].deleted && !m.rows[2].path_cut);
        assert_string_equal(m.rows[3].path, "");
        assert_true(m.rows[3].deleted && m.rows[3].path_cut);
        assert_string_equal(m.rows[4].path, "/after");
        procmaps_clear(&m);
}

/* Writes n file rows of 4 KiB each from 0x10000 into buf, each named long. Returns the length. */
static size_t make_rows(char *buf, size_t size, size_t n) {
        size_t len = 0;

        for (size_t i = 0; i < n; i++) {
                uint64_t start = 0x10000 + (uint64_t) i * 0x1000;
                int k = snprintf(buf + len, size - len,
                                 "%012llx-%012llx r-xp 00000000 fe:00 %zu "
                                 "/usr/lib/x86_64-linux-gnu/a-library-with-a-long-name-%zu.so\n",
                                 (unsigned long long) start, (unsigned long long) start + 0x1000, i + 1, i);

                assert_true(k > 0 && (size_t) k < size - len);
                len += (size_t) k;
        }
        return len;
}

/* Past PROCMAPS_ROWS_MAX rows kept the rest is not read. */
static void test_rows_max(void **state) {
        size_t size = 5000 * 200;
        _cleanup_free_ char *buf = malloc(size);
        ProcMaps m = {};
        size_t len;

        assert_non_null(buf);
        len = make_rows(buf, size, PROCMAPS_ROWS_MAX);
        assert_int_equal(procmaps_parse_buf(buf, len, &m), 0);
        assert_int_equal(m.n, PROCMAPS_ROWS_MAX);
        assert_false(m.truncated);
        procmaps_clear(&m);
        len = make_rows(buf, size, 5000);
        assert_int_equal(procmaps_parse_buf(buf, len, &m), 0);
        assert_int_equal(m.n, PROCMAPS_ROWS_MAX);
        assert_true(m.truncated);
        assert_int_equal(m.n_skipped, 0);
        assert_string_equal(m.rows[PROCMAPS_ROWS_MAX - 1].path,
                            "/usr/lib/x86_64-linux-gnu/a-library-with-a-long-name-4095.so");
        assert_non_null(procmaps_find(&m, 0x10000));
        assert_null(procmaps_find(&m, 0x10000 + (uint64_t) PROCMAPS_ROWS_MAX * 0x1000));
        procmaps_clear(&m);
}

#define BIG_SIZE (PROCMAPS_BYTES_MAX + 4096)
#define LAST_ROW "7f0000000000-7f0000001000 r-xp 00000000 fe:00 7 /"

/* Anonymous rows (not kept) until buf holds at least until bytes. Returns the length. */
static size_t fill_anon(char *buf, size_t until) {
        size_t len = 0;

        for (uint64_t start = 0x10000; len < until; start += 0x1000) {
                int k = snprintf(buf + len, BIG_SIZE - len, "%012llx-%012llx rw-p 00000000 00:00 0 \n",
                                 (unsigned long long) start, (unsigned long long) start + 0x1000);

                assert_true(k > 0 && (size_t) k < BIG_SIZE - len);
                len += (size_t) k;
        }
        return len;
}

/* Anonymous rows, then a file row that ends exactly at PROCMAPS_BYTES_MAX, its path padded with
 * 'a's; one byte more after it. */
static char *make_exact(void) {
        char *buf = malloc(BIG_SIZE);
        size_t len, pad;

        assert_non_null(buf);
        len = fill_anon(buf, PROCMAPS_BYTES_MAX - 400);
        memcpy(buf + len, LAST_ROW, strlen(LAST_ROW));
        len += strlen(LAST_ROW);
        pad = PROCMAPS_BYTES_MAX - 1 - len;
        assert_true(pad > 0 && pad < PROCMAPS_PATH_MAX - 1);
        memset(buf + len, 'a', pad);
        buf[PROCMAPS_BYTES_MAX - 1] = '\n';
        buf[PROCMAPS_BYTES_MAX] = 'x';
        return buf;
}

/* Only the whole lines within PROCMAPS_BYTES_MAX are read: a row the bound cuts is dropped (not
 * counted), and the maps are truncated; a file of exactly PROCMAPS_BYTES_MAX bytes is whole. */
static void test_bytes_max(void **state) {
        _cleanup_free_ char *buf = malloc(BIG_SIZE), *exact = make_exact();
        ProcMaps m = {};
        size_t len;

        assert_non_null(buf);
        len = fill_anon(buf, PROCMAPS_BYTES_MAX - 10);
        len += (size_t) snprintf(buf + len, BIG_SIZE - len, "%s", LAST_ROW "cut-by-the-bound.so\n");
        assert_true(len > PROCMAPS_BYTES_MAX);
        assert_int_equal(procmaps_parse_buf(buf, len, &m), 0);
        assert_true(m.truncated);
        assert_int_equal(m.n, 0);
        assert_int_equal(m.n_skipped, 0);
        procmaps_clear(&m);

        assert_int_equal(procmaps_parse_buf(exact, PROCMAPS_BYTES_MAX, &m), 0);
        assert_false(m.truncated);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.n_skipped, 0);
        assert_int_equal(m.rows[0].inode, 7);
        procmaps_clear(&m);
        /* One byte more: the last whole line is still read. */
        assert_int_equal(procmaps_parse_buf(exact, PROCMAPS_BYTES_MAX + 1, &m), 0);
        assert_true(m.truncated);
        assert_int_equal(m.n, 1);
        procmaps_clear(&m);
}

static void test_find(void **state) {
        static const char maps[] = "1000-3000 r-xp 00000000 fe:00 1 /a\n"
                                   "3000-4000 r-xp 00000000 fe:00 2 /b\n"
                                   "8000-9000 r-xp 00000000 fe:00 3 /c\n"
                                   "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
        ProcMaps m = {}, empty = {};

        assert_int_equal(parse(maps, &m), 0);
        assert_int_equal(m.n, 4);
        assert_null(procmaps_find(&m, 0));
        assert_null(procmaps_find(&m, 0xfff));
        assert_string_equal(procmaps_find(&m, 0x1000)->path, "/a");
        assert_string_equal(procmaps_find(&m, 0x2fff)->path, "/a");
        assert_string_equal(procmaps_find(&m, 0x3000)->path, "/b");
        assert_string_equal(procmaps_find(&m, 0x3fff)->path, "/b");
        assert_null(procmaps_find(&m, 0x4000));
        assert_null(procmaps_find(&m, 0x7fff));
        assert_string_equal(procmaps_find(&m, 0x8000)->path, "/c");
        assert_null(procmaps_find(&m, 0x9000));
        assert_string_equal(procmaps_find(&m, 0xffffffffff600000)->path, "[vsyscall]");
        assert_null(procmaps_find(&m, 0xffffffffff601000));
        assert_null(procmaps_find(&m, UINT64_MAX));
        assert_null(procmaps_find(&empty, 0x1000));
        assert_null(procmaps_find(NULL, 0x1000));
        procmaps_clear(&m);
}

static void test_read_fixture(void **state) {
        int proc = open(fixture("procmaps/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        ProcMaps m = {};
        const ProcMap *row;

        assert_true(proc >= 0);
        assert_int_equal(procmaps_read(proc, 4242, &m), 0);
        /* cat five times, libc five, the plugin, the vDSO, ld.so twice, vsyscall. */
        assert_int_equal(m.n, 15);
        assert_int_equal(m.n_skipped, 0);
        row = procmaps_find(&m, 0x7fe7e1b84000);
        assert_non_null(row);
        assert_string_equal(row->path, "/home/u/my plugin\\012v2.so");
        assert_true(row->deleted && row->exec && row->shared);
        assert_string_equal(procmaps_find(&m, 0x7fe7e1b94fff)->path, "[vdso]");
        assert_null(procmaps_find(&m, 0x7fe7e1b8c000)); /* [anon:[vdso]] */
        assert_null(procmaps_find(&m, 0x7ffd2a1f1000)); /* [stack] */
        procmaps_clear(&m);
        assert_int_equal(procmaps_read(proc, 4243, &m), -ESRCH);
        close(proc);
}

/* A file at and past the bound through the chunked read: the same as the parser's. */
static void test_read_bounded(void **state) {
        char dir[] = "/tmp/test-procmaps-XXXXXX";
        _cleanup_free_ char *exact = make_exact();
        ProcMaps m = {};
        int proc, fd;

        assert_non_null(mkdtemp(dir));
        proc = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(proc >= 0);
        assert_int_equal(mkdirat(proc, "7", 0700), 0);
        fd = openat(proc, "7/maps", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, exact, PROCMAPS_BYTES_MAX), PROCMAPS_BYTES_MAX);
        assert_int_equal(procmaps_read(proc, 7, &m), 0);
        assert_false(m.truncated);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.n_skipped, 0);
        procmaps_clear(&m);
        assert_int_equal(write(fd, "7f0000001000-7f0000002000 r-xp 00000000 fe:00 8 /past.so\n", 57), 57);
        assert_int_equal(procmaps_read(proc, 7, &m), 0);
        assert_true(m.truncated);
        assert_int_equal(m.n, 1);
        assert_int_equal(m.rows[0].inode, 7);
        procmaps_clear(&m);
        close(fd);
        assert_int_equal(unlinkat(proc, "7/maps", 0), 0);
        assert_int_equal(unlinkat(proc, "7", AT_REMOVEDIR), 0);
        close(proc);
        assert_int_equal(rmdir(dir), 0);
}

/* Our own maps: this function's code is in our executable's row, the vDSO is found, the stack is
 * not kept. */
static void test_read_self(void **state) {
        int proc = open("/proc", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
        ProcMaps m = {};
        const ProcMap *row;
        int local = 0;

        assert_true(proc >= 0);
        assert_int_equal(procmaps_read(proc, getpid(), &m), 0);
        assert_false(m.truncated);
        assert_int_equal(m.n_skipped, 0);
        assert_true(m.n > 0);
        row = procmaps_find(&m, (uint64_t) (uintptr_t) test_read_self);
        assert_non_null(row);
        assert_true(row->exec && row->inode != 0 && !row->deleted);
        assert_non_null(strstr(row->path, "test-procmaps"));
        if (vdso) {
                row = procmaps_find(&m, vdso);
                assert_non_null(row);
                assert_string_equal(row->path, "[vdso]");
        }
        assert_null(procmaps_find(&m, (uint64_t) (uintptr_t) &local));
        for (size_t i = 1; i < m.n; i++)
                assert_true(m.rows[i].start >= m.rows[i - 1].end);
        procmaps_clear(&m);
        close(proc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_shape),   cmocka_unit_test(test_user_names),
                cmocka_unit_test(test_out_of_order), cmocka_unit_test(test_hostile_lines),
                cmocka_unit_test(test_path_cut),     cmocka_unit_test(test_rows_max),
                cmocka_unit_test(test_bytes_max),    cmocka_unit_test(test_find),
                cmocka_unit_test(test_read_fixture), cmocka_unit_test(test_read_bounded),
                cmocka_unit_test(test_read_self),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
