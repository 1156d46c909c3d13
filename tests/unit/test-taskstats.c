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

/* v16: *_delay_max, *_delay_min per delay, in TaskDelay order (cpu, blkio, swapin, freepages,
 * thrashing, compact, wpcopy, irq), after irq_delay_total. */
struct ts_v16 {
        struct taskstats v13; /* the system header is version 13 */
        struct ts_v14_tail v14;
        __u64 max_min[16];
};

/* v17: one struct __kernel_timespec (__kernel_time64_t tv_sec; long long tv_nsec) per delay, same
 * order, when each maximum was recorded. */
struct ts_v17 {
        struct ts_v16 v16;
        struct {
                __s64 tv_sec;
                __s64 tv_nsec;
        } max_ts[8];
};

/* The offsets the parser's table must agree with, counted by hand from the header (x86_64: every
 * __u64 8-aligned). */
_Static_assert(offsetof(struct ts_v15, cpu_delay_max) == 32, "v15 cpu max");
_Static_assert(offsetof(struct ts_v15, blkio_delay_max) == 64, "v15 blkio max");
_Static_assert(offsetof(struct ts_v15, swapin_delay_max) == 96, "v15 swapin max");
_Static_assert(offsetof(struct ts_v15, freepages_delay_max) == 376, "v15 reclaim max");
_Static_assert(offsetof(struct ts_v15, thrashing_delay_max) == 408, "v15 thrashing max");
_Static_assert(offsetof(struct ts_v15, compact_delay_max) == 448, "v15 compact max");
_Static_assert(offsetof(struct ts_v15, wpcopy_delay_max) == 512, "v15 wpcopy max");
_Static_assert(offsetof(struct ts_v15, irq_delay_max) == 544, "v15 irq max");
_Static_assert(offsetof(struct ts_v16, max_min) == 432, "v16 cpu max");
_Static_assert(offsetof(struct ts_v17, max_ts) == 560, "v17 cpu max timestamp");
_Static_assert(sizeof(struct ts_v17) == 688, "v17 size");

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
        assert_memory_equal(ts.max_ns, want->max_ns, sizeof ts.max_ns);
        assert_int_equal(ts.max_present, want->max_present);
        assert_memory_equal(ts.max_ts_ns, want->max_ts_ns, sizeof ts.max_ts_ns);
        assert_int_equal(ts.max_ts_present, want->max_ts_present);
        nlmsg_free(msg);
}

