/* SPDX-License-Identifier: MIT */
/* /dev/kmsg records and OOM kill messages: real lines from 6.18 (cgroup-v1 memcg), the same
 * format with cgroup2 paths, the shorter "Killed process" line of 4.19-5.x kernels, a global OOM,
 * and hostile names. */
#include <errno.h>
#include <string.h>

#include "probes/kmsg.h"
#include "tests/unit/test-util.h"

/* Captured on this VM (6.18.44) from a 32 MiB cgroup-v1 memcg. */
#define REAL_HEADER                                                                                                    \
        "6,419,7171637818,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/"  \
        "oomt,task_memcg=/oomt,task=python3,pid=16702,uid=0\n"
#define REAL_KILLED                                                                                                    \
        "3,420,7171637832,-;Memory cgroup out of memory: Killed process 16702 (python3) total-vm:42264kB, "            \
        "anon-rss:32256kB, file-rss:6556kB, shmem-rss:0kB, UID:0 pgtables:132kB oom_score_adj:0\n"

static OomLine feed(const char *record, OomKill *o) {
        KmsgRecord r;

        assert_int_equal(kmsg_parse_record(record, strlen(record), &r), 0);
        return oom_parse_message(r.message, r.message_len, o);
}

static void test_record(void **state) {
        KmsgRecord r;
        const char *rec = "4,343,7171637183,-;python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)\n SUBSYSTEM=x\n";

        assert_int_equal(kmsg_parse_record(rec, strlen(rec), &r), 0);
        assert_int_equal(r.priority, 4);
        assert_int_equal(r.seq, 343);
        assert_int_equal(r.timestamp_us, 7171637183ULL);
        assert_int_equal(r.message_len, strlen("python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL)"));
        assert_int_equal(kmsg_parse_record("garbage", 7, &r), -EINVAL);
        assert_int_equal(kmsg_parse_record("1,2;x", 5, &r), -EINVAL);
        assert_int_equal(kmsg_parse_record("x,2,3,-;x", 9, &r), -EINVAL);
        assert_int_equal(kmsg_parse_record("99999999999999999999,2,3,-;x", 28, &r), -EINVAL);
}

static void test_real_v1_memcg(void **state) {
        OomKill o = {};

        assert_int_equal(feed(REAL_HEADER, &o), OOM_LINE_HEADER);
        assert_string_equal(o.constraint, "CONSTRAINT_MEMCG");
        assert_string_equal(o.oom_memcg, "/oomt");
        assert_string_equal(o.task_memcg, "/oomt");
        assert_string_equal(o.comm, "python3");
        assert_int_equal(o.pid, 16702);
        assert_int_equal(o.uid, 0);
        assert_false(o.killed);
        assert_int_equal(feed(REAL_KILLED, &o), OOM_LINE_KILLED);
        assert_true(o.killed && o.has_header && !o.global && o.has_rss);
        assert_int_equal(o.total_vm_kib, 42264);
        assert_int_equal(o.anon_rss_kib, 32256);
        assert_int_equal(o.file_rss_kib, 6556);
        assert_int_equal(o.shmem_rss_kib, 0);
        assert_string_equal(o.oom_memcg, "/oomt"); /* the header's facts survive the merge */
}

