/* SPDX-License-Identifier: MIT */
/* The unwinder's file opens (probes/elfopen.h) on a fake /proc in a scratch directory: a module
 * by map_files, by its path inside the process's root when map_files is absent, refused when the
 * file reached is not the inode mapped, a directory, or (deleted) with no map_files; a root's
 * symlink that points out of it resolved inside it; debug files by build-id, refused when
 * writable by others; and the agent's own vDSO image. Where openat2 is missing (valgrind knows no
 * such syscall; kernels before 5.6), a path inside a root is refused with ENOSYS, never walked
 * some other way. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "probes/elfopen.h"
#include "tests/unit/test-util.h"

static char dir[64];
static int proc_fd;

static void put(const char *rel, const char *content) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir, rel);
        f = fopen(p, "w");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void mkdir_in(const char *rel) {
        char p[256];

        snprintf(p, sizeof p, "%s/%s", dir, rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

static void stat_in(const char *rel, struct stat *st) {
        char p[256];

        snprintf(p, sizeof p, "%s/%s", dir, rel);
        assert_int_equal(stat(p, st), 0);
}

/* The target as the maps would name the file at rel. */
static ElfOpenTarget target_of(const char *rel, const char *path) {
        struct stat st;

        stat_in(rel, &st);
        return (ElfOpenTarget) {
                .pid = 42,
                .map_start = 0x1000,
                .map_end = 0x2000,
                .dev_major = major(st.st_dev),
                .dev_minor = minor(st.st_dev),
                .inode = st.st_ino,
                .path = path,
        };
}

static int setup(void **state) {
        char p[256];

        (void) state;
        snprintf(dir, sizeof dir, "/tmp/test-elfopen-XXXXXX");
        assert_non_null(mkdtemp(dir));
        mkdir_in("42");
        mkdir_in("42/map_files");
        mkdir_in("root");
        mkdir_in("root/usr");
        mkdir_in("root/usr/bin");
        put("root/usr/bin/prog", "\177ELF the program");
        put("outside", "\177ELF outside the root");
        snprintf(p, sizeof p, "%s/42/root", dir);
        assert_int_equal(symlink("../root", p), 0);
        proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        return 0;
}

static int teardown(void **state) {
        char cmd[128];

        (void) state;
        close(proc_fd);
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
        return 0;
}

static bool have_openat2(void) {
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC };
        int fd = (int) syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);

        if (fd < 0)
                return false;
        close(fd);
        return true;
}

static void read_is(int fd, const char *want) {
        char buf[64] = {};

        assert_true(fd >= 0);
        assert_true(read(fd, buf, sizeof buf - 1) > 0);
        assert_string_equal(buf, want);
        close(fd);
}

static void test_by_root(void **state) {
        ElfOpenTarget t = target_of("root/usr/bin/prog", "/usr/bin/prog");
        char p[256];

        (void) state;
        if (!have_openat2()) {
                assert_int_equal(elfopen_module(proc_fd, &t), -ENOSYS);
                skip();
        }
        /* No map_files entry (as without CAP_SYS_ADMIN): the path inside the root. */
        read_is(elfopen_module(proc_fd, &t), "\177ELF the program");
        /* Another inode at that path: not the file mapped. */
        t.inode++;
        assert_int_equal(elfopen_module(proc_fd, &t), -ESTALE);
        /* A directory with the mapped inode's numbers is still refused. */
        t = target_of("root/usr/bin", "/usr/bin");
        assert_int_equal(elfopen_module(proc_fd, &t), -ESTALE);
        /* Deleted: its path is not tried. */
        t = target_of("root/usr/bin/prog", "/usr/bin/prog");
        t.deleted = true;
        assert_int_equal(elfopen_module(proc_fd, &t), -ENOENT);
        /* A symlink of the process's that points out of its root stays inside it: the outside
         * file is not reached, whatever its inode. */
        snprintf(p, sizeof p, "%s/root/usr/bin/link", dir);
        assert_int_equal(symlink("/../../outside", p), 0);
        t = target_of("outside", "/usr/bin/link");
        assert_int_equal(elfopen_module(proc_fd, &t), -ENOENT);
        t = target_of("outside", "/../outside");
        assert_int_equal(elfopen_module(proc_fd, &t), -ENOENT);
        t = target_of("root/usr/bin/prog", "usr/bin/prog"); /* not a path the kernel writes */
        assert_int_equal(elfopen_module(proc_fd, &t), -ENOENT);
}

