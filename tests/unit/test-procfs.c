/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probes/procfs.h"
#include "probes/system.h"
#include "tests/unit/test-util.h"

static int parse_stat(const char *s, ProcStat *st) {
        return proc_stat_parse_buf(s, strlen(s), st);
}

static void test_stat_plain(void **state) {
        ProcStat st;

        assert_int_equal(parse_stat("42 (bash) S 1 42 42 34816 42 4194560 2000 0 0 0 10 5 0 0 20 0 1 0 987654 "
                                    "10000 500 18446744073709551615\n",
                                    &st),
                         0);
        assert_string_equal(st.comm, "bash");
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.ppid, 1);
        assert_int_equal(st.starttime_ticks, 987654);
        assert_int_equal(st.majflt, 0);
        assert_true(st.has_rss);
        assert_int_equal(st.rss_pages, 500);
        assert_int_equal(st.flags, 0x400100); /* field 9: PF_RANDOMIZE | PF_SUPERPRIV */
}

/* Field 9, the PF_* flags: a thread in reclaim has PF_MEMALLOC (0x800) set (kernel-facts.md:
 * wait-resource); a negative or oversized value is refused. */
static void test_stat_flags(void **state) {
        ProcStat st;

        assert_int_equal(parse_stat("9 (toucher) D 1 9 9 0 -1 4196416 0 0 0 0 1 1 0 0 20 0 1 0 5 1 2\n", &st), 0);
        assert_int_equal(st.flags, 0x400840);
        assert_true(st.flags & 0x800);
        assert_int_equal(parse_stat("9 (x) D 1 9 9 0 -1 -5 0 0 0 0 1 1 0 0 20 0 1 0 5 1 2\n", &st), -EINVAL);
        assert_int_equal(parse_stat("9 (x) D 1 9 9 0 -1 4294967296 0 0 0 0 1 1 0 0 20 0 1 0 5 1 2\n", &st), -EINVAL);
}

/* Fields 12 (majflt) and 24 (rss), and a record that stops at starttime. */
static void test_stat_memory(void **state) {
        ProcStat st;

        assert_int_equal(parse_stat("7 (grow er) R 1 7 7 0 -1 4194560 812 0 37 0 10 5 0 0 20 0 1 0 5 104857600 25600 "
                                    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                                    &st),
                         0);
        assert_int_equal(st.majflt, 37);
        assert_true(st.has_rss);
        assert_int_equal(st.rss_pages, 25600);
        /* Field 39, the cpu it last ran on (kernel-facts.md: blocked-since). */
        assert_true(st.has_processor);
        assert_int_equal(st.processor, 1);
        assert_int_equal(parse_stat("7 (x) D 1 7 7 0 -1 0 0 0 3 0 10 5 0 0 20 0 1 0 5 1 2 3 4 5 6 7 8 9 10 11 12 13 "
                                    "14 15 -1 17\n",
                                    &st),
                         0);
        assert_true(st.has_processor);
        assert_int_equal(st.processor, 17);
        assert_int_equal(parse_stat("7 (x) R 1 7 7 0 -1 0 0 0 3 0 10 5 0 0 20 0 1 0 5", &st), 0);
        assert_int_equal(st.majflt, 3);
        assert_false(st.has_rss);
        assert_false(st.has_processor);
}