static void test_cgroup2_and_old_kernels(void **state) {
        OomKill o = {};
        const char *h = "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                        "oom_memcg=/kubepods.slice/pod1,task_memcg=/kubepods.slice/pod1/cri-containerd-ab.scope,"
                        "task=java,pid=4242,uid=1000";
        /* 4.19 to 5.x: no UID, pgtables or oom_score_adj on the Killed line. */
        const char *k = "3,2,3,-;Memory cgroup out of memory: Killed process 4242 (java) total-vm:12345kB, "
                        "anon-rss:6789kB, file-rss:10kB, shmem-rss:5kB";

        assert_int_equal(feed(h, &o), OOM_LINE_HEADER);
        assert_string_equal(o.oom_memcg, "/kubepods.slice/pod1");
        assert_string_equal(o.task_memcg, "/kubepods.slice/pod1/cri-containerd-ab.scope");
        assert_int_equal(o.uid, 1000);
        assert_int_equal(feed(k, &o), OOM_LINE_KILLED);
        assert_int_equal(o.pid, 4242);
        assert_int_equal(o.anon_rss_kib, 6789);
        assert_int_equal(o.shmem_rss_kib, 5);
        assert_int_equal(o.uid, 1000);

        /* A global OOM, and a Killed line whose header was lost (another pid): starts afresh. */
        const char *g = "3,9,9,-;Out of memory: Killed process 777 (leaky) total-vm:1kB, anon-rss:2kB, file-rss:3kB, "
                        "shmem-rss:4kB, UID:33 pgtables:8kB oom_score_adj:0";
        assert_int_equal(feed(g, &o), OOM_LINE_KILLED);
        assert_true(o.global && !o.has_header);
        assert_int_equal(o.pid, 777);
        assert_string_equal(o.comm, "leaky");
        assert_int_equal(o.uid, 33);
        assert_string_equal(o.oom_memcg, "");

        assert_int_equal(feed("6,3,4,-;python3 invoked oom-killer: gfp_mask=0xcc0", &o), OOM_LINE_NONE);
        assert_int_equal(feed("6,3,4,-;Killed process 12 (x) by hand", &o), OOM_LINE_NONE);
}

static void test_hostile_names(void **state) {
        OomKill o = {};
        /* A comm with ",pid=" and ") total-vm:" in it, and a cgroup name with commas. */
        const char *h = "6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                        "oom_memcg=/a,b,task_memcg=/a,b/c,d,task=x,pid=1) t,pid=99,uid=5";
        const char *k = "3,2,3,-;Memory cgroup out of memory: Killed process 99 (a) total-vm:1kB, (b) "
                        "total-vm:10kB, anon-rss:20kB, file-rss:30kB, shmem-rss:40kB, UID:5 pgtables:1kB";

        assert_int_equal(feed(h, &o), OOM_LINE_HEADER);
        assert_int_equal(o.pid, 99);
        assert_string_equal(o.comm, "x,pid=1) t");
        assert_string_equal(o.oom_memcg, "/a,b");
        assert_string_equal(o.task_memcg, "/a,b/c,d");
        assert_int_equal(feed(k, &o), OOM_LINE_KILLED);
        assert_int_equal(o.total_vm_kib, 10);
        assert_int_equal(o.anon_rss_kib, 20);

        OomKill fresh = {};
        assert_int_equal(feed(k, &fresh), OOM_LINE_KILLED);
        assert_string_equal(fresh.comm, "a) total-vm:1kB, (b");
        /* Not numbers where numbers belong: no crash, nothing made up. */
        assert_int_equal(feed("6,1,2,-;oom-kill:task=x,pid=abc,uid=0", &fresh), OOM_LINE_NONE);
        assert_int_equal(feed("6,1,2,-;oom-kill:task=x,pid=99999999999,uid=0", &fresh), OOM_LINE_NONE);
}

/* EPERM is dmesg_restrict only without CAP_SYSLOG: with it, a device cgroup or an LSM (a
 * container given /dev/kmsg as a bind mount, as the DaemonSet does). */
static void test_open_why(void **state) {
        (void) state;
        assert_non_null(
                strstr(kmsg_open_why(-EPERM, 1), "although CAP_SYSLOG is present: a container's device cgroup"));
        assert_non_null(strstr(kmsg_open_why(-EPERM, 0), "CAP_SYSLOG is needed while kernel.dmesg_restrict=1"));
        assert_string_equal(kmsg_open_why(-EPERM, -1), "");
        assert_string_equal(kmsg_open_why(-ENOENT, 1), "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record),
                cmocka_unit_test(test_real_v1_memcg),
                cmocka_unit_test(test_cgroup2_and_old_kernels),
                cmocka_unit_test(test_hostile_names),
                cmocka_unit_test(test_open_why),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
