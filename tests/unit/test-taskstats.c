/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/cgroupstats.h>
#include <linux/taskstats.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <stdlib.h>
#include <string.h>

#include "probes/taskstats.h"
#include "tests/unit/test-util.h"

#define FAMILY 0x1c

/* Independent descriptions of the newer layouts, written from the upstream header's field order
 * (include/uapi/linux/taskstats.h) so the parser's offset table is checked, not copied. */
struct ts_v15 {
        __u16 version;
        __u32 ac_exitcode;
        __u8 ac_flag, ac_nice;
        __u64 cpu_count __attribute__((aligned(8)));
        __u64 cpu_delay_total, cpu_delay_max, cpu_delay_min;
        __u64 blkio_count, blkio_delay_total, blkio_delay_max, blkio_delay_min;
        __u64 swapin_count, swapin_delay_total, swapin_delay_max, swapin_delay_min;
        __u64 cpu_run_real_total, cpu_run_virtual_total;
        char ac_comm[32];
        __u8 ac_sched __attribute__((aligned(8)));
        __u8 ac_pad[3];
        __u32 ac_uid __attribute__((aligned(8)));
        __u32 ac_gid, ac_pid, ac_ppid, ac_btime;
        __u64 ac_etime __attribute__((aligned(8)));
        __u64 ac_utime, ac_stime, ac_minflt, ac_majflt, coremem, virtmem, hiwater_rss, hiwater_vm;
        __u64 read_char, write_char, read_syscalls, write_syscalls, read_bytes, write_bytes;
        __u64 cancelled_write_bytes, nvcsw, nivcsw, ac_utimescaled, ac_stimescaled, cpu_scaled_run_real_total;
        __u64 freepages_count, freepages_delay_total, freepages_delay_max, freepages_delay_min;
        __u64 thrashing_count, thrashing_delay_total, thrashing_delay_max, thrashing_delay_min;
        __u64 ac_btime64;
        __u64 compact_count, compact_delay_total, compact_delay_max, compact_delay_min;
        __u32 ac_tgid;
        __u64 ac_tgetime __attribute__((aligned(8)));
        __u64 ac_exe_dev, ac_exe_inode;
        __u64 wpcopy_count, wpcopy_delay_total, wpcopy_delay_max, wpcopy_delay_min;
        __u64 irq_count, irq_delay_total, irq_delay_max, irq_delay_min;
};

struct ts_v14_tail {
        __u64 irq_count, irq_delay_total;
};

struct ts_v16 {
        struct taskstats v13; /* the system header is version 13 */
        struct ts_v14_tail v14;
        __u64 max_min[16];
};

struct ts_v17 {
        struct ts_v16 v16;
        struct {
                __s64 tv_sec;
                long tv_nsec;
        } max_ts[8];
};

static void fill_v13(struct taskstats *t, __u16 version) {
        memset(t, 0, sizeof *t);
        t->version = version;
        t->cpu_delay_total = 1000001;
        t->blkio_delay_total = 2000002;
        t->swapin_delay_total = 3000003;
        t->freepages_delay_total = 4000004;
        t->thrashing_delay_total = 5000005;
        t->compact_delay_total = 6000006;
        t->wpcopy_delay_total = 7000007;
        t->cpu_run_real_total = 9000009;
        strcpy(t->ac_comm, "stress-ng-vm");
        t->ac_uid = 1000;
        t->ac_pid = 4321;
        t->ac_ppid = 4000;
        t->ac_tgid = 4300;
        t->ac_btime64 = 1795000000;
}

static void expect_common(const TaskStats *ts, uint16_t version) {
        assert_int_equal(ts->version, version);
        assert_int_equal(ts->delay_ns[TASK_DELAY_CPU], 1000001);
        assert_int_equal(ts->delay_ns[TASK_DELAY_BLKIO], 2000002);
        assert_int_equal(ts->delay_ns[TASK_DELAY_SWAPIN], 3000003);
        assert_int_equal(ts->delay_ns[TASK_DELAY_RECLAIM], 4000004);
        assert_int_equal(ts->delay_ns[TASK_DELAY_THRASHING], 5000005);
        assert_int_equal(ts->delay_ns[TASK_DELAY_COMPACT], 6000006);
        assert_int_equal(ts->delay_ns[TASK_DELAY_WPCOPY], 7000007);
        assert_string_equal(ts->comm, "stress-ng-vm");
        assert_int_equal(ts->uid, 1000);
        assert_int_equal(ts->pid, 4321);
        assert_int_equal(ts->ppid, 4000);
        assert_int_equal(ts->tgid, 4300);
        assert_int_equal(ts->btime_s, 1795000000);
        assert_true(ts->has_cpu_run);
        assert_int_equal(ts->cpu_run_ns, 9000009);
}

