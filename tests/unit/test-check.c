/* SPDX-License-Identifier: MIT */
/* The verdicts of `psidiag check` on made-up hosts: fail only where the agent cannot do its full
 * job, warn where it can with a stated limit. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cmd/check.h"
#include "probes/system.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static CheckFacts good_host(void) {
        CheckFacts f = {
                .pressure = { true, true, true, true },
                .cgroup2_pressure = true,
                .taskstats_version = 16,
                .delayacct = 1,
                .cap_eff = CAP_BIT(12) | CAP_BIT(19) | CAP_BIT(24),
                .perf_kernel = true,
                .perf_paranoid = 2,
                .unwinder = true,
        };
        strcpy(f.cgroup2_path, "/sys/fs/cgroup");
        return f;
}

static const CheckLine *find(const CheckLine *lines, size_t n, const char *what) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(lines[i].what, what) == 0)
                        return &lines[i];
        fail_msg("no line %s", what);
        return &lines[0]; /* not reached */
}

static CheckStatus worst(const CheckLine *lines, size_t n) {
        CheckStatus w = CHECK_OK;
        for (size_t i = 0; i < n; i++)
                if (lines[i].status > w)
                        w = lines[i].status;
        return w;
}

static void test_good_host_all_ok(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        size_t n = check_evaluate(&f, lines);

        assert_true(n >= 10 && n <= CHECK_LINES_MAX);
        assert_int_equal(worst(lines, n), CHECK_OK);
        assert_non_null(strstr(find(lines, n, "taskstats")->text, "struct version 16"));
        assert_non_null(strstr(find(lines, n, "cgroup-v1")->text, "pure cgroup2"));
}

/* What stacks_hz needs (psidiag 0.13): ok, or warn with what a capture would lack; never fail. */
static void test_stacks(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        size_t n = check_evaluate(&f, lines);
        const CheckLine *l = find(lines, n, "stacks");

        assert_int_equal(l->status, CHECK_OK);
        f.perf_err = -EACCES;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "stacks");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "CAP_PERFMON"));
        assert_non_null(strstr(l->text, "perf_event_paranoid is 2"));
        f.perf_paranoid = 3; /* Debian's kernels' default */
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "stacks")->text, "only CAP_SYS_ADMIN"));
        f.perf_paranoid = 2;
        f.perf_err = -EPERM; /* a seccomp filter's answer, as the shipped unit gives */
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "stacks")->text, "@debug"));
        f = good_host();
        f.unwinder = false;
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "stacks")->text, "libdw1"));
        f = good_host();
        f.perf_kernel = false;
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "stacks")->text, "user frames only"));
        f = good_host();
        f.kallsyms_err = -EPERM;
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "stacks")->text, "kptr_restrict"));
        f = good_host();
        f.cap_eff &= ~CAP_BIT(19);
        n = check_evaluate(&f, lines);
        l = find(lines, n, "stacks");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "CAP_SYS_PTRACE"));
        assert_int_equal(worst(lines, n), CHECK_WARN);
}

/* How long threads have been blocked (psidiag 0.9): ok, or warn with what is lost and why. */
static void test_blocked_since(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        size_t n;

        f.cpus_allowed = f.cpus_online = 8;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "blocked-since")->status, CHECK_OK);
        f.cpus_allowed = 2;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "blocked-since")->status, CHECK_WARN);
        assert_non_null(strstr(find(lines, n, "blocked-since")->text, "2 of 8 cpus"));
        f.sched_err = -ENOENT;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "blocked-since")->status, CHECK_WARN);
        assert_non_null(strstr(find(lines, n, "blocked-since")->text, "CONFIG_SCHED_DEBUG"));
        f.sched_err = -EPERM;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "blocked-since")->status, CHECK_WARN);
        assert_non_null(strstr(find(lines, n, "blocked-since")->text, "sched_setaffinity() refused"));
}

/* The exit listener's registration for the possible cpus: acknowledged, or the kernel's refusal
 * shown with the cpus asked. */