static void expect_no_maxima(const TaskStats *ts) {
        static const uint64_t zero[_TASK_DELAY_MAX];

        assert_int_equal(ts->max_present, 0);
        assert_int_equal(ts->max_ts_present, 0);
        assert_memory_equal(ts->max_ns, zero, sizeof zero);
        assert_memory_equal(ts->max_ts_ns, zero, sizeof zero);
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

static void put_u64(uint8_t *buf, size_t off, uint64_t v) {
        memcpy(buf + off, &v, sizeof v);
}

static void put_u16(uint8_t *buf, size_t off, uint16_t v) {
        memcpy(buf + off, &v, sizeof v);
}

static TaskStats parse_bytes(const uint8_t *buf, size_t len) {
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
static void fill_maxima(uint8_t *buf, size_t size, uint16_t version) {
        memset(buf, 0, size);
        put_u16(buf, 0, version);
        put_u64(buf, 24, 1000001); /* cpu_delay_total */
        for (size_t d = 0; d < _TASK_DELAY_MAX; d++) {
                put_u64(buf, 432 + 16 * d, 1000 + d);
                put_u64(buf, 440 + 16 * d, 1);
                if (size >= 688) {
                        put_u64(buf, 560 + 16 * d, 1795000000 + d);
                        put_u64(buf, 568 + 16 * d, 100 + d);
                }
        }
}

static void expect_maxima(const TaskStats *ts, uint32_t mask) {
        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                assert_int_equal(ts->max_ns[d], mask & TASK_DELAY_MASK(d) ? 1000 + d : 0);
        assert_int_equal(ts->max_present, mask);
}

static void expect_max_ts(const TaskStats *ts, uint32_t mask) {
        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                assert_int_equal(ts->max_ts_ns[d],
                                 mask & TASK_DELAY_MASK(d) ? (1795000000 + d) * 1000000000ull + 100 + d : 0);
        assert_int_equal(ts->max_ts_present, mask);
}

static void test_maxima_v15(void **state) {
        struct ts_v15 t = {
                .version = 15,
                .cpu_delay_total = 1000001,
                .cpu_delay_max = 1000,
                .cpu_delay_min = 1,
                .blkio_delay_max = 1001,
                .blkio_delay_min = 1,
                .swapin_delay_max = 1002,
                .freepages_delay_max = 1003,
                .thrashing_delay_max = 1004,
                .compact_delay_max = 1005,
                .wpcopy_delay_max = 1006,
                .irq_delay_total = 8000008,
                .irq_delay_max = 1007,
                .irq_delay_min = 1,
        };
        TaskStats ts;

        ts = parse_bytes((const uint8_t *) &t, sizeof t);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, 0); /* v15 had no timestamps */
        assert_int_equal(ts.delay_ns[TASK_DELAY_IRQ], 8000008);

        /* Cut inside irq_delay_max: the irq maximum is absent, its total (before it) is not. */
        ts = parse_bytes((const uint8_t *) &t, offsetof(struct ts_v15, irq_delay_max) + 7);
        expect_maxima(&ts, TASK_DELAY_ALL & ~TASK_DELAY_MASK(TASK_DELAY_IRQ));
        assert_true(ts.present & TASK_DELAY_MASK(TASK_DELAY_IRQ));

        /* Cut right after cpu_delay_max: only the cpu maximum. */
        ts = parse_bytes((const uint8_t *) &t, offsetof(struct ts_v15, cpu_delay_min));
        expect_maxima(&ts, TASK_DELAY_MASK(TASK_DELAY_CPU));
}

static void test_maxima_v16(void **state) {
        uint8_t buf[688];
        TaskStats ts;

        fill_maxima(buf, 560, 16);
        ts = parse_bytes(buf, 560);
        assert_int_equal(ts.delay_ns[TASK_DELAY_CPU], 1000001);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, 0);

        /* The v14 size: no maxima. 8 bytes more: the cpu one only. */
        ts = parse_bytes(buf, 432);
        expect_maxima(&ts, 0);
        ts = parse_bytes(buf, 440);
        expect_maxima(&ts, TASK_DELAY_MASK(TASK_DELAY_CPU));
        /* irq's max ends at 552: its min does not matter. */
        ts = parse_bytes(buf, 552);
        expect_maxima(&ts, TASK_DELAY_ALL);

        /* A v16 payload padded to the v17 size still has no timestamps: the version decides. */
        fill_maxima(buf, sizeof buf, 16);
        ts = parse_bytes(buf, sizeof buf);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, 0);

        /* Nor does a v14 payload of the v16 size carry maxima. */
        fill_maxima(buf, 560, 14);
        ts = parse_bytes(buf, 560);
        expect_maxima(&ts, 0);
}