/* A TASKSTATS_CMD_NEW reply as the kernel builds it: AGGR_PID { PID, STATS }. */
static struct nl_msg *build_reply(const void *payload, size_t len, int aggr) {
        struct nl_msg *msg = nlmsg_alloc();
        struct nlattr *nest;

        assert_non_null(msg);
        assert_non_null(genlmsg_put(msg, NL_AUTO_PORT, 7, FAMILY, 0, 0, TASKSTATS_CMD_NEW, TASKSTATS_GENL_VERSION));
        nest = nla_nest_start(msg, aggr);
        assert_non_null(nest);
        assert_int_equal(nla_put_u32(msg, TASKSTATS_TYPE_PID, 4321), 0);
        assert_int_equal(nla_put(msg, TASKSTATS_TYPE_STATS, (int) len, payload), 0);
        nla_nest_end(msg, nest);
        return msg;
}

static int parse_msg(struct nl_msg *msg, TaskStats *ts) {
        struct nlmsghdr *nlh = nlmsg_hdr(msg);
        return taskstats_parse_reply(nlh, nlh->nlmsg_len, FAMILY, ts);
}

/* A TGID query's reply (AGGR_TGID { TGID, STATS }) carries the same struct as a thread's: every
 * version must read the same from either. */
static void expect_same_as_tgid(const void *payload, size_t len, const TaskStats *want) {
        struct nl_msg *msg = build_reply(payload, len, TASKSTATS_TYPE_AGGR_TGID);
        TaskStats ts;

        assert_int_equal(parse_msg(msg, &ts), 0);
        assert_int_equal(ts.version, want->version);
        assert_int_equal(ts.pid, want->pid);
        assert_int_equal(ts.tgid, want->tgid);
        assert_int_equal(ts.uid, want->uid);
        assert_int_equal(ts.btime_s, want->btime_s);
        assert_string_equal(ts.comm, want->comm);
        assert_memory_equal(ts.delay_ns, want->delay_ns, sizeof ts.delay_ns);
        assert_int_equal(ts.present, want->present);
        assert_int_equal(ts.cpu_run_ns, want->cpu_run_ns);
        assert_int_equal(ts.has_cpu_run, want->has_cpu_run);
        nlmsg_free(msg);
}

static void test_v13_system_header(void **state) {
        struct taskstats t;
        TaskStats ts;
        struct nl_msg *msg;

        fill_v13(&t, 13);
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t, sizeof t, &ts);
        expect_common(&ts, 13);
        assert_false(ts.present & TASK_DELAY_MASK(TASK_DELAY_IRQ));
        assert_int_equal(ts.present, TASK_DELAY_ALL & ~TASK_DELAY_MASK(TASK_DELAY_IRQ));
        nlmsg_free(msg);
}

static void test_v14(void **state) {
        struct {
                struct taskstats v13;
                struct ts_v14_tail v14;
        } t;
        TaskStats ts;
        struct nl_msg *msg;

        fill_v13(&t.v13, 14);
        t.v14.irq_delay_total = 8000008;
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t, sizeof t, &ts);
        expect_common(&ts, 14);
        assert_int_equal(ts.present, TASK_DELAY_ALL);
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 8000008);
        nlmsg_free(msg);

        /* A v14 payload cut before the irq fields: irq is absent, not garbage. */
        msg = build_reply(&t, sizeof t.v13 + 4, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t, sizeof t.v13 + 4, &ts);
        assert_false(ts.present & TASK_DELAY_MASK(TASK_DELAY_IRQ));
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 0);
        nlmsg_free(msg);
}