static void test_exit_listener(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        size_t n;

        snprintf(f.exit_cpus, sizeof f.exit_cpus, "0-7");
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "exit-listener")->status, CHECK_OK);
        assert_non_null(strstr(find(lines, n, "exit-listener")->text, "possible cpus 0-7 (acknowledged)"));
        f.exit_err = -EINVAL; /* outside the initial pid or user namespace */
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "exit-listener")->status, CHECK_WARN);
        assert_non_null(strstr(find(lines, n, "exit-listener")->text, "a pid or user namespace of its own"));
        f.exit_err = -ENOBUFS;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "exit-listener")->status, CHECK_FAIL);
        assert_non_null(strstr(find(lines, n, "exit-listener")->text, "refused the registration for cpus 0-7"));
}

static void test_hybrid_host_named(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];

        strcpy(f.cgroup2_path, "/sys/fs/cgroup/unified");
        strcpy(f.v1_controllers, "cpu memory blkio");
        strcpy(f.memory_v1_path, "/sys/fs/cgroup/memory");
        size_t n = check_evaluate(&f, lines);
        assert_int_equal(worst(lines, n), CHECK_OK);
        assert_non_null(strstr(find(lines, n, "cgroup2")->text, "/sys/fs/cgroup/unified (hybrid host)"));
        assert_non_null(strstr(find(lines, n, "cgroup-v1")->text, "memory.limit_in_bytes under /sys/fs/cgroup/memory"));
}

static void test_missing_net_admin_fails(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];

        f.cap_eff = 0;
        f.taskstats_err = -EPERM;
        size_t n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "taskstats")->status, CHECK_FAIL);
        assert_non_null(strstr(find(lines, n, "taskstats")->text, "CAP_NET_ADMIN"));
        assert_int_equal(find(lines, n, "cap-net-admin")->status, CHECK_FAIL);
        assert_int_equal(find(lines, n, "cap-sys-resource")->status, CHECK_WARN);
}

/* Limits the agent works around are warnings, not failures. */
static void test_degraded_but_working_is_warn(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];

        f.cap_eff = CAP_BIT(12);
        f.delayacct = 0;
        f.delayacct_switchable = true;
        f.kmsg_err = -EPERM;
        f.pressure[PSI_RESOURCE_IRQ] = false;
        f.cgroup2_write_err = -EACCES;
        size_t n = check_evaluate(&f, lines);
        assert_int_equal(worst(lines, n), CHECK_WARN);
        assert_non_null(strstr(find(lines, n, "delayacct")->text, "--enable-delayacct"));
        assert_non_null(strstr(find(lines, n, "kmsg")->text, "CAP_SYSLOG"));
        assert_non_null(strstr(find(lines, n, "psi")->text, "no irq"));
        assert_non_null(strstr(find(lines, n, "cap-sys-resource")->text, "multiples of 2s"));
        assert_non_null(strstr(find(lines, n, "cgroup2")->text, "delegated"));
        f.delayacct_switchable = false;
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "delayacct")->text, "CAP_SYS_ADMIN"));
}

static void test_no_psi_no_cgroup2_fail(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];

        f.pressure_err = -ENOENT;
        f.cgroup2_path[0] = '\0';
        f.procfs_err = -EACCES;
        size_t n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "psi")->status, CHECK_FAIL);
        assert_non_null(strstr(find(lines, n, "psi")->text, "CONFIG_PSI"));
        assert_int_equal(find(lines, n, "cgroup2")->status, CHECK_FAIL);
        assert_int_equal(find(lines, n, "procfs")->status, CHECK_FAIL);

        f = good_host();
        f.arm_err = -EINVAL;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "psi-trigger")->status, CHECK_FAIL);
        f = good_host();
        f.taskstats_err = -EPROTONOSUPPORT;
        n = check_evaluate(&f, lines);
        assert_non_null(strstr(find(lines, n, "taskstats")->text, "CONFIG_TASKSTATS"));
        f = good_host();
        f.taskstats_version = 99;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "taskstats")->status, CHECK_OK);
        assert_non_null(strstr(find(lines, n, "taskstats")->text, "newer than psidiag knows"));
}

