/* SPDX-License-Identifier: MIT */
/* Who a running killer is (kills/killtrust.h): its executable, the same file as the one at its
 * path beneath the root, owned alone by the trusted owner in a system directory, or its systemd
 * unit; never its comm. Trees made in a scratch directory: the test's uid stands for root. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kills/killtrust.h"
#include "probes/sysroot.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void test_cgroup_unit(void **state) {
        static const struct {
                const char *cgroup, *unit;
        } cases[] = {
                { "/system.slice/earlyoom.service", "earlyoom.service" },
                { "system.slice/nohang.service/sub", "nohang.service" },
                { "/init.scope", "init.scope" },
                /* A user's own "earlyoom.service", in their manager or their delegated subtree. */
                { "/user.slice/user-1000.slice/user@1000.service/app.slice/earlyoom.service", "user@1000.service" },
                { "/user.slice/user-1000.slice/session-2.scope/earlyoom.service", "session-2.scope" },
                { "/machine.slice/libpod-1a2b.scope/system.slice/earlyoom.service", "libpod-1a2b.scope" },
        };
        const char *u;
        size_t n;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(killtrust_cgroup_unit(cases[i].cgroup, &u, &n), 0);
                assert_int_equal(n, strlen(cases[i].unit));
                assert_memory_equal(u, cases[i].unit, n);
        }
        assert_int_equal(killtrust_cgroup_unit("/", &u, &n), -ENOENT);
        assert_int_equal(killtrust_cgroup_unit("", &u, &n), -ENOENT);
        assert_int_equal(killtrust_cgroup_unit("/system.slice/", &u, &n), -ENOENT);

        assert_int_equal(killtrust_unit_killer("earlyoom.service", 16), KILLER_EARLYOOM);
        assert_int_equal(killtrust_unit_killer("nohang-desktop.service", 22), KILLER_NOHANG);
        assert_int_equal(killtrust_unit_killer("systemd-oomd.service", 20), KILLER_SYSTEMD_OOMD);
        assert_int_equal(killtrust_unit_killer("earlyoom.service2", 17), KILLER_UNKNOWN);
        assert_int_equal(killtrust_unit_killer("earlyoom", 8), KILLER_UNKNOWN);
        assert_int_equal(killtrust_unit_killer("user@1000.service", 17), KILLER_UNKNOWN);
}

static int open_at(const char *dir, const char *path) {
        char p[512];

        snprintf(p, sizeof p, "%s/%s", dir, path);
        return open(p, O_RDONLY | O_CLOEXEC);
}

static void chmod_at(const char *dir, const char *path, mode_t mode) {
        char p[512];

        snprintf(p, sizeof p, "%s/%s", dir, path);
        assert_int_equal(chmod(p, mode), 0);
}

/* The executable: /usr/bin/earlyoom beneath the root is the real one, ~/earlyoom a copy. */
static void test_exe_check(void **state) {
        char dir[] = "/tmp/psidiag-killtrust-XXXXXX", p[512];
        uid_t me = geteuid();
        int root, real, copy;

        assert_int_equal(fake_tree_write(mkdtemp(dir), "usr/bin/earlyoom", "ELF earlyoom"), 0);
        assert_int_equal(fake_tree_write(dir, "usr/bin/sub/earlyoom", "ELF earlyoom"), 0);
        assert_int_equal(fake_tree_write(dir, "home/u/earlyoom", "ELF sleep"), 0);
        chmod_at(dir, ".", 0755);
        chmod_at(dir, "usr", 0755);
        chmod_at(dir, "usr/bin", 0755);
        chmod_at(dir, "usr/bin/earlyoom", 0755);
        chmod_at(dir, "home/u/earlyoom", 0755);
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        real = open_at(dir, "usr/bin/earlyoom");
        copy = open_at(dir, "home/u/earlyoom");
        assert_true(root >= 0 && real >= 0 && copy >= 0);

        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me), 1);
        /* cp /bin/sleep ~/earlyoom: not a system directory. */
        assert_int_equal(killtrust_exe_check(root, "/home/u/earlyoom", copy, me), 0);
        /* The path shows /usr/bin/earlyoom, the file running is another (a bind mount over it in a
         * mount namespace of the user's, or a pid reused since the readlink). */
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", copy, me), 0);
        /* Owned by someone else than the trusted owner. */
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me + 1), 0);
        /* Below a system directory, relative, climbing, deleted, empty. */
        snprintf(p, sizeof p, "%s/usr/bin/sub/earlyoom", dir);
        int sub = open(p, O_RDONLY | O_CLOEXEC);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/sub/earlyoom", sub, me), 0);
        close(sub);
        assert_int_equal(killtrust_exe_check(root, "usr/bin/earlyoom", real, me), 0);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/../bin/earlyoom", real, me), 0);
        assert_true(killtrust_exe_check(root, "/usr/bin/earlyoom (deleted)", real, me) <= 0);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/", real, me), 0);
        assert_int_equal(killtrust_exe_check(root, NULL, real, me), 0);

        /* Writable by the group or by anyone: the file, or a directory above it. */
        chmod_at(dir, "usr/bin/earlyoom", 0775);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me), 0);
        chmod_at(dir, "usr/bin/earlyoom", 0755);
        chmod_at(dir, "usr/bin", 0777);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me), 0);
        chmod_at(dir, "usr/bin", 0755);
        chmod_at(dir, "usr", 0757);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me), 0);
        chmod_at(dir, "usr", 0755);
        assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, me), 1);

        if (me == 0) {
                /* As the agent checks (root the owner): a file of a user's in /usr/bin. */
                snprintf(p, sizeof p, "%s/usr/bin/earlyoom", dir);
                assert_int_equal(chown(p, 1000, 1000), 0);
                assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, 0), 0);
                assert_int_equal(chown(p, 0, 0), 0);
                assert_int_equal(killtrust_exe_check(root, "/usr/bin/earlyoom", real, 0), 1);
        } else
                print_message("not root: the chown case of a user's file in /usr/bin is not run\n");

        /* A symlink at the path (to the user's copy) is not followed. */
        snprintf(p, sizeof p, "%s/usr/sbin", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof p, "%s/usr/sbin/earlyoom", dir);
        assert_int_equal(symlink("../../home/u/earlyoom", p), 0);
        assert_int_equal(killtrust_exe_check(root, "/usr/sbin/earlyoom", copy, me), 0);

        close(real);
        close(copy);
        close(root);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A fake /proc: which process is a running killer. The exe links point to paths that do not exist
 * beneath the scratch root (a real /proc/PID/exe is a magic link to the file itself), so only the
 * unit can name a killer here; the exe's own positive case is test_exe_check's, and
 * integration-kills' earlyoom-nolog runs the real one. */
