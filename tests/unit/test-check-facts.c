/* SPDX-License-Identifier: MIT */
/* The facts `psidiag check` gathers of a cgroup tree (cmd/check-facts.h: check_gather_cgroups()),
 * on a fake cgroup2 tree named from tests/fixtures/containers/: the mounts and whether the root's
 * pressure file opens for writing; each container counted under its runtime, named or not and why;
 * the directories discovery would watch, and those a user owns (as root only: fake_tree_cgroup()
 * chowns them); no cgroup2 mount, no walk. The rest of check_gather() reads the real host: the
 * cli and integration-privilege tests run `psidiag check`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/check-facts.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define CRI "c0ffee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define SANDBOX "5a5a5a01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define GONE "deadbeef01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4"
#define UIDU "0f5e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"
#define POD "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice"

/* The facts of the cgroup tree at dir, its containers' files under the fixture root. */
static void gather(const char *dir, const char *root, CheckFacts *f) {
        Sysroot s = {
                .root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC),
                .proc_fd = -1,
                .pressure_fd = -1,
                .cgroup2_fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1,
                .cgroup2_path = dir ? (char *) "/sys/fs/cgroup" : NULL,
                .v1_controllers = "pids",
        };

        assert_true(s.root_fd >= 0);
        assert_true(!dir || s.cgroup2_fd >= 0);
        *f = (CheckFacts) {};
        check_gather_cgroups(f, &s);
        close(s.root_fd);
        if (s.cgroup2_fd >= 0)
                close(s.cgroup2_fd);
}

static void test_kubernetes_tree(void **state) {
        char dir[] = "/tmp/psidiag-check-facts-XXXXXX";
        CheckFacts f;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, POD "/cri-containerd-" CRI ".scope/inner"), 0);
        assert_int_equal(fake_tree_cgroup(dir, POD "/cri-containerd-" SANDBOX ".scope"), 0);
        assert_int_equal(fake_tree_cgroup(dir, POD "/cri-containerd-" GONE ".scope"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "system.slice/containerd.service/sub"), 0);
        gather(dir, fixture("containers/containerd"), &f);
        assert_string_equal(f.cgroup2_path, "/sys/fs/cgroup");
        assert_string_equal(f.v1_controllers, "pids");
        assert_string_equal(f.memory_v1_path, "");
        assert_false(f.cgroup2_pressure); /* no cpu.pressure at the root */
        assert_int_equal(f.containers_err, 0);
        assert_int_equal(f.n_runtimes, 1);
        assert_string_equal(f.runtimes[0].runtime, "containerd");
        assert_int_equal(f.runtimes[0].seen, 3);
        assert_int_equal(f.runtimes[0].named, 2);
        assert_true(f.runtimes[0].unnamed[0]); /* why the one without a bundle is not named */
        /* the root, kubepods.slice, kubepods-burstable.slice, the pod, system.slice */
        assert_int_equal(f.dirs, 5);
        assert_int_equal(f.dirs_users, 0);
        assert_int_equal(f.dirs_user_most, 0);
        assert_int_equal(f.unverified, 0);

        /* the root's pressure file there and writable: an agent may arm cgroup triggers */
        assert_int_equal(fake_tree_write(dir, "cpu.pressure", ""), 0);
        gather(dir, fixture("containers/containerd"), &f);
        assert_true(f.cgroup2_pressure);
        assert_int_equal(f.cgroup2_write_err, 0);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A user's directories under systemd's user instance: counted, and whose (chown needs root). */
static void test_user_dirs(void **state) {
        char dir[] = "/tmp/psidiag-check-facts-XXXXXX";
        CheckFacts f;

        if (geteuid() != 0)
                skip();
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, "user.slice/user-1000.slice/user@1000.service/app.slice/a.slice"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "user.slice/user-1000.slice/user@1000.service/app.slice/b.slice"), 0);
        gather(dir, fixture("containers/containerd"), &f);
        assert_int_equal(f.containers_err, 0);
        assert_int_equal(f.n_runtimes, 0);
        assert_int_equal(f.dirs, 7);
        assert_int_equal(f.dirs_users, 4); /* user@1000.service and its slices */
        assert_int_equal(f.dirs_user_most, f.dirs_users);
        assert_int_equal(f.dirs_user_uid, 1000);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* No cgroup2 mount: no path, no pressure files, no walk (the container-names line warns). */
static void test_no_cgroup2(void **state) {
        CheckFacts f;

        gather(NULL, fixture("containers/containerd"), &f);
        assert_string_equal(f.cgroup2_path, "");
        assert_false(f.cgroup2_pressure);
        assert_int_equal(f.containers_err, -ENOENT);
        assert_int_equal(f.dirs, 0);
        assert_int_equal(f.n_runtimes, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kubernetes_tree),
                cmocka_unit_test(test_user_dirs),
                cmocka_unit_test(test_no_cgroup2),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