static void test_v15_mid_struct_fields(void **state) {
        struct ts_v15 t = {
                .version = 15,
                .cpu_delay_total = 1000001,
                .cpu_delay_max = 99,
                .cpu_delay_min = 98,
                .blkio_delay_total = 2000002,
                .blkio_delay_max = 97,
                .swapin_delay_total = 3000003,
                .freepages_delay_total = 4000004,
                .thrashing_delay_total = 5000005,
                .compact_delay_total = 6000006,
                .wpcopy_delay_total = 7000007,
                .irq_delay_total = 8000008,
                .cpu_run_real_total = 9000009,
                .cpu_run_virtual_total = 96,
                .ac_uid = 1000,
                .ac_pid = 4321,
                .ac_ppid = 4000,
                .ac_tgid = 4300,
                .ac_btime64 = 1795000000,
        };
        TaskStats ts;
        struct nl_msg *msg;

        strcpy(t.ac_comm, "stress-ng-vm");
        assert_int_equal(sizeof t, 560);
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t, sizeof t, &ts);
        expect_common(&ts, 15);
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 8000008);
        assert_int_equal(ts.present, TASK_DELAY_ALL);
        nlmsg_free(msg);
}

static void test_v16_same_size_as_v15(void **state) {
        struct ts_v16 t;
        TaskStats ts;
        struct nl_msg *msg;

        fill_v13(&t.v13, 16);
        t.v14 = (struct ts_v14_tail) { .irq_delay_total = 8000008 };
        for (int i = 0; i < 16; i++)
                t.max_min[i] = 77;
        /* v15 and v16 are both 560 bytes: only the version tells them apart. */
        assert_int_equal(sizeof t, 560);
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t, sizeof t, &ts);
        expect_common(&ts, 16);
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 8000008);
        nlmsg_free(msg);
}

static void test_v17_and_unknown_newer(void **state) {
        struct ts_v17 t;
        struct {
                struct ts_v17 v17;
                __u64 future[8];
        } t18;
        TaskStats ts;
        struct nl_msg *msg;

        memset(&t, 0, sizeof t);
        fill_v13(&t.v16.v13, 17);
        t.v16.v14.irq_delay_total = 8000008;
        t.max_ts[0].tv_sec = 1795000000;
        assert_int_equal(sizeof t, 688);
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_TGID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_common(&ts, 17);
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 8000008);
        nlmsg_free(msg);

        /* A version we do not know yet: read with the append-only layout, no crash. */
        memset(&t18, 0xee, sizeof t18);
        t18.v17 = t;
        t18.v17.v16.v13.version = 18;
        msg = build_reply(&t18, sizeof t18, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(&t18, sizeof t18, &ts);
        expect_common(&ts, 18);
        nlmsg_free(msg);
}

static void test_payload_edges(void **state) {
        uint8_t buf[64] = { 0 };
        TaskStats ts;

        assert_int_equal(taskstats_parse_payload(buf, 31, &ts), -EBADMSG);
        assert_int_equal(taskstats_parse_payload(buf, 32, &ts), -EBADMSG); /* version 0 */
        buf[0] = 3;
        buf[24] = 5;
        assert_int_equal(taskstats_parse_payload(buf, 32, &ts), 0);
        assert_int_equal(ts.present, TASK_DELAY_MASK(TASK_DELAY_CPU));
        assert_int_equal(ts.delay_ns[TASK_DELAY_CPU], 5);
        assert_string_equal(ts.comm, "");
        assert_int_equal(ts.tgid, 0);
        assert_false(ts.has_cpu_run); /* at offset 64: past these 32 bytes */
}

static void test_error_and_malformed_replies(void **state) {
        struct {
                struct nlmsghdr nh;
                struct nlmsgerr err;
        } e = {
                .nh = { .nlmsg_len = sizeof e, .nlmsg_type = NLMSG_ERROR },
                .err = { .error = -ESRCH },
        };
        struct taskstats t;
        TaskStats ts;
        struct nl_msg *msg;
        struct nlmsghdr *nlh;

        assert_int_equal(taskstats_parse_reply(&e.nh, sizeof e, FAMILY, &ts), -ESRCH);
        e.err.error = -EPERM;
        assert_int_equal(taskstats_parse_reply(&e.nh, sizeof e, FAMILY, &ts), -EPERM);
        /* An error message too short to hold the error. */
        e.nh.nlmsg_len = sizeof e.nh + 2;
        assert_int_equal(taskstats_parse_reply(&e.nh, sizeof e, FAMILY, &ts), -EBADMSG);

        fill_v13(&t, 13);
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_PID);
        nlh = nlmsg_hdr(msg);
        assert_int_equal(taskstats_parse_reply(nlh, nlh->nlmsg_len, FAMILY + 1, &ts), -EPROTO);
        /* Received fewer bytes than the header claims. */
        assert_int_equal(taskstats_parse_reply(nlh, nlh->nlmsg_len - 8, FAMILY, &ts), -EBADMSG);
        assert_int_equal(taskstats_parse_reply(nlh, 4, FAMILY, &ts), -EBADMSG);
        nlmsg_free(msg);

        /* A stats attribute too short for a taskstats. */
        msg = build_reply(&t, 16, TASKSTATS_TYPE_AGGR_PID);
        assert_int_equal(parse_msg(msg, &ts), -EBADMSG);
        nlmsg_free(msg);

        /* No AGGR attribute at all. */
        msg = nlmsg_alloc();
        genlmsg_put(msg, NL_AUTO_PORT, 7, FAMILY, 0, 0, TASKSTATS_CMD_NEW, 1);
        nla_put_u32(msg, TASKSTATS_TYPE_PID, 1);
        assert_int_equal(parse_msg(msg, &ts), -EBADMSG);
        nlmsg_free(msg);
}