static void test_process(void **state) {
        static const struct {
                int pid;
                const char *comm, *exe, *cgroup;
                KillerKind want;
        } procs[] = {
                /* cp /bin/sleep ~/earlyoom; ~/earlyoom */
                { 100, "earlyoom", "/home/u/earlyoom", "0::/user.slice/user-1000.slice/session-2.scope\n",
                  KILLER_UNKNOWN },
                /* a user unit named like the killer's */
                { 101, "earlyoom", "/home/u/earlyoom",
                  "0::/user.slice/user-1000.slice/user@1000.service/app.slice/earlyoom.service\n", KILLER_UNKNOWN },
                /* a newline in the user's cgroup name forging a second line */
                { 102, "earlyoom", "/home/u/earlyoom",
                  "0::/user.slice/user-1000.slice/user@1000.service/x\n0::/system.slice/earlyoom.service\n",
                  KILLER_UNKNOWN },
                /* nohang in its unit (a Python script: the exe is the interpreter) */
                { 103, "nohang", "/usr/bin/python3.11", "0::/system.slice/nohang.service\n", KILLER_NOHANG },
                /* systemd-oomd as its own user: no exe readable, its unit says */
                { 104, "systemd-oomd", NULL, "0::/system.slice/systemd-oomd.service\n", KILLER_SYSTEMD_OOMD },
                /* root's process named earlyoom, any other unit */
                { 105, "earlyoom", "/root/earlyoom", "0::/system.slice/cron.service\n", KILLER_UNKNOWN },
        };
        char dir[] = "/tmp/psidiag-killproc-XXXXXX", p[256];
        Sysroot *s = NULL;

        assert_int_equal(fake_tree_copy(dir, FIXTURE_DIR "/cgroup2"), 0);
        for (size_t i = 0; i < ELEMENTSOF(procs); i++) {
                snprintf(p, sizeof p, "proc/%d/comm", procs[i].pid);
                assert_int_equal(fake_tree_write(dir, p, procs[i].comm), 0);
                snprintf(p, sizeof p, "proc/%d/cgroup", procs[i].pid);
                assert_int_equal(fake_tree_write(dir, p, procs[i].cgroup), 0);
                if (procs[i].exe) {
                        snprintf(p, sizeof p, "%s/proc/%d/exe", dir, procs[i].pid);
                        assert_int_equal(symlink(procs[i].exe, p), 0);
                }
        }
        assert_int_equal(sysroot_open(dir, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(procs); i++)
                if (killtrust_process(s, procs[i].pid, geteuid()) != procs[i].want)
                        fail_msg("pid %d (%s): %s", procs[i].pid, procs[i].comm,
                                 procs[i].want ? "not a running killer" : "taken for a running killer");
        assert_int_equal(killtrust_process(s, 4242, geteuid()), KILLER_UNKNOWN); /* no such process */
        sysroot_free(s);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_unit),
                cmocka_unit_test(test_exe_check),
                cmocka_unit_test(test_process),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
