/* SPDX-License-Identifier: MIT */
/* The taskstats parser on per-delay maxima and their timestamps (versions 15 to 17) and on exit
 * messages of every layout. */
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

/* An exit message: AGGR_PID (the thread) and, for the last thread of a multi-threaded process,
 * AGGR_TGID whose payload the kernel never stamps with a version (kernel-facts.md: exit-records). */
static struct nl_msg *build_exit(const void *thread, const void *group, size_t len) {
        struct nl_msg *msg = build_reply(thread, len, TASKSTATS_TYPE_AGGR_PID);

        if (group)
                put_aggr(msg, TASKSTATS_TYPE_AGGR_TGID, TASKSTATS_TYPE_TGID, 4300, group, len);
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
                                  .cpu_run_real_total = 64,
                                  .cpu_run_virtual_total = 66 };
        struct ts_v17 thread17, group17;
        TaskStats t, p;
        bool has;
        struct nl_msg *msg;

        /* Classic layout (13), with and without the group. */
        fill_v13(&thread13, 13);
        /* Killed by SIGKILL (bacct_add_tsk() copies tsk->exit_code); its peak rss is fill_v13()'s. */
        thread13.ac_exitcode = 9;
        memset(&group13, 0, sizeof group13);
        group13.cpu_delay_total = 999999999;
        group13.thrashing_delay_total = 55;
        group13.cpu_run_virtual_total = 66;
        msg = build_exit(&thread13, &group13, sizeof thread13);
        parse_exit(msg, &t, &p, &has);
        expect_common(&t, 13);
        assert_true(t.has_exit_code);
        assert_int_equal(t.exit_code, 9);
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
        group17.v16.v13.cpu_run_virtual_total = 66;
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_records_every_layout),
                cmocka_unit_test(test_maxima_v15),
                cmocka_unit_test(test_maxima_v16),
                cmocka_unit_test(test_maxima_v17),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
