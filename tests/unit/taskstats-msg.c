/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/taskstats-msg.h"
#include "tests/unit/test-util.h"

void fill_v13(struct taskstats *t, __u16 version) {
        memset(t, 0, sizeof *t);
        t->version = version;
        t->cpu_delay_total = 1000001;
        t->blkio_delay_total = 2000002;
        t->swapin_delay_total = 3000003;
        t->freepages_delay_total = 4000004;
        t->thrashing_delay_total = 5000005;
        t->compact_delay_total = 6000006;
        t->wpcopy_delay_total = 7000007;
        t->cpu_run_real_total = 8000000; /* the tick's sample, never read */
        t->cpu_run_virtual_total = 9000009;
        strcpy(t->ac_comm, "stress-ng-vm");
        t->ac_uid = 1000;
        t->ac_pid = 4321;
        t->ac_ppid = 4000;
        t->ac_tgid = 4300;
        t->ac_btime64 = 1795000000;
        t->hiwater_rss = 123456;
        t->read_bytes = 4096 * 3;
        t->write_bytes = 4096 * 5;
        t->cancelled_write_bytes = 4096;
}

void expect_common(const TaskStats *ts, uint16_t version) {
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
        assert_true(ts->has_hiwater_rss);
        assert_int_equal(ts->hiwater_rss_kib, 123456);
        assert_true(ts->has_io);
        assert_int_equal(ts->read_bytes, 4096 * 3);
        assert_int_equal(ts->write_bytes, 4096 * 5);
        assert_int_equal(ts->cancelled_write_bytes, 4096);
}

void put_aggr(struct nl_msg *msg, int aggr, int id_type, uint32_t id, const void *payload, size_t len) {
        struct nlattr *nest = nla_nest_start(msg, aggr);

        assert_non_null(nest);
        assert_int_equal(nla_put_u32(msg, id_type, id), 0);
        assert_int_equal(nla_put(msg, TASKSTATS_TYPE_STATS, (int) len, payload), 0);
        nla_nest_end(msg, nest);
}

/* A TASKSTATS_CMD_NEW reply as the kernel builds it: AGGR_PID { PID, STATS }. */
struct nl_msg *build_reply(const void *payload, size_t len, int aggr) {
        struct nl_msg *msg = nlmsg_alloc();

        assert_non_null(msg);
        assert_non_null(genlmsg_put(msg, NL_AUTO_PORT, 7, FAMILY, 0, 0, TASKSTATS_CMD_NEW, TASKSTATS_GENL_VERSION));
        put_aggr(msg, aggr, TASKSTATS_TYPE_PID, 4321, payload, len);
        return msg;
}

int parse_msg(struct nl_msg *msg, TaskStats *ts) {
        struct nlmsghdr *nlh = nlmsg_hdr(msg);
        return taskstats_parse_reply(nlh, nlh->nlmsg_len, FAMILY, ts);
}

/* A TGID query's reply (AGGR_TGID { TGID, STATS }) carries the same struct as a thread's: every
 * version must read the same from either. */
void expect_same_as_tgid(const void *payload, size_t len, const TaskStats *want) {
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
        assert_memory_equal(ts.max_ns, want->max_ns, sizeof ts.max_ns);
        assert_int_equal(ts.max_present, want->max_present);
        assert_memory_equal(ts.max_ts_ns, want->max_ts_ns, sizeof ts.max_ts_ns);
        assert_int_equal(ts.max_ts_present, want->max_ts_present);
        assert_int_equal(ts.hiwater_rss_kib, want->hiwater_rss_kib);
        assert_int_equal(ts.write_bytes, want->write_bytes);
        nlmsg_free(msg);
}

void expect_no_maxima(const TaskStats *ts) {
        static const uint64_t zero[_TASK_DELAY_MAX];

        assert_int_equal(ts->max_present, 0);
        assert_int_equal(ts->max_ts_present, 0);
        assert_memory_equal(ts->max_ns, zero, sizeof zero);
        assert_memory_equal(ts->max_ts_ns, zero, sizeof zero);
}

void put_u64(uint8_t *buf, size_t off, uint64_t v) {
        memcpy(buf + off, &v, sizeof v);
}

void put_u16(uint8_t *buf, size_t off, uint16_t v) {
        memcpy(buf + off, &v, sizeof v);
}

TaskStats parse_bytes(const uint8_t *buf, size_t len) {
        struct nl_msg *msg = build_reply(buf, len, TASKSTATS_TYPE_AGGR_PID);
        TaskStats ts;

        assert_int_equal(parse_msg(msg, &ts), 0);
        expect_same_as_tgid(buf, len, &ts);
        nlmsg_free(msg);
        return ts;
}

/* A payload of the given version with every maximum, minimum and timestamp at the offsets of
 * include/uapi/linux/taskstats.h since v16: max of delay d at 432 + 16 d, min at 440 + 16 d, the
 * timestamp (tv_sec, tv_nsec) at 560 + 16 d. Maxima 1000 + d, minima 1, timestamps
 * 1795000000 + d s and 100 + d ns. */