/* An exit message: AGGR_PID (the thread) and, for the last thread of a multi-threaded process,
 * AGGR_TGID whose payload the kernel never stamps with a version (kernel-facts.md: exit-records). */
static struct nl_msg *build_exit(const void *thread, const void *group, size_t len) {
        struct nl_msg *msg = build_reply(thread, len, TASKSTATS_TYPE_AGGR_PID);
        struct nlattr *nest;

        if (!group)
                return msg;
        nest = nla_nest_start(msg, TASKSTATS_TYPE_AGGR_TGID);
        assert_non_null(nest);
        assert_int_equal(nla_put_u32(msg, TASKSTATS_TYPE_TGID, 4300), 0);
        assert_int_equal(nla_put(msg, TASKSTATS_TYPE_STATS, (int) len, group), 0);
        nla_nest_end(msg, nest);
        return msg;
}

static void parse_exit(struct nl_msg *msg, TaskStats *thread, TaskStats *process, bool *has_process) {
        struct nlmsghdr *nlh = nlmsg_hdr(msg);

        assert_int_equal(taskstats_parse_exit(nlh, nlh->nlmsg_len, FAMILY, thread, process, has_process), 0);
}

/* The group's accumulator as the kernel keeps it: version 0, delays and cpu time only. */
static void expect_group(const TaskStats *p, uint16_t version, uint64_t cpu_delay) {
        assert_int_equal(p->version, version);
        assert_int_equal(p->pid, 4300);
        assert_int_equal(p->tgid, 4300);
        assert_int_equal(p->ppid, 4000);
        assert_int_equal(p->uid, 1000);
        assert_string_equal(p->comm, "stress-ng-vm");
        assert_int_equal(p->btime_s, 0);
        assert_int_equal(p->delay_ns[TASK_DELAY_CPU], cpu_delay);
        assert_int_equal(p->delay_ns[TASK_DELAY_THRASHING], 55);
        assert_int_equal(p->cpu_run_ns, 66);
}

static void test_exit_records_every_layout(void **state) {
        struct taskstats thread13, group13;
        struct ts_v15 thread15 = { .version = 15,
                                   .cpu_delay_total = 1000001,
                                   .ac_uid = 1000,
                                   .ac_pid = 4321,
                                   .ac_ppid = 4000,
                                   .ac_tgid = 4300 },
                      group15 = { .cpu_delay_total = 777, .thrashing_delay_total = 55, .cpu_run_real_total = 66 };
        struct ts_v17 thread17, group17;
        TaskStats t, p;
        bool has;
        struct nl_msg *msg;

        /* Classic layout (13), with and without the group. */
        fill_v13(&thread13, 13);
        memset(&group13, 0, sizeof group13);
        group13.cpu_delay_total = 999999999;
        group13.thrashing_delay_total = 55;
        group13.cpu_run_real_total = 66;
        msg = build_exit(&thread13, &group13, sizeof thread13);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 13);
        assert_true(has);
        expect_group(&p, 13, 999999999);
        nlmsg_free(msg);
        msg = build_exit(&thread13, NULL, sizeof thread13);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 13);
        assert_false(has);
        nlmsg_free(msg);

        /* v15: the group's fields sit where v15 put them. */
        strcpy(thread15.ac_comm, "stress-ng-vm");
        msg = build_exit(&thread15, &group15, sizeof thread15);
        parse_exit(msg, &t, &p, &has);
        assert_int_equal(t.version, 15);
        assert_int_equal(t.ppid, 4000);
        assert_true(has);
        expect_group(&p, 15, 777);
        nlmsg_free(msg);

        /* v17 (v16's fields, timestamps appended). */
        memset(&thread17, 0, sizeof thread17);
        memset(&group17, 0, sizeof group17);
        fill_v13(&thread17.v16.v13, 17);
        group17.v16.v13.version = 0;
        group17.v16.v13.cpu_delay_total = 888;
        group17.v16.v13.thrashing_delay_total = 55;
        group17.v16.v13.cpu_run_real_total = 66;
        msg = build_exit(&thread17, &group17, sizeof thread17);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 17);
        assert_true(has);
        expect_group(&p, 17, 888);
        nlmsg_free(msg);

        /* A message without AGGR_PID is no exit record. */
        msg = build_reply(&thread13, sizeof thread13, TASKSTATS_TYPE_AGGR_TGID);
        struct nlmsghdr *nlh = nlmsg_hdr(msg);
        assert_int_equal(taskstats_parse_exit(nlh, nlh->nlmsg_len, FAMILY, &t, &p, &has), -EBADMSG);
        nlmsg_free(msg);
}