static void test_cgroup_namespace(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        const CheckLine *l;
        size_t n;

        f.cgroupns = (ProcCgroupNamespace) { .scanned = 120 };
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "cgroupns")->status, CHECK_OK);
        assert_non_null(strstr(find(lines, n, "cgroupns")->text, "the host's cgroup namespace"));

        /* A namespace of its own, seen either way: the ns link, or "/.." paths (pid 1 unreadable). */
        f.cgroupns = (ProcCgroupNamespace) { .differs_from_init = true, .scanned = 120 };
        n = check_evaluate(&f, lines);
        l = find(lines, n, "cgroupns");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "must run in the host's cgroup namespace"));
        assert_non_null(strstr(l->text, "outside the agent's cgroup namespace"));
        f.cgroupns = (ProcCgroupNamespace) { .scanned = 120, .outside = 97, .outside_pid = 1 };
        n = check_evaluate(&f, lines);
        l = find(lines, n, "cgroupns");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "97 of 120 processes (pid 1, ...)"));
        assert_non_null(strstr(l->text, "mount the host's /sys/fs/cgroup"));
        assert_int_equal(worst(lines, n), CHECK_WARN);

        /* Under a mount of the host's tree, its root found: ok, every path resolved. */
        f.cgns = (CgroupNamespace) { .private_root = true, .resolved = true, .up = 3, .root = "kubepods/pod1/ctr" };
        n = check_evaluate(&f, lines);
        l = find(lines, n, "cgroupns");
        assert_int_equal(l->status, CHECK_OK);
        assert_non_null(strstr(l->text, "rooted at /kubepods/pod1/ctr of the host's cgroup2 mount"));
        assert_non_null(strstr(l->text, "3 levels down"));
        /* Not found there: a warning that says why. */
        f.cgns = (CgroupNamespace) { .private_root = true, .error = -ENOENT, .up = 3 };
        n = check_evaluate(&f, lines);
        l = find(lines, n, "cgroupns");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "could not be found under the cgroup2 mount (No such file or directory)"));
        f.cgns = (CgroupNamespace) {};

        f.cgroupns_err = -EACCES;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "cgroupns")->status, CHECK_WARN);
        f.cgroupns_err = -ENOENT;
        n = check_evaluate(&f, lines);
        assert_int_equal(find(lines, n, "cgroupns")->status, CHECK_OK);
}

/* Run as the DaemonSet runs it under a runtime's default AppArmor profile: the node-wide trigger
 * is refused, and check names the profile and how to lift it; unconfined or in complain mode, the
 * plain error. /dev/kmsg refused with CAP_SYSLOG present blames the device cgroup, not the
 * capability. */
static void test_lsm_and_kmsg(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        const CheckLine *l;
        size_t n;

        f.arm_err = -EACCES;
        strcpy(f.lsm_label, "docker-default (enforce)");
        n = check_evaluate(&f, lines);
        l = find(lines, n, "psi-trigger");
        assert_int_equal(l->status, CHECK_FAIL);
        assert_non_null(strstr(l->text, "confined by the LSM profile \"docker-default (enforce)\""));
        assert_non_null(strstr(l->text, "appArmorProfile"));
        strcpy(f.lsm_label, "cri-containerd.apparmor.d (complain)");
        n = check_evaluate(&f, lines);
        assert_null(strstr(find(lines, n, "psi-trigger")->text, "LSM"));
        strcpy(f.lsm_label, "unconfined");
        n = check_evaluate(&f, lines);
        assert_null(strstr(find(lines, n, "psi-trigger")->text, "LSM"));

        f.kmsg_err = -EPERM;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "kmsg");
        assert_non_null(strstr(l->text, "CAP_SYSLOG is needed"));
        f.cap_eff |= CAP_BIT(CAP_SYSLOG);
        n = check_evaluate(&f, lines);
        l = find(lines, n, "kmsg");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "although CAP_SYSLOG is present: a container's device cgroup refuses it"));
}