/* /proc/<pid>/status as 6.x writes it (fs/proc/task_mmu.c task_mem()); a kernel thread has no Vm lines. */
static void test_status_memory(void **state) {
        static const char status[] = "Name:\tgrower\nUmask:\t0022\nState:\tR (running)\nTgid:\t812\n"
                                     "Uid:\t1000\t1000\t1000\t1000\nVmPeak:\t  30000 kB\nVmRSS:\t   25344 kB\n"
                                     "RssAnon:\t   24576 kB\nRssFile:\t     640 kB\nRssShmem:\t     128 kB\n"
                                     "VmSwap:\t    2048 kB\nThreads:\t1\n";
        static const char kthread[] = "Name:\tkworker/0:1\nUid:\t0\t0\t0\t0\nThreads:\t1\n";
        ProcMemory m;

        assert_int_equal(proc_status_parse_memory(status, strlen(status), &m), 0);
        assert_int_equal(m.rss_kib, 25344);
        assert_int_equal(m.anon_kib, 24576);
        assert_int_equal(m.file_kib, 640);
        assert_int_equal(m.shmem_kib, 128);
        assert_int_equal(m.swap_kib, 2048);
        assert_int_equal(m.uid, 1000);
        assert_int_equal(proc_status_parse_memory(kthread, strlen(kthread), &m), -EINVAL);
        assert_int_equal(proc_status_parse_memory(status, 60, &m), -EINVAL); /* cut */
}

static void test_io(void **state) {
        static const char io[] = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n"
                                 "read_bytes: 4096\nwrite_bytes: 323932160\ncancelled_write_bytes: 8192\n";
        ProcIo r;

        assert_int_equal(proc_io_parse_buf(io, strlen(io), &r), 0);
        assert_int_equal(r.read_bytes, 4096);
        assert_int_equal(r.write_bytes, 323932160);
        assert_int_equal(r.cancelled_write_bytes, 8192);
        assert_int_equal(proc_io_parse_buf(io, 60, &r), -EINVAL); /* cut before read_bytes */
        assert_int_equal(proc_io_parse_buf("read_bytes: x\nwrite_bytes: 1\n", 27, &r), -EINVAL);
}

static void test_stat_hostile_comm(void **state) {
        ProcStat st;

        /* A comm can hold ") Z " and parentheses: the state is after the LAST ')'. */
        assert_int_equal(parse_stat("100 (web) Z 1 (x) R 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 1100 0\n", &st),
                         0);
        assert_string_equal(st.comm, "web) Z 1 (x");
        assert_int_equal(st.state, 'R');
        assert_int_equal(st.starttime_ticks, 1100);

        assert_int_equal(parse_stat("7 ()) D 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0\n", &st), 0);
        assert_string_equal(st.comm, ")");
        assert_int_equal(st.state, 'D');

        assert_int_equal(parse_stat("8 (a\nb \"c\") T 3 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0\n", &st), 0);
        assert_string_equal(st.comm, "a\nb \"c\"");
        assert_int_equal(st.state, 'T');
        assert_int_equal(st.ppid, 3);

        assert_int_equal(parse_stat("9 () S 1 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 6 0", &st), 0);
        assert_int_equal(st.comm_len, 0);
}

static void test_stat_malformed(void **state) {
        ProcStat st;

        assert_int_equal(parse_stat("", &st), -EINVAL);
        assert_int_equal(parse_stat("1 (x", &st), -EINVAL);
        assert_int_equal(parse_stat("1 x) S 1", &st), -EINVAL);
        assert_int_equal(parse_stat("1 (x) S", &st), -EINVAL);
        assert_int_equal(parse_stat("1 (x)S 1 2", &st), -EINVAL);
        assert_int_equal(parse_stat("1 (x) S 1 2 3", &st), -EINVAL); /* no starttime */
        assert_int_equal(parse_stat("1 (x) S z 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5", &st), -EINVAL);
}