/* A TGID query's reply as the kernel fills it: version and counters only, pid and comm zero. */
static void test_tgid_reply_fields(void **state) {
        struct taskstats t;
        TaskStats ts;
        struct nl_msg *msg;

        memset(&t, 0, sizeof t);
        t.version = 13;
        t.cpu_delay_total = 5;
        t.cpu_run_real_total = 6;
        msg = build_reply(&t, sizeof t, TASKSTATS_TYPE_AGGR_TGID);
        assert_int_equal(parse_msg(msg, &ts), 0);
        assert_int_equal(ts.version, 13);
        assert_int_equal(ts.delay_ns[TASK_DELAY_CPU], 5);
        assert_int_equal(ts.cpu_run_ns, 6);
        assert_int_equal(ts.pid, 0);
        assert_string_equal(ts.comm, "");
        nlmsg_free(msg);
}

static void test_cgroupstats_reply(void **state) {
        struct cgroupstats cs = {
                .nr_sleeping = 5, .nr_running = 2, .nr_stopped = 1, .nr_uninterruptible = 3, .nr_io_wait = 1
        };
        struct nl_msg *msg = nlmsg_alloc();
        struct nlmsghdr *nlh;
        TaskStateCounts c;

        genlmsg_put(msg, NL_AUTO_PORT, 7, FAMILY, 0, 0, CGROUPSTATS_CMD_NEW, 1);
        nla_put(msg, CGROUPSTATS_TYPE_CGROUP_STATS, sizeof cs, &cs);
        nlh = nlmsg_hdr(msg);
        assert_int_equal(cgroupstats_parse_reply(nlh, nlh->nlmsg_len, FAMILY, &c), 0);
        assert_int_equal(c.source, TASK_STATE_SOURCE_CGROUPSTATS);
        assert_int_equal(c.sleeping, 5);
        assert_int_equal(c.running, 2);
        assert_int_equal(c.stopped, 1);
        assert_int_equal(c.uninterruptible, 3);
        assert_int_equal(c.io_wait, 1);
        nlmsg_free(msg);

        assert_int_equal(cgroupstats_parse_payload(&cs, 39, &c), -EBADMSG);
}

static void test_delay_names(void **state) {
        assert_string_equal(task_delay_to_string(TASK_DELAY_RECLAIM), "reclaim");
        assert_string_equal(task_delay_to_string(TASK_DELAY_IRQ), "irq");
        assert_null(task_delay_to_string(_TASK_DELAY_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v13_system_header),           cmocka_unit_test(test_v14),
                cmocka_unit_test(test_v15_mid_struct_fields),       cmocka_unit_test(test_v16_same_size_as_v15),
                cmocka_unit_test(test_v17_and_unknown_newer),       cmocka_unit_test(test_payload_edges),
                cmocka_unit_test(test_error_and_malformed_replies), cmocka_unit_test(test_cgroupstats_reply),
                cmocka_unit_test(test_exit_records_every_layout),   cmocka_unit_test(test_delay_names),
                cmocka_unit_test(test_tgid_reply_fields),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
