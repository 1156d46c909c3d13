/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "probes/sysroot.h"
#include "tests/unit/test-util.h"

static void test_mountinfo_hybrid(void **state) {
        char buf[4096];
        char *p = NULL;

        assert_true(read_file_at(-100 /* AT_FDCWD */, fixture("hybrid/proc/self/mountinfo"), buf, sizeof buf) > 0);
        assert_int_equal(mountinfo_find_fstype(buf, "cgroup2", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup/unified");
        free(p);
        assert_int_equal(mountinfo_find_cgroup1(buf, "memory", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup/memory");
        free(p);
        /* "cpu" must match the option exactly, not "cpuacct" or a prefix. */
        assert_int_equal(mountinfo_find_cgroup1(buf, "cpu", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup/cpu,cpuacct");
        free(p);
        assert_int_equal(mountinfo_find_cgroup1(buf, "blkio", &p), -ENOENT);
        assert_int_equal(mountinfo_find_cgroup1(buf, "mem", &p), -ENOENT);
}

static void test_mountinfo_cgroup2_and_escapes(void **state) {
        char buf[4096];
        char *p = NULL;

        assert_true(read_file_at(-100, fixture("cgroup2/proc/self/mountinfo"), buf, sizeof buf) > 0);
        assert_int_equal(mountinfo_find_fstype(buf, "cgroup2", &p), 0);
        assert_string_equal(p, "/sys/fs/cgroup");
        free(p);
        assert_int_equal(mountinfo_find_fstype(buf, "tmpfs", &p), 0);
        assert_string_equal(p, "/mnt/with space");
        free(p);
        assert_int_equal(mountinfo_find_cgroup1(buf, "memory", &p), -ENOENT);
        assert_int_equal(mountinfo_find_fstype("", "cgroup2", &p), -ENOENT);
        assert_int_equal(mountinfo_find_fstype("garbage without fields\n1 2 3\n", "cgroup2", &p), -ENOENT);
}

static void test_path_validate(void **state) {
        assert_int_equal(cgroup_path_validate(""), 0);
        assert_int_equal(cgroup_path_validate("/"), 0);
        assert_int_equal(cgroup_path_validate("system.slice/nginx.service"), 0);
        assert_int_equal(cgroup_path_validate("/system.slice"), 0);
        assert_int_equal(cgroup_path_validate("a/../b"), -EINVAL);
        assert_int_equal(cgroup_path_validate(".."), -EINVAL);
        assert_int_equal(cgroup_path_validate("./a"), -EINVAL);
        assert_int_equal(cgroup_path_validate("a//b"), -EINVAL);
        assert_int_equal(cgroup_path_validate("a/"), -EINVAL);
        assert_int_equal(cgroup_path_validate("//"), -EINVAL);
        assert_int_equal(cgroup_path_validate("...x"), 0);
        assert_int_equal(cgroup_path_validate(NULL), -EINVAL);
}

static void test_open_hybrid(void **state) {
        Sysroot *s = NULL;
        int fd = -1;
        char buf[64];

        assert_int_equal(sysroot_open(fixture("hybrid"), &s), 0);
        assert_string_equal(s->cgroup2_path, "/sys/fs/cgroup/unified");
        assert_string_equal(s->memory_v1_path, "/sys/fs/cgroup/memory");
        assert_string_equal(s->v1_controllers, "cpu cpuacct memory"); /* name=systemd is none */
        assert_true(s->cgroup2_fd >= 0);
        assert_true(s->pressure_fd >= 0);
        /* The v1 mounts it found, for the limits code and memcg. */
        assert_int_equal(sysroot_open_v1_mount(s, CGROUP_V1_MEMORY, &fd), 0);
        assert_true(faccessat(fd, "app/memory.limit_in_bytes", F_OK, 0) == 0);
        close(fd);
        assert_int_equal(sysroot_open_v1_mount(s, CGROUP_V1_BLKIO, &fd), -ENOENT);

        assert_int_equal(sysroot_open_cgroup(s, "app/web", &fd), 0);
        assert_true(read_file_at(fd, "cgroup.threads", buf, sizeof buf) > 0);
        assert_string_equal(buf, "100\n101\n102\n");
        close(fd);
        assert_int_equal(sysroot_open_cgroup(s, "", &fd), 0);
        assert_true(read_file_at(fd, "cgroup.threads", buf, sizeof buf) > 0);
        assert_string_equal(buf, "1\n");
        close(fd);
        assert_int_equal(sysroot_open_cgroup(s, "/app", &fd), 0);
        close(fd);

        /* A symlink planted in the tree must not lead out of the mount. */
        assert_int_equal(sysroot_open_cgroup(s, "app/escape", &fd), -ELOOP);
        assert_int_equal(sysroot_open_cgroup(s, "app/../..", &fd), -EINVAL);
        assert_int_equal(sysroot_open_cgroup(s, "app/missing", &fd), -ENOENT);
        assert_int_equal(sysroot_open_cgroup(s, "app/web/cgroup.threads", &fd), -ENOTDIR);
        sysroot_free(s);
}

/* The walk used where openat2 is missing (kernels before 5.6, valgrind) refuses the same things
 * with the same errors. */
static void test_walk_matches_openat2(void **state) {
        int root, fd = -1;

        root = open(fixture("hybrid/sys/fs/cgroup/unified"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(root >= 0);
        assert_int_equal(cgroup_open_walk(root, "app/web", &fd), 0);
        close(fd);
        assert_int_equal(cgroup_open_walk(root, "/app//web/", &fd), 0);
        close(fd);
        assert_int_equal(cgroup_open_walk(root, "", &fd), 0);
        close(fd);
        assert_int_equal(cgroup_open_walk(root, "app/escape", &fd), -ELOOP);
        assert_int_equal(cgroup_open_walk(root, "app/escape/self", &fd), -ELOOP);
        assert_int_equal(cgroup_open_walk(root, "app/missing", &fd), -ENOENT);
        assert_int_equal(cgroup_open_walk(root, "app/web/cgroup.threads", &fd), -ENOTDIR);
        close(root);

        /* Another mount on the way: /proc under /. */
        root = open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(root >= 0);
        assert_int_equal(cgroup_open_walk(root, "proc/sys", &fd), -EXDEV);
        close(root);
}

static void test_open_without_psi_or_cgroup2(void **state) {
        Sysroot *s = NULL;
        int fd;

        assert_int_equal(sysroot_open(fixture("nopsi"), &s), 0);
        assert_true(s->pressure_fd < 0);
        assert_true(s->cgroup2_fd < 0);
        assert_null(s->cgroup2_path);
        assert_int_equal(sysroot_open_cgroup(s, "a", &fd), -ENODEV);
        sysroot_free(s);

        assert_int_equal(sysroot_open(fixture("does-not-exist"), &s), -ENOENT);
        assert_null(sysroot_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mountinfo_hybrid),     cmocka_unit_test(test_mountinfo_cgroup2_and_escapes),
                cmocka_unit_test(test_path_validate),        cmocka_unit_test(test_open_hybrid),
                cmocka_unit_test(test_walk_matches_openat2), cmocka_unit_test(test_open_without_psi_or_cgroup2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