static void test_status_and_cgroup(void **state) {
        const char *status = "Name:\tx\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        const char *cg = "12:memory:/app\n1:name=systemd:/x\n0::/system.slice/a b.service\n";
        char out[64];
        uid_t uid;

        assert_int_equal(proc_status_parse_uid(status, strlen(status), &uid), 0);
        assert_int_equal(uid, 1000);
        assert_int_equal(proc_status_parse_uid("Name:\tx\n", 8, &uid), -EINVAL);
        assert_int_equal(proc_status_parse_uid("Uid:\t-1\n", 8, &uid), -EINVAL);

        const char *thread = "Name:\tw\nState:\tS\nTgid:\t4300\nNgid:\t0\nPid:\t4321\n";
        pid_t tgid = 7;
        assert_int_equal(proc_status_parse_tgid(thread, strlen(thread), &tgid), 0);
        assert_int_equal(tgid, 4300);
        assert_int_equal(proc_status_parse_tgid("Tgid:\t99999999999\n", 18, &tgid), -EINVAL);
        assert_int_equal(proc_status_parse_tgid("Pid:\t1\n", 7, &tgid), -EINVAL);
        assert_int_equal(tgid, 4300);

        assert_int_equal(proc_cgroup_parse_unified(cg, strlen(cg), out, sizeof out), 0);
        assert_string_equal(out, "/system.slice/a b.service");
        assert_int_equal(proc_cgroup_parse_unified(cg, strlen(cg), out, 5), -ENOBUFS);
        assert_int_equal(proc_cgroup_parse_unified("12:memory:/app\n", 15, out, sizeof out), -ENOENT);
}

/* A cgroup name may hold a newline (mkdir takes any byte but '/' and NUL), and the kernel writes
 * it as it is: a user who made "x\n0::/system.slice/docker-ID.scope" in the v1 name=systemd
 * hierarchy a hybrid host delegates, or in their own cgroup2 subtree, adds a "0::" line of their
 * choosing. Such a record is refused, never read as the line that comes first. */
static void test_cgroup_newline_forgery(void **state) {
        static const char *const forged[] = {
                /* a v1 name before the real line (the kernel lists cgroup2 last) */
                "1:name=systemd:/user.slice/user-1000.slice/user@1000.service/x\n0::/system.slice/docker-"
                "0123abcd.scope\n0::/user.slice/user-1000.slice/user@1000.service/app.slice/x\n",
                /* the cgroup2 name itself */
                "0::/user.slice/user-1000.slice/user@1000.service/x\n0::/system.slice/earlyoom.service\n",
                /* a name ending in a newline, or in text of no line's shape */
                "0::/user.slice/x\n\n",
                "1:name=systemd:/u/x\nsystem.slice\n0::/u/x\n",
                "0::/u/x\n:memory:/y\n",
                "0::/u/x\n7:memory:y\n",
        };
        char out[256];

        for (size_t i = 0; i < ELEMENTSOF(forged); i++)
                if (proc_cgroup_parse_unified(forged[i], strlen(forged[i]), out, sizeof out) != -EBADMSG)
                        fail_msg("a forged record was read as %s:\n%s", out, forged[i]);
        /* The kernel's own records, hybrid and pure, with and without the last newline. */
        const char *hybrid = "13:misc:/\n5:memory:/user.slice/user-1000.slice/session-2.scope\n1:name=systemd:/user."
                             "slice/user-1000.slice/session-2.scope\n0::/user.slice/user-1000.slice/session-2.scope\n";
        assert_int_equal(proc_cgroup_parse_unified(hybrid, strlen(hybrid), out, sizeof out), 0);
        assert_string_equal(out, "/user.slice/user-1000.slice/session-2.scope");
        assert_int_equal(proc_cgroup_parse_unified("0::/", 4, out, sizeof out), 0);
        assert_string_equal(out, "/");
        assert_int_equal(proc_cgroup_parse_unified("0::/../..\n", 10, out, sizeof out), 0);
        assert_string_equal(out, "/../..");
}

