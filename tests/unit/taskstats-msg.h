/* SPDX-License-Identifier: MIT */
/* struct taskstats payloads and netlink messages for the taskstats parser's tests: independent
 * descriptions of the kernel's layouts (versions 13 to 17) and the replies and exit messages the
 * kernel sends, built with libnl's own builders. Shared by test-taskstats.c and
 * test-taskstats-exits.c. */
#pragma once

#include <linux/taskstats.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/taskstats.h"

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

/* A payload of the system header's layout (version 13 fields) stamped with version, and what
 * the parser must read from it. */
void fill_v13(struct taskstats *t, __u16 version);
void expect_common(const TaskStats *ts, uint16_t version);
/* Appends aggr { id_type id, STATS payload } to msg, one record as the kernel nests it. */
void put_aggr(struct nl_msg *msg, int aggr, int id_type, uint32_t id, const void *payload, size_t len);
/* A TASKSTATS_CMD_NEW reply as the kernel builds it: aggr { PID, STATS }. */
struct nl_msg *build_reply(const void *payload, size_t len, int aggr);
int parse_msg(struct nl_msg *msg, TaskStats *ts);
void expect_same_as_tgid(const void *payload, size_t len, const TaskStats *want);
void expect_no_maxima(const TaskStats *ts);
void put_u64(uint8_t *buf, size_t off, uint64_t v);
void put_u16(uint8_t *buf, size_t off, uint16_t v);
/* Parses buf as an AGGR_PID reply (and checks an AGGR_TGID one reads the same). */
TaskStats parse_bytes(const uint8_t *buf, size_t len);

TaskStats parse_bytes(const uint8_t *buf, size_t len);
