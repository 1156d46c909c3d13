/* SPDX-License-Identifier: MIT */
/* The marks killers leave outside the cgroup (agent/killers.c): which running processes are
 * killers (never by comm: `cp /bin/sleep ~/earlyoom` is no earlyoom), and which kill log files are
 * read (a file others may write is not). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/killers.h"
#include "probes/sysroot.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static void add_process(const char *dir, int pid, const char *comm, const char *exe, const char *cgroup) {
        char p[256];

        snprintf(p, sizeof p, "proc/%d/comm", pid);
        assert_int_equal(fake_tree_write(dir, p, comm), 0);
        snprintf(p, sizeof p, "proc/%d/cgroup", pid);
        assert_int_equal(fake_tree_write(dir, p, cgroup), 0);
        snprintf(p, sizeof p, "%s/proc/%d/exe", dir, pid);
        assert_int_equal(symlink(exe, p), 0);
}

/* A user's processes named like killers count for none; the killers' own units do. */
static void test_running_not_by_comm(void **state) {
        char dir[] = "/tmp/psidiag-killers-XXXXXX";
        KillerKind running[8];
        Sysroot *s = NULL;
        size_t n;

        assert_int_equal(fake_tree_copy(dir, FIXTURE_DIR "/cgroup2"), 0);
        /* cp /bin/sleep ~/earlyoom; ~/earlyoom & (and the same as oomd) */
        add_process(dir, 300, "earlyoom", "/home/u/earlyoom", "0::/user.slice/user-1000.slice/session-2.scope\n");
        add_process(dir, 301, "oomd", "/home/u/bin/oomd", "0::/user.slice/user-1000.slice/session-2.scope\n");
        /* Debian's nohang.service (its exe python3) and systemd-oomd (its own user: exe unreadable
         * to root without CAP_SYS_PTRACE, a missing target here). */
        add_process(dir, 400, "nohang", "/usr/bin/python3.11", "0::/system.slice/nohang.service\n");
        add_process(dir, 401, "systemd-oomd", "/nonexistent/systemd-oomd", "0::/system.slice/systemd-oomd.service\n");
        assert_int_equal(sysroot_open(dir, &s), 0);

        n = killers_running(s, running, ELEMENTSOF(running));
        for (size_t i = 0; i < n; i++)
                if (running[i] == KILLER_EARLYOOM || running[i] == KILLER_OOMD)
                        fail_msg("a user's process named %s is taken for a running killer",
                                 killer_kind_to_string(running[i]));
        assert_int_equal(n, 2);
        assert_true((running[0] == KILLER_NOHANG && running[1] == KILLER_SYSTEMD_OOMD) ||
                    (running[1] == KILLER_NOHANG && running[0] == KILLER_SYSTEMD_OOMD));
        sysroot_free(s);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A configured kill log file is read only when no one but root may write it. */
static void test_log_file_owner(void **state) {
        char dir[] = "/tmp/psidiag-killlog-XXXXXX", path[256];
        char *files[1] = { path };
        Config c = { .kill_log_files = files, .n_kill_log_files = 1, .has_kill_log_files = true };
        KillLogs k = {};

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/killer.log", dir);
        assert_int_equal(fake_tree_write(dir, "killer.log", ""), 0);

        assert_int_equal(chmod(path, 0666), 0);
        killers_logs_open(&k, &c);
        assert_int_equal(k.n_logs, 0);
        killers_logs_close(&k);

        assert_int_equal(chmod(path, 0644), 0);
        killers_logs_open(&k, &c);
        assert_int_equal(k.n_logs, geteuid() == 0 ? 1 : 0); /* root's file, else the test user's */
        killers_logs_close(&k);
        if (geteuid() == 0) {
                /* Group-writable: by group root (umask 002) read, by another group not. */
                assert_int_equal(chown(path, 0, 0), 0);
                assert_int_equal(chmod(path, 0664), 0);
                killers_logs_open(&k, &c);
                assert_int_equal(k.n_logs, 1);
                killers_logs_close(&k);
                assert_int_equal(chown(path, 0, 1000), 0);
                killers_logs_open(&k, &c);
                assert_int_equal(k.n_logs, 0);
                killers_logs_close(&k);
                assert_int_equal(chown(path, 1000, 1000), 0);
                assert_int_equal(chmod(path, 0644), 0);
                killers_logs_open(&k, &c);
                assert_int_equal(k.n_logs, 0);
                killers_logs_close(&k);
        } else
                print_message("not root: the cases of a file of root's are not run\n");

        /* Not set: none, /var/log/syslog included. */
        Config none = {};
        killers_logs_open(&k, &none);
        assert_int_equal(k.n_logs, 0);
        killers_logs_close(&k);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_running_not_by_comm),
                cmocka_unit_test(test_log_file_owner),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
