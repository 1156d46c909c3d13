/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/cgroupstats.h>
#include <linux/taskstats.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "probes/taskstats.h"
#include "tests/unit/taskstats-msg.h"
#include "tests/unit/test-util.h"

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
        expect_no_maxima(&ts);
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
        expect_no_maxima(&ts);
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
                .cpu_run_real_total = 8000000,
                .cpu_run_virtual_total = 9000009,
                .ac_uid = 1000,
                .ac_pid = 4321,
                .ac_ppid = 4000,
                .ac_tgid = 4300,
                .ac_btime64 = 1795000000,
                .hiwater_rss = 123456,
                .read_bytes = 4096 * 3,
                .write_bytes = 4096 * 5,
                .cancelled_write_bytes = 4096,
                .write_char = 77, /* beside write_bytes: a shifted read would show it */
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
        assert_false(ts.has_cpu_run); /* at offset 72: past these 32 bytes */
        assert_false(ts.has_hiwater_rss);
        assert_false(ts.has_io);
        expect_no_maxima(&ts);
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

static void test_tgid_reply_fields(void **state) {
        struct taskstats t;
        TaskStats ts;
        struct nl_msg *msg;

        memset(&t, 0, sizeof t);
        t.version = 13;
        t.cpu_delay_total = 5;
        t.cpu_run_real_total = 4;
        t.cpu_run_virtual_total = 6;
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

/* The exit listener's buffer: every thread of the node plus 256 records a cpu, within bounds; a
 * struct newer than we know is taken as larger. */
static void test_exit_rcvbuf(void **state) {
        assert_int_equal(taskstats_exit_record_bytes(16), 2304);
        assert_int_equal(taskstats_exit_record_bytes(17), 2304);
        assert_true(taskstats_exit_record_bytes(18) > 2304);
        assert_int_equal(taskstats_exit_rcvbuf_bytes(100, 2, 16), 4 << 20); /* the floor */
        assert_int_equal(taskstats_exit_rcvbuf_bytes(10000, 2, 16), (10000 + 512) * 2304);
        assert_int_equal(taskstats_exit_rcvbuf_bytes(UINT64_MAX, 4096, 16), 64 << 20); /* the ceiling */
        assert_int_equal(taskstats_exit_rcvbuf_bytes(0, 0, 0), 4 << 20);
        assert_true(taskstats_exit_rcvbuf_bytes(10000, 2, 18) > taskstats_exit_rcvbuf_bytes(10000, 2, 17));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v13_system_header),
                cmocka_unit_test(test_v14),
                cmocka_unit_test(test_v15_mid_struct_fields),
                cmocka_unit_test(test_v16_same_size_as_v15),
                cmocka_unit_test(test_v17_and_unknown_newer),
                cmocka_unit_test(test_payload_edges),
                cmocka_unit_test(test_error_and_malformed_replies),
                cmocka_unit_test(test_cgroupstats_reply),
                cmocka_unit_test(test_delay_names),
                cmocka_unit_test(test_tgid_reply_fields),
                cmocka_unit_test(test_exit_rcvbuf),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
