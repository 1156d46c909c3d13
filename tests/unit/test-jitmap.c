/* SPDX-License-Identifier: MIT */
/* probes/jitmap.h: perf map lines parsed (hex with or without 0x, names with spaces), bad lines
 * skipped and counted, lookups at the edges, a newer line over older code winning, NSpid's last
 * field; and the load through a process's root: this process's own map found by its pid, one of
 * another owner refused, a symlink refused, a FIFO refused without waiting, none at all -ENOENT. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/jitmap.h"
#include "tests/unit/test-util.h"

static void test_parse(void **state) {
        static const char text[] = "1000 40 LazyCompile:*hot /srv/app.js:12\n"
                                   "0x2000 0x10 py::f:/a.py\n"
                                   "1020 10 newer over hot\n"
                                   "zz 10 not hex\n"
                                   "3000 0 empty\n"
                                   "4000 10\n"
                                   "fffffffffffffff0 20 wraps\n"
                                   "5000 8 last without newline";
        JitMap *m = NULL;
        uint64_t off = 99;

        assert_int_equal(jitmap_parse_buf(text, sizeof text - 1, &m), 0);
        assert_int_equal(jitmap_count(m), 4);
        assert_int_equal(jitmap_skipped(m), 4);
        assert_string_equal(jitmap_find(m, 0x1000, &off), "LazyCompile:*hot /srv/app.js:12");
        assert_int_equal(off, 0);
        assert_string_equal(jitmap_find(m, 0x101f, &off), "LazyCompile:*hot /srv/app.js:12");
        assert_string_equal(jitmap_find(m, 0x1020, &off), "newer over hot");
        assert_int_equal(off, 0);
        assert_string_equal(jitmap_find(m, 0x103f, &off), "LazyCompile:*hot /srv/app.js:12");
        assert_null(jitmap_find(m, 0x1040, &off));
        assert_null(jitmap_find(m, 0xfff, &off));
        assert_string_equal(jitmap_find(m, 0x200f, &off), "py::f:/a.py");
        assert_int_equal(off, 0xf);
        assert_string_equal(jitmap_find(m, 0x5007, NULL), "last without newline");
        assert_null(jitmap_find(m, 0x3000, NULL));
        jitmap_free(m);

        char long_name[1000];
        memset(long_name, 'x', sizeof long_name);
        memcpy(long_name, "10 4 ", 5);
        assert_int_equal(jitmap_parse_buf(long_name, sizeof long_name, &m), 0);
        assert_int_equal(strlen(jitmap_find(m, 0x10, NULL)), JITMAP_NAME_MAX - 1);
        jitmap_free(m);
}

static void test_nspid(void **state) {
        static const char status[] = "Name:\tnode\nTgid:\t4242\nNSpid:\t4242\t7\nNSsid:\t1\n";
        assert_int_equal(jitmap_parse_nspid(status, sizeof status - 1), 7);
        assert_int_equal(jitmap_parse_nspid("NSpid:\t99\n", 10), 99);
        assert_int_equal(jitmap_parse_nspid("Name:\tx\n", 8), 0);
        assert_int_equal(jitmap_parse_nspid("NSpid:\t99999999999\n", 19), 0);
}

static void test_load(void **state) {
        char path[64], link[80];
        int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        JitMap *m = NULL;

        assert_true(proc_fd >= 0);
        snprintf(path, sizeof path, "/tmp/perf-%d.map", (int) getpid());
        unlink(path);
        int r = jitmap_load(proc_fd, getpid(), &m);
        if (r == -ENOSYS) { /* valgrind has no openat2 */
                close(proc_fd);
                skip();
        }
        assert_int_equal(r, -ENOENT);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%llx 100 test-jit-function\n", (unsigned long long) (uintptr_t) test_load);
        fclose(f);
        assert_int_equal(jitmap_load(proc_fd, getpid(), &m), 0);
        assert_string_equal(jitmap_find(m, (uint64_t) (uintptr_t) test_load + 1, NULL), "test-jit-function");
        m = jitmap_free(m);
        if (geteuid() == 0) { /* another owner's file is not the process's map */
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(jitmap_load(proc_fd, getpid(), &m), -EPERM);
        }
        unlink(path);
        snprintf(link, sizeof link, "%s.target", path);
        f = fopen(link, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(symlink(link, path), 0);
        assert_int_equal(jitmap_load(proc_fd, getpid(), &m), -EPERM);
        unlink(path);
        unlink(link);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(jitmap_load(proc_fd, getpid(), &m), -EPERM);
        unlink(path);
        assert_int_equal(jitmap_load(proc_fd, 0x7ffffff0, &m), -ESRCH);
        close(proc_fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_nspid),
                cmocka_unit_test(test_load),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
