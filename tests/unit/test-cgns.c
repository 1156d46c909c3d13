/* SPDX-License-Identifier: MIT */
/* The agent's cgroup namespace on the host (probes/cgns.h): the mount's root field, the search for
 * the namespace's root by our own pid, and paths resolved against it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/cgns.h"
#include "probes/procfs.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void test_mount_root(void **state) {
        unsigned up = 9;

        assert_int_equal(cgns_parse_mount_root("/", &up), 0);
        assert_int_equal(up, 0);
        assert_int_equal(cgns_parse_mount_root("/..", &up), 0);
        assert_int_equal(up, 1);
        assert_int_equal(cgns_parse_mount_root("/../../..", &up), 0);
        assert_int_equal(up, 3);
        /* Not an ancestor of our root: the mount is another part of the tree. */
        assert_int_equal(cgns_parse_mount_root("/../x", &up), -EOPNOTSUPP);
        assert_int_equal(cgns_parse_mount_root("/kubepods", &up), -EOPNOTSUPP);
        assert_int_equal(cgns_parse_mount_root("/...", &up), -EOPNOTSUPP);
        assert_int_equal(cgns_parse_mount_root("", &up), -EINVAL);
        assert_int_equal(cgns_parse_mount_root(NULL, &up), -EINVAL);
        assert_int_equal(up, 3);
}

static void test_resolve(void **state) {
        char out[64];

        /* The kernel's view from a namespace rooted at kubepods/pod1/ctr (cgroup_path_ns()). */
        assert_int_equal(cgns_resolve("kubepods/pod1/ctr", "/", out, sizeof out), 0);
        assert_string_equal(out, "/kubepods/pod1/ctr");
        assert_int_equal(cgns_resolve("kubepods/pod1/ctr", "/sub", out, sizeof out), 0);
        assert_string_equal(out, "/kubepods/pod1/ctr/sub");
        assert_int_equal(cgns_resolve("kubepods/pod1/ctr", "/../../pod2/web", out, sizeof out), 0);
        assert_string_equal(out, "/kubepods/pod2/web");
        assert_int_equal(cgns_resolve("kubepods/pod1/ctr", "/../../../init.scope", out, sizeof out), 0);
        assert_string_equal(out, "/init.scope");
        assert_int_equal(cgns_resolve("kubepods/pod1/ctr", "/../../..", out, sizeof out), 0);
        assert_string_equal(out, "/");
        /* A name that only starts with dots is a name. */
        assert_int_equal(cgns_resolve("a", "/..hidden/./x", out, sizeof out), 0);
        assert_string_equal(out, "/a/..hidden/x");
        /* The mount's own root: nothing to add. */
        assert_int_equal(cgns_resolve("", "/system.slice", out, sizeof out), 0);
        assert_string_equal(out, "/system.slice");
        /* Above the mount's root, or not a path. */
        assert_int_equal(cgns_resolve("a", "/../..", out, sizeof out), -EINVAL);
        assert_int_equal(cgns_resolve("a", "x", out, sizeof out), -EINVAL);
        assert_int_equal(cgns_resolve("a", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                                      out, sizeof out),
                         -ENOBUFS);
}

/* A host's tree under the mount: our pid is in kubepods/pod1/ctr/cgroup.procs (a long list, read
 * in chunks), another process's pid, a prefix of ours, in pod2's. */
static void make_host(char *dir) {
        char pid[32], many[65536];
        size_t n = 0;

        assert_non_null(mkdtemp(dir));
        snprintf(pid, sizeof pid, "%d\n", (int) getpid() * 10 + 1);
        assert_int_equal(fake_tree_write(dir, "kubepods/pod2/web/cgroup.procs", pid), 0);
        assert_int_equal(fake_tree_write(dir, "kubepods/pod2/cgroup.procs", ""), 0);
        assert_int_equal(fake_tree_write(dir, "init.scope/cgroup.procs", "1\n"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "kubepods/pod1/x/deeper"), 0);
        for (int i = 1; i < 9000; i++)
                n += (size_t) snprintf(many + n, sizeof many - n, "%d\n", 100000 + i);
        snprintf(many + n, sizeof many - n, "%d\n", (int) getpid());
        assert_int_equal(fake_tree_write(dir, "kubepods/pod1/ctr/cgroup.procs", many), 0);
        assert_int_equal(fake_tree_write(dir, "kubepods/pod1/ctr/sub/cgroup.procs", ""), 0);
}