static void test_by_map_files(void **state) {
        ElfOpenTarget t;
        char p[256], q[256];

        (void) state;
        /* map_files' entry is the file mapped, wherever it is: taken before the path. */
        snprintf(p, sizeof p, "%s/outside", dir);
        snprintf(q, sizeof q, "%s/42/map_files/1000-2000", dir);
        assert_int_equal(symlink(p, q), 0);
        t = target_of("outside", "/usr/bin/prog");
        read_is(elfopen_module(proc_fd, &t), "\177ELF outside the root");
        t.deleted = true;
        read_is(elfopen_module(proc_fd, &t), "\177ELF outside the root");
        t.inode++;
        assert_int_equal(elfopen_module(proc_fd, &t), -ESTALE);
        assert_int_equal(unlink(q), 0);
}

static void test_too_big(void **state) {
        ElfOpenTarget t;
        char p[256], q[256];

        (void) state;
        snprintf(p, sizeof p, "%s/huge", dir);
        snprintf(q, sizeof q, "%s/42/map_files/1000-2000", dir);
        put("huge", "");
        assert_int_equal(symlink(p, q), 0);
        assert_int_equal(truncate(p, (off_t) ELFOPEN_BYTES_MAX + 1), 0); /* sparse */
        t = target_of("huge", "/huge");
        assert_int_equal(elfopen_module(proc_fd, &t), -EFBIG);
        assert_int_equal(truncate(p, (off_t) ELFOPEN_BYTES_MAX), 0);
        read_is(elfopen_module(proc_fd, &t), "");
        assert_int_equal(unlink(q), 0);
}

static void test_debug(void **state) {
        const uint8_t id[] = { 0xab, 0xcd, 0xef, 0x01 };
        char path[128], p[256];
        int root_fd, fd;

        (void) state;
        snprintf(p, sizeof p, "%s/root", dir);
        root_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root_fd >= 0);
        if (!have_openat2()) {
                assert_int_equal(elfopen_debug(root_fd, id, sizeof id, path, sizeof path), -ENOSYS);
                close(root_fd);
                skip();
        }
        assert_int_equal(elfopen_debug(root_fd, id, sizeof id, path, sizeof path), -ENOENT);
        mkdir_in("root/usr/lib");
        mkdir_in("root/usr/lib/debug");
        mkdir_in("root/usr/lib/debug/.build-id");
        mkdir_in("root/usr/lib/debug/.build-id/ab");
        put("root/usr/lib/debug/.build-id/ab/cdef01.debug", "\177ELF debug");
        snprintf(p, sizeof p, "%s/root/usr/lib/debug/.build-id/ab/cdef01.debug", dir);
        assert_int_equal(chmod(p, 0644), 0);
        fd = elfopen_debug(root_fd, id, sizeof id, path, sizeof path);
        if (geteuid() == 0) {
                read_is(fd, "\177ELF debug");
                assert_string_equal(path, "usr/lib/debug/.build-id/ab/cdef01.debug");
        } else
                assert_int_equal(fd, -EPERM); /* not root's */
        assert_int_equal(chmod(p, 0666), 0);
        assert_int_equal(elfopen_debug(root_fd, id, sizeof id, path, sizeof path), -EPERM);
        assert_int_equal(chmod(p, 0664), 0);
        assert_int_equal(elfopen_debug(root_fd, id, sizeof id, path, sizeof path), -EPERM);
        assert_int_equal(elfopen_debug(root_fd, id, 1, path, sizeof path), -EINVAL);
        assert_int_equal(elfopen_debug(root_fd, id, ELFOPEN_BUILD_ID_MAX + 1, path, sizeof path), -EINVAL);
        close(root_fd);
}

static void test_vdso(void **state) {
        const uint8_t *image, *again;
        size_t size, size2;

        (void) state;
        if (!elfopen_vdso(&image, &size))
                skip(); /* booted with vdso=0 */
        assert_memory_equal(image, "\177ELF", 4);
        assert_true(size > 64 && size <= 1024 * 1024);
        assert_true(elfopen_vdso(&again, &size2));
        assert_ptr_equal(image, again); /* copied once */
        assert_int_equal(size, size2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_by_root), cmocka_unit_test(test_by_map_files), cmocka_unit_test(test_too_big),
                cmocka_unit_test(test_debug),   cmocka_unit_test(test_vdso),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