/* The label as the kernel gives it, and what confines. */
static void test_lsm_label(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", label[64];
        int fd;

        assert_true(system_lsm_confines("docker-default (enforce)"));
        assert_true(system_lsm_confines("system_u:system_r:container_t:s0:c1,c2"));
        assert_false(system_lsm_confines("unconfined"));
        assert_false(system_lsm_confines("psidiag (complain)"));
        assert_false(system_lsm_confines("unconfined_u:unconfined_r:unconfined_t:s0-s0:c0.c1023"));
        assert_false(system_lsm_confines(""));
        assert_false(system_lsm_confines(NULL));

        assert_non_null(mkdtemp(dir));
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_int_equal(system_read_lsm_label(fd, label, sizeof label), -ENOENT);
        assert_int_equal(fake_tree_write(dir, "self/attr/current", "system_u:system_r:spc_t:s0\n"), 0);
        assert_int_equal(system_read_lsm_label(fd, label, sizeof label), 0);
        assert_string_equal(label, "system_u:system_r:spc_t:s0");
        /* AppArmor's own file wins over the first LSM's. */
        assert_int_equal(fake_tree_write(dir, "self/attr/apparmor/current", "docker-default (enforce)\n"), 0);
        assert_int_equal(system_read_lsm_label(fd, label, sizeof label), 0);
        assert_string_equal(label, "docker-default (enforce)");
        assert_int_equal(fake_tree_write(dir, "self/attr/apparmor/current", "\n"), 0);
        assert_int_equal(system_read_lsm_label(fd, label, sizeof label), -EINVAL);
        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Container names: ok when every container the tree holds is named, warn with the runtime and the
 * reason when one is not, ok on a host without containers. */
static void test_container_names(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        const CheckLine *l;
        size_t n;

        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_OK);
        assert_string_equal(l->text, "no container in the cgroup tree");

        f.runtimes[0] = (CheckRuntime) { .runtime = "containerd", .seen = 9, .named = 9 };
        f.runtimes[1] = (CheckRuntime) { .runtime = "podman", .seen = 2, .named = 2 };
        f.n_runtimes = 2;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_OK);
        assert_non_null(strstr(l->text, "containerd 9 of 9, podman 2 of 2"));
        /* a user's cgroups that claim a container's id: said, under no runtime, still ok */
        f.unverified = 2;
        strcpy(f.unverified_why, "user@0.service nested in another systemd instance (user@1000.service)");
        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_OK);
        assert_non_null(strstr(l->text, "podman 2 of 2; 2 cgroups claiming a container's id not its runtime's, "
                                        "named nothing: user@0.service nested in another systemd instance"));
        f.unverified = 0;

        /* the DaemonSet without docker's mount: docker's containers are ids alone */
        f.runtimes[2] = (CheckRuntime) { .runtime = "docker", .seen = 3, .named = 0 };
        strcpy(f.runtimes[2].unnamed, "no config.v2.json: the container is gone or not this host's");
        f.runtimes[1].named = 1;
        strcpy(f.runtimes[1].unnamed, "its containers.json: Permission denied");
        f.n_runtimes = 3;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "containerd 9 of 9, podman 1 of 2, docker 0 of 3"));
        assert_non_null(strstr(l->text, "docker's not: no config.v2.json: the container is gone or not this host's"));
        assert_non_null(strstr(l->text, "docs/deploy.md"));
        assert_int_equal(worst(lines, n), CHECK_WARN);

        /* every runtime the table holds, each with a long name: the line stays within its text */
        for (size_t i = 0; i < CHECK_RUNTIMES_MAX; i++) {
                f.runtimes[i] = (CheckRuntime) { .seen = 4000000000u, .named = 1 };
                memset(f.runtimes[i].runtime, 'r', sizeof f.runtimes[i].runtime - 1);
                memset(f.runtimes[i].unnamed, 'u', sizeof f.runtimes[i].unnamed - 1);
        }
        f.n_runtimes = CHECK_RUNTIMES_MAX;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_WARN);
        assert_true(strlen(l->text) < sizeof l->text);

        f.n_runtimes = 0;
        f.containers_err = -EACCES;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "container-names");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "Permission denied"));
}

/* Discovery's watches (the dir-watches line): ok under the limit; warn beyond it, beyond a user's
 * share, or when root's processes would run out of watches first; the limit is a quarter of
 * fs.inotify.max_user_watches when that is lower than max_dir_watches. */