static void test_find_root(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", root[64];
        int fd;

        make_host(dir);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgns_find_root(fd, 3, "/", getpid(), 1000, root, sizeof root), 0);
        assert_string_equal(root, "kubepods/pod1/ctr");
        /* Our own cgroup below the namespace's root: the root is two levels up from it. */
        assert_int_equal(fake_tree_write(dir, "kubepods/pod1/ctr/cgroup.procs", ""), 0);
        char self[32];
        snprintf(self, sizeof self, "%d\n", (int) getpid());
        assert_int_equal(fake_tree_write(dir, "kubepods/pod1/ctr/sub/cgroup.procs", self), 0);
        assert_int_equal(cgns_find_root(fd, 3, "/sub", getpid(), 1000, root, sizeof root), 0);
        assert_string_equal(root, "kubepods/pod1/ctr");
        /* Only at the depth the mount's root says. */
        assert_int_equal(cgns_find_root(fd, 2, "/sub", getpid(), 1000, root, sizeof root), -ENOENT);
        assert_int_equal(cgns_find_root(fd, 3, "/", getpid(), 1000, root, sizeof root), -ENOENT);
        /* A budget spent before it is found; a path that climbs; no room. */
        assert_int_equal(cgns_find_root(fd, 3, "/sub", getpid(), 3, root, sizeof root), -E2BIG);
        assert_int_equal(cgns_find_root(fd, 3, "/../x", getpid(), 1000, root, sizeof root), -EINVAL);
        assert_int_equal(cgns_find_root(fd, 3, "/sub", getpid(), 1000, root, 4), -ENOBUFS);
        assert_int_equal(cgns_find_root(fd, 0, "/", getpid(), 1000, root, sizeof root), 0);
        assert_string_equal(root, "");
        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* cgns_locate() from a mount root field, and proc_read_cgroup() resolving once told the root. */
static void test_locate_and_read(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[256], buf[64];
        char root_field[] = "/../../..";
        Sysroot s = { .proc_fd = -1 };
        CgroupNamespace ns;
        int proc_fd;

        make_host(dir);
        s.cgroup2_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        s.cgroup2_root = root_field;
        cgns_locate(&s, "/", &ns);
        assert_true(ns.private_root && ns.resolved);
        assert_int_equal(ns.up, 3);
        assert_string_equal(ns.root, "kubepods/pod1/ctr");
        /* The namespace's own mount: nothing to resolve. */
        s.cgroup2_root = (char *) "/";
        cgns_locate(&s, "/", &ns);
        assert_false(ns.private_root);
        /* A mount of another part of the tree. */
        s.cgroup2_root = (char *) "/../other";
        cgns_locate(&s, "/", &ns);
        assert_true(ns.private_root && !ns.resolved);
        assert_int_equal(ns.error, -EOPNOTSUPP);
        close(s.cgroup2_fd);

        /* A process outside the namespace, as /proc shows it, read with and without the root. */
        snprintf(path, sizeof path, "%s/proc/77/cgroup", dir);
        assert_int_equal(fake_tree_write(dir, "proc/77/cgroup", "0::/../../pod2/web\n"), 0);
        snprintf(path, sizeof path, "%s/proc", dir);
        proc_fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        assert_int_equal(proc_read_cgroup(proc_fd, 77, buf, sizeof buf), 0);
        assert_string_equal(buf, "/../../pod2/web");
        assert_true(proc_cgroup_outside_namespace(buf));
        proc_cgroup_set_namespace_root("kubepods/pod1/ctr");
        assert_int_equal(proc_read_cgroup(proc_fd, 77, buf, sizeof buf), 0);
        assert_string_equal(buf, "/kubepods/pod2/web");
        /* One that climbs above the mount stays as the kernel wrote it: outside. */
        assert_int_equal(fake_tree_write(dir, "proc/77/cgroup", "0::/../../../../x\n"), 0);
        assert_int_equal(proc_read_cgroup(proc_fd, 77, buf, sizeof buf), 0);
        assert_true(proc_cgroup_outside_namespace(buf));
        proc_cgroup_set_namespace_root(NULL);
        close(proc_fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mount_root),
                cmocka_unit_test(test_resolve),
                cmocka_unit_test(test_find_root),
                cmocka_unit_test(test_locate_and_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