static void test_maxima_v17(void **state) {
        uint8_t buf[688 + 64];
        TaskStats ts;

        fill_maxima(buf, 688, 17);
        ts = parse_bytes(buf, 688);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, TASK_DELAY_ALL);

        /* Cut to the v16 size: maxima, no timestamps; a timestamp needs all 16 bytes. */
        ts = parse_bytes(buf, 560);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, 0);
        ts = parse_bytes(buf, 560 + 15);
        expect_max_ts(&ts, 0);
        ts = parse_bytes(buf, 560 + 16);
        expect_max_ts(&ts, TASK_DELAY_MASK(TASK_DELAY_CPU));
        ts = parse_bytes(buf, 687);
        expect_max_ts(&ts, TASK_DELAY_ALL & ~TASK_DELAY_MASK(TASK_DELAY_IRQ));

        /* No maximum recorded yet: a zero timestamp, present. */
        put_u64(buf, 560, 0);
        put_u64(buf, 568, 0);
        ts = parse_bytes(buf, 688);
        assert_true(ts.max_ts_present & TASK_DELAY_MASK(TASK_DELAY_CPU));
        assert_int_equal(ts.max_ts_ns[TASK_DELAY_CPU], 0);

        /* Values no clock gives are absent, not wrapped: tv_nsec out of range, a negative tv_sec,
         * seconds past what ns fit in 64 bits. */
        put_u64(buf, 568, 1000000000);
        put_u64(buf, 576 + 0, UINT64_MAX); /* blkio tv_sec = -1 */
        put_u64(buf, 592, UINT64_MAX / 1000000000 + 1);
        ts = parse_bytes(buf, 688);
        assert_int_equal(ts.max_ts_present,
                         TASK_DELAY_ALL & ~(TASK_DELAY_MASK(TASK_DELAY_CPU) | TASK_DELAY_MASK(TASK_DELAY_BLKIO) |
                                            TASK_DELAY_MASK(TASK_DELAY_SWAPIN)));
        assert_int_equal(ts.max_ts_ns[TASK_DELAY_CPU], 0);
        assert_int_equal(ts.max_ts_ns[TASK_DELAY_BLKIO], 0);
        assert_int_equal(ts.max_ts_ns[TASK_DELAY_SWAPIN], 0);
        assert_int_equal(ts.max_ts_ns[TASK_DELAY_RECLAIM], (1795000000 + 3) * 1000000000ull + 103);

        /* A newer version: read at the v17 offsets, whatever follows. */
        fill_maxima(buf, 688, 18);
        memset(buf + 688, 0xee, 64);
        ts = parse_bytes(buf, sizeof buf);
        expect_maxima(&ts, TASK_DELAY_ALL);
        expect_max_ts(&ts, TASK_DELAY_ALL);
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
                                   .ac_tgid = 4300,
                                   .ac_exitcode = 15,
                                   .hiwater_rss = 777 },
                      group15 = { .cpu_delay_total = 777,
                                  .cpu_delay_max = 4343,
                                  .thrashing_delay_total = 55,
                                  .cpu_run_real_total = 66 };
        struct ts_v17 thread17, group17;
        TaskStats t, p;
        bool has;
        struct nl_msg *msg;

        /* Classic layout (13), with and without the group. */
        fill_v13(&thread13, 13);
        /* Killed by SIGKILL (bacct_add_tsk() copies tsk->exit_code), with a 12 MiB peak. */
        thread13.ac_exitcode = 9;
        thread13.hiwater_rss = 12288;
        memset(&group13, 0, sizeof group13);
        group13.cpu_delay_total = 999999999;
        group13.thrashing_delay_total = 55;
        group13.cpu_run_real_total = 66;
        msg = build_exit(&thread13, &group13, sizeof thread13);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 13);
        assert_true(t.has_exit_code);
        assert_int_equal(t.exit_code, 9);
        assert_true(t.has_hiwater_rss);
        assert_int_equal(t.hiwater_rss_kib, 12288);
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
        assert_int_equal(t.exit_code, 15);
        assert_int_equal(t.hiwater_rss_kib, 777);
        assert_true(has);
        expect_group(&p, 15, 777);
        /* The group's maximum is the last folded thread's (fill_tgid_exit()), at v15's offset. */
        assert_int_equal(p.max_ns[TASK_DELAY_CPU], 4343);
        nlmsg_free(msg);

        /* v17 (v16's fields, timestamps appended). */
        memset(&thread17, 0, sizeof thread17);
        memset(&group17, 0, sizeof group17);
        fill_v13(&thread17.v16.v13, 17);
        group17.v16.v13.version = 0;
        group17.v16.v13.cpu_delay_total = 888;
        group17.v16.v13.thrashing_delay_total = 55;
        group17.v16.v13.cpu_run_real_total = 66;
        group17.v16.max_min[0] = 4242;
        group17.max_ts[0].tv_sec = 7;
        msg = build_exit(&thread17, &group17, sizeof thread17);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 17);
        assert_true(has);
        expect_group(&p, 17, 888);
        assert_int_equal(p.max_ns[TASK_DELAY_CPU], 4242);
        assert_int_equal(p.max_ts_ns[TASK_DELAY_CPU], 7000000000ull);
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
                cmocka_unit_test(test_v13_system_header),
                cmocka_unit_test(test_v14),
                cmocka_unit_test(test_v15_mid_struct_fields),
                cmocka_unit_test(test_v16_same_size_as_v15),
                cmocka_unit_test(test_v17_and_unknown_newer),
                cmocka_unit_test(test_payload_edges),
                cmocka_unit_test(test_error_and_malformed_replies),
                cmocka_unit_test(test_cgroupstats_reply),
                cmocka_unit_test(test_exit_records_every_layout),
                cmocka_unit_test(test_delay_names),
                cmocka_unit_test(test_tgid_reply_fields),
                cmocka_unit_test(test_maxima_v15),
                cmocka_unit_test(test_maxima_v16),
                cmocka_unit_test(test_maxima_v17),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