static void test_dir_watches(void **state) {
        CheckFacts f = good_host();
        CheckLine lines[CHECK_LINES_MAX];
        const CheckLine *l;
        size_t n;

        f.dirs = 40;
        f.dir_watch_default = 2048;
        f.inotify_max = 192530;
        f.inotify_use = (InotifyUse) { .watches = 300, .comm_watches = 40, .comm_procs = 1 };
        n = check_evaluate(&f, lines);
        l = find(lines, n, "dir-watches");
        assert_int_equal(l->status, CHECK_OK);
        assert_non_null(strstr(l->text, "40 cgroup directories, of at most 2048"));
        assert_non_null(strstr(l->text, "hold 300 of the 192530"));
        /* A user's 20,000 empty directories: beyond the limit, and whose they are. */
        f.dirs = 20040;
        f.dirs_users = f.dirs_user_most = 20000;
        f.dirs_user_uid = 1000;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "dir-watches");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "more than the limit of 2048"));
        assert_non_null(strstr(l->text, "uid 1000 the most (20000)"));
        /* Under the limit, but beyond the user's share (2048 / 16). */
        f.dirs = 240;
        f.dirs_users = f.dirs_user_most = 200;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "dir-watches");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "uid 1000 owns 200 of them, beyond a user's share (128)"));
        /* A small node's 8192 watches: the limit is 2048 still; root's 7000 leave too few. */
        f.dirs_users = f.dirs_user_most = 0;
        f.inotify_max = 8192;
        f.inotify_use.watches = 7000;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "dir-watches");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "run out of inotify watches first"));
        /* 4096: the limit is a quarter of it. */
        f.inotify_max = 4096;
        f.inotify_use.watches = 100;
        f.dirs = 1500;
        n = check_evaluate(&f, lines);
        l = find(lines, n, "dir-watches");
        assert_int_equal(l->status, CHECK_WARN);
        assert_non_null(strstr(l->text, "more than the limit of 1024"));
}

/* The watches this process holds, counted as root's are (its own uid here). */
static void test_count_inotify(void **state) {
        int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = inotify_init1(IN_CLOEXEC);
        InotifyUse u;

        assert_true(proc_fd >= 0 && fd >= 0);
        assert_true(inotify_add_watch(fd, "/", IN_CREATE) >= 0);
        assert_true(inotify_add_watch(fd, "/proc", IN_CREATE) >= 0);
        assert_true(inotify_add_watch(fd, "/dev", IN_CREATE) >= 0);
        assert_int_equal(system_count_inotify(proc_fd, geteuid(), "no-such-comm", 100000, &u), 0);
        assert_true(u.watches >= 3);
        assert_true(u.scanned >= 1);
        assert_int_equal(u.comm_watches, 0);
        uint64_t max;
        assert_int_equal(system_read_inotify_max_watches(proc_fd, &max), 0);
        assert_true(max >= u.watches);
        close(fd);
        close(proc_fd);
}

/* The lines come in the order `psidiag check` has always printed them (its checks walked from a
 * table), each once; the checks that write other lines than one of their name write them in
 * place. */
static void assert_whats(const CheckFacts *f, const char *const *want) {
        CheckLine lines[CHECK_LINES_MAX];
        size_t n = check_evaluate(f, lines), i;

        for (i = 0; want[i]; i++) {
                assert_true(i < n);
                assert_string_equal(lines[i].what, want[i]);
        }
        assert_int_equal(n, i);
}

static void test_line_order(void **state) {
        CheckFacts f = good_host();

        assert_whats(&f, (const char *const[]) { "psi", "psi-trigger", "cgroup2", "cgroup-v1", "taskstats",
                                                 "exit-listener", "delayacct", "cap-net-admin", "cap-sys-resource",
                                                 "procfs", "kmsg", "prekill-hook", "blocked-since", "cgroupns",
                                                 "container-names", "dir-watches", "stacks", NULL });
        f.pressure_err = -ENOENT;
        f.taskstats_err = f.exit_err = -EPERM; /* the listener not asked (check_gather()) */
        f.caps_err = -EACCES;
        assert_whats(&f, (const char *const[]) { "psi", "cgroup2", "cgroup-v1", "taskstats", "delayacct",
                                                 "capabilities", "procfs", "kmsg", "prekill-hook", "blocked-since",
                                                 "cgroupns", "container-names", "dir-watches", "stacks", NULL });
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good_host_all_ok),
                cmocka_unit_test(test_line_order),
                cmocka_unit_test(test_lsm_and_kmsg),
                cmocka_unit_test(test_lsm_label),
                cmocka_unit_test(test_blocked_since),
                cmocka_unit_test(test_stacks),
                cmocka_unit_test(test_exit_listener),
                cmocka_unit_test(test_hybrid_host_named),
                cmocka_unit_test(test_missing_net_admin_fails),
                cmocka_unit_test(test_degraded_but_working_is_warn),
                cmocka_unit_test(test_no_psi_no_cgroup2_fail),
                cmocka_unit_test(test_cgroup_namespace),
                cmocka_unit_test(test_container_names),
                cmocka_unit_test(test_dir_watches),
                cmocka_unit_test(test_count_inotify),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