static void test_readers_on_fixture(void **state) {
        int proc = open(fixture("hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        char buf[256];
        ProcStat st;
        uid_t uid;
        ssize_t n;

        assert_true(proc >= 0);
        assert_int_equal(proc_read_stat(proc, 100, &st), 0);
        assert_string_equal(st.comm, "web) Z 1 (x");
        assert_int_equal(st.state, 'R');
        assert_int_equal(proc_read_stat(proc, 4242, &st), -ESRCH);

        n = proc_read_cmdline(proc, 100, buf, sizeof buf);
        assert_int_equal(n, strlen("nginx -g daemon off;"));
        assert_string_equal(buf, "nginx -g daemon off;");
        n = proc_read_cmdline(proc, 102, buf, sizeof buf);
        assert_int_equal(n, 10);
        assert_memory_equal(buf, "batch --\xff\xfe", 10);
        n = proc_read_cmdline(proc, 100, buf, 6);
        assert_int_equal(n, 5);
        assert_string_equal(buf, "nginx");

        n = proc_read_comm(proc, 101, buf, sizeof buf);
        assert_int_equal(n, 9);
        assert_memory_equal(buf, "worker\x01\"q", 9);
        assert_int_equal(proc_read_comm(proc, 4242, buf, sizeof buf), -ESRCH);

        pid_t tgid;
        assert_int_equal(proc_read_tgid(proc, 201, &tgid), 0); /* a thread of 200 */
        assert_int_equal(tgid, 200);
        assert_int_equal(proc_read_tgid(proc, 4242, &tgid), -ESRCH);

        assert_int_equal(proc_read_uid(proc, 200, &uid), 0);
        assert_int_equal(uid, 1000);
        assert_int_equal(proc_read_cgroup(proc, 200, buf, sizeof buf), 0);
        assert_string_equal(buf, "/app/batch");
        close(proc);
}

static void test_system_facts(void **state) {
        int proc = open(fixture("hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        char boot[64];
        uint64_t caps;

        assert_int_equal(system_read_boot_id(proc, boot, sizeof boot), 0);
        assert_string_equal(boot, "7840f08a-03c2-46e9-b294-dfdea98b2399");
        assert_int_equal(system_read_boot_id(proc, boot, 10), -EINVAL);
        assert_int_equal(system_read_delayacct(proc), 1);
        assert_int_equal(system_read_cap_eff(proc, &caps), 0);
        /* CAP_SYS_RESOURCE (24) absent, CAP_NET_ADMIN (12) present, as on the CI machine. */
        assert_false(caps & CAP_BIT(24));
        assert_true(caps & CAP_BIT(12));
        assert_int_equal(system_parse_cap_eff("CapEff:\t0000zz\n", 15, &caps), -EINVAL);
        assert_int_equal(system_parse_cap_eff("CapEff:\t\n", 9, &caps), -EINVAL);
        assert_int_equal(system_parse_cap_eff("CapEff:\t00000000000000001\n", 26, &caps), -EINVAL);
        close(proc);
}

/* /proc/loadavg's thread total and cpu lists, for the exit listener's buffer. */
static void test_threads_and_cpulists(void **state) {
        uint64_t n = 0;

        assert_int_equal(system_parse_threads("0.52 0.58 0.59 3/812 12345\n", 27, &n), 0);
        assert_int_equal(n, 812);
        assert_int_equal(system_parse_threads("0.52 0.58 0.59 3/", 17, &n), -EINVAL);
        assert_int_equal(system_parse_threads("0.52 0.58 0.59 3 812", 20, &n), -EINVAL);
        assert_int_equal(system_parse_threads("", 0, &n), -EINVAL);
        assert_int_equal(system_parse_threads("1 1 1 1/99999999999999999999999 1", 33, &n), -EINVAL);
        assert_int_equal(system_cpulist_count("0-3"), 4);
        assert_int_equal(system_cpulist_count("0-3,8,10-11\n"), 7);
        assert_int_equal(system_cpulist_count("0"), 1);
        assert_int_equal(system_cpulist_count(""), 0);
        assert_int_equal(system_cpulist_count("3-1"), 0);
        assert_int_equal(system_cpulist_count("a"), 0);
        assert_int_equal(system_cpulist_count("0-"), 0);

        /* The cpus themselves, as a perf capture opens one event on each. */
        int cpus[4];
        assert_int_equal(system_cpulist_expand("0-1,4,6-7\n", cpus, 4), 4);
        assert_int_equal(cpus[0], 0);
        assert_int_equal(cpus[1], 1);
        assert_int_equal(cpus[2], 4);
        assert_int_equal(cpus[3], 6);
        assert_int_equal(system_cpulist_expand("0-1000", cpus, 4), 4); /* cut at max */
        assert_int_equal(system_cpulist_expand("", cpus, 4), 0);
        assert_int_equal(system_cpulist_expand("3-1", cpus, 4), -EINVAL);
        assert_int_equal(system_cpulist_expand("0,x", cpus, 4), -EINVAL);
        assert_int_equal(system_cpulist_expand("99999999999", cpus, 4), -EINVAL);
}

static void test_cgroup_outside_namespace(void **state) {
        assert_true(proc_cgroup_outside_namespace("/.."));
        assert_true(proc_cgroup_outside_namespace("/../.."));
        assert_true(proc_cgroup_outside_namespace("/../../system.slice/cron.service"));
        assert_false(proc_cgroup_outside_namespace("/"));
        assert_false(proc_cgroup_outside_namespace("/..hidden/job"));
        assert_false(proc_cgroup_outside_namespace("/system.slice/.."));
        assert_false(proc_cgroup_outside_namespace(""));
}

static void test_cgroup_namespace_on_fixtures(void **state) {
        int proc = open(fixture("cgroupns/inside/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        ProcCgroupNamespace ns = { .scanned = 99 };

        assert_true(proc >= 0);
        assert_int_equal(proc_cgroup_namespace_read(proc, 100, &ns), 0);
        assert_true(ns.differs_from_init);
        assert_int_equal(ns.scanned, 4); /* 1, 310, 311, 312; 313 has no cgroup file */
        assert_int_equal(ns.outside, 2); /* 1 and 311 */
        assert_true(ns.outside_pid == 1 || ns.outside_pid == 311);
        /* The scan stops at max_scan. */
        assert_int_equal(proc_cgroup_namespace_read(proc, 1, &ns), 0);
        assert_int_equal(ns.scanned, 1);
        close(proc);

        proc = open(fixture("cgroupns/host/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(proc >= 0);
        assert_int_equal(proc_cgroup_namespace_read(proc, 100, &ns), 0);
        assert_false(ns.differs_from_init);
        assert_int_equal(ns.scanned, 2);
        assert_int_equal(ns.outside, 0);
        assert_int_equal(ns.outside_pid, 0);
        close(proc);

        /* No ns links (a kernel without cgroup namespaces): -ENOENT, nothing written. */
        proc = open(fixture("hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(proc >= 0);
        ns.scanned = 77;
        assert_int_equal(proc_cgroup_namespace_read(proc, 100, &ns), -ENOENT);
        assert_int_equal(ns.scanned, 77);
        close(proc);
}

/* A process's cpu from its cpu-time clock: this one's, which grows as it spins (in us, where
 * /proc/<pid>/stat counts clock ticks of 10 ms), and a child's once it is gone: -ESRCH. */
static void test_cpu_time(void **state) {
        uint64_t before, after;
        pid_t child;

        assert_int_equal(proc_cpu_time_us(getpid(), &before), 0);
        do
                assert_int_equal(proc_cpu_time_us(getpid(), &after), 0);
        while (after < before + 2000);
        assert_true(after >= before + 2000 && after < before + 1000000);
        child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, NULL, 0), child);
        assert_int_equal(proc_cpu_time_us(child, &after), -ESRCH);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat_plain),
                cmocka_unit_test(test_stat_flags),
                cmocka_unit_test(test_stat_hostile_comm),
                cmocka_unit_test(test_stat_malformed),
                cmocka_unit_test(test_status_and_cgroup),
                cmocka_unit_test(test_cgroup_newline_forgery),
                cmocka_unit_test(test_readers_on_fixture),
                cmocka_unit_test(test_system_facts),
                cmocka_unit_test(test_stat_memory),
                cmocka_unit_test(test_io),
                cmocka_unit_test(test_threads_and_cpulists),
                cmocka_unit_test(test_cgroup_outside_namespace),
                cmocka_unit_test(test_cgroup_namespace_on_fixtures),
                cmocka_unit_test(test_status_memory),
                cmocka_unit_test(test_cpu_time),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
