/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/cgroupstats.h>
#include <linux/genetlink.h>
#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <string.h>

#include "base/macro.h"
#include "base/unaligned.h"
#include "probes/taskstats.h"

/* <linux/taskstats.h> is included for the command and attribute numbers only: struct taskstats is
 * never used, its layout depends on the kernel that sends it, not on the headers we build with. */

const char *task_delay_to_string(TaskDelay d) {
        static const char *const names[_TASK_DELAY_MAX] = {
                [TASK_DELAY_CPU] = "cpu",
                [TASK_DELAY_BLKIO] = "blkio",
                [TASK_DELAY_SWAPIN] = "swapin",
                [TASK_DELAY_RECLAIM] = "reclaim",
                [TASK_DELAY_THRASHING] = "thrashing",
                [TASK_DELAY_COMPACT] = "compact",
                [TASK_DELAY_WPCOPY] = "wpcopy",
                [TASK_DELAY_IRQ] = "irq",
        };
        return d < _TASK_DELAY_MAX ? names[d] : NULL;
}

/* Byte offsets within struct taskstats, per layout, with the version that introduced each field.
 * Offsets follow the x86_64/arm64 ABI of include/uapi/linux/taskstats.h (every u64 8-aligned).
 *
 *   classic: versions 1..14, and 16+ (v16 moved v15's max/min pairs to the end; v17 appended
 *            timestamps after them, so the fields before stay put)
 *   v15:     each *_delay_total followed by *_delay_max and *_delay_min (the ABI break fixed by
 *            "taskstats: fix struct taskstats breaks backward compatibility since version 15",
 *            upstream 0bf2d838de1f)
 *
 * The maxima (kernel-facts.md: delay-maxima): v16 put the pairs *_delay_max, *_delay_min right after
 * irq_delay_total (offset 432, so max of delay d at 432 + 16 d, the struct then 560 bytes); v17
 * ("delayacct: add timestamp of delay max") appended one struct __kernel_timespec (s64 tv_sec, s64
 * tv_nsec: 16 bytes) per delay, *_delay_max_ts at 560 + 16 d, the struct then 688 bytes. Both
 * follow the order of TaskDelay. since 0: the layout does not have the field.
 */
typedef struct TaskstatsField {
        uint16_t since;
        uint16_t offset;
} TaskstatsField;

/* cpu_run: cpu_run_virtual_total, the scheduler's sum_exec_runtime in ns, not cpu_run_real_total
 * (utime + stime, sampled at the tick: kernel-facts.md: cpu-run-time). */
typedef struct TaskstatsLayout {
        TaskstatsField delay[_TASK_DELAY_MAX];
        TaskstatsField max[_TASK_DELAY_MAX];
        TaskstatsField max_ts[_TASK_DELAY_MAX]; /* a struct __kernel_timespec */
        TaskstatsField comm, uid, pid, ppid, btime64, tgid, cpu_run, exit_code;
        TaskstatsField hiwater_rss, read_bytes, write_bytes, cancelled_write_bytes;
} TaskstatsLayout;

static const TaskstatsLayout layout_classic = {
        .delay = {
                [TASK_DELAY_CPU] = { 1, 24 },
                [TASK_DELAY_BLKIO] = { 1, 40 },
                [TASK_DELAY_SWAPIN] = { 1, 56 },
                [TASK_DELAY_RECLAIM] = { 6, 320 },
                [TASK_DELAY_THRASHING] = { 9, 336 },
                [TASK_DELAY_COMPACT] = { 11, 360 },
                [TASK_DELAY_WPCOPY] = { 13, 408 },
                [TASK_DELAY_IRQ] = { 14, 424 },
        },
        .max = {
                [TASK_DELAY_CPU] = { 16, 432 },
                [TASK_DELAY_BLKIO] = { 16, 448 },
                [TASK_DELAY_SWAPIN] = { 16, 464 },
                [TASK_DELAY_RECLAIM] = { 16, 480 },
                [TASK_DELAY_THRASHING] = { 16, 496 },
                [TASK_DELAY_COMPACT] = { 16, 512 },
                [TASK_DELAY_WPCOPY] = { 16, 528 },
                [TASK_DELAY_IRQ] = { 16, 544 },
        },
        .max_ts = {
                [TASK_DELAY_CPU] = { 17, 560 },
                [TASK_DELAY_BLKIO] = { 17, 576 },
                [TASK_DELAY_SWAPIN] = { 17, 592 },
                [TASK_DELAY_RECLAIM] = { 17, 608 },
                [TASK_DELAY_THRASHING] = { 17, 624 },
                [TASK_DELAY_COMPACT] = { 17, 640 },
                [TASK_DELAY_WPCOPY] = { 17, 656 },
                [TASK_DELAY_IRQ] = { 17, 672 },
        },
        .comm = { 2, 80 },
        .uid = { 2, 120 },
        .pid = { 2, 128 },
        .ppid = { 2, 132 },
        .btime64 = { 10, 344 },
        .tgid = { 12, 368 },
        .cpu_run = { 1, 72 },
        .exit_code = { 1, 4 },
        .hiwater_rss = { 2, 200 },
        .read_bytes = { 2, 248 },
        .write_bytes = { 2, 256 },
        .cancelled_write_bytes = { 2, 264 },
};

static const TaskstatsLayout layout_v15 = {
        .delay = {
                [TASK_DELAY_CPU] = { 15, 24 },
                [TASK_DELAY_BLKIO] = { 15, 56 },
                [TASK_DELAY_SWAPIN] = { 15, 88 },
                [TASK_DELAY_RECLAIM] = { 15, 368 },
                [TASK_DELAY_THRASHING] = { 15, 400 },
                [TASK_DELAY_COMPACT] = { 15, 440 },
                [TASK_DELAY_WPCOPY] = { 15, 504 },
                [TASK_DELAY_IRQ] = { 15, 536 },
        },
        /* Each right after its total; v15 had no timestamps. */
        .max = {
                [TASK_DELAY_CPU] = { 15, 32 },
                [TASK_DELAY_BLKIO] = { 15, 64 },
                [TASK_DELAY_SWAPIN] = { 15, 96 },
                [TASK_DELAY_RECLAIM] = { 15, 376 },
                [TASK_DELAY_THRASHING] = { 15, 408 },
                [TASK_DELAY_COMPACT] = { 15, 448 },
                [TASK_DELAY_WPCOPY] = { 15, 512 },
                [TASK_DELAY_IRQ] = { 15, 544 },
        },
        .comm = { 15, 128 },
        .uid = { 15, 168 },
        .pid = { 15, 176 },
        .ppid = { 15, 180 },
        .btime64 = { 15, 424 },
        .tgid = { 15, 464 },
        .cpu_run = { 15, 120 },
        .exit_code = { 15, 4 },
        /* 48 bytes further than classic, like everything from ac_comm to the reclaim delay. */
        .hiwater_rss = { 15, 248 },
        .read_bytes = { 15, 296 },
        .write_bytes = { 15, 304 },
        .cancelled_write_bytes = { 15, 312 },
};

static bool field_present(const TaskstatsField *f, uint16_t version, size_t len, size_t size) {
        return f->since > 0 && version >= f->since && (size_t) f->offset + size <= len;
}

/* A struct __kernel_timespec as ns since the epoch. false for one no clock reading gives (negative,
 * tv_nsec out of range, or past 2554): treated as absent rather than wrapped. */
static bool get_timespec_ns(const uint8_t *p, size_t off, uint64_t *ret) {
        int64_t sec = (int64_t) unaligned_u64(p + off), nsec = (int64_t) unaligned_u64(p + off + 8);

        if (sec < 0 || nsec < 0 || nsec >= 1000000000 || (uint64_t) sec > (UINT64_MAX - nsec) / 1000000000)
                return false;
        *ret = (uint64_t) sec * 1000000000 + (uint64_t) nsec;
        return true;
}

/* version_if_none: the layout to read a payload whose version field is 0 with (0: refuse it). */
static int parse_payload(const void *data, size_t len, uint16_t version_if_none, TaskStats *ret) {
        const uint8_t *p = data;
        const TaskstatsLayout *l;
        TaskStats ts = {};
        uint16_t version;

        if (len < 32)
                return -EBADMSG;
        version = unaligned_u16(p);
        if (version == 0)
                version = version_if_none;
        if (version == 0)
                return -EBADMSG;
        l = version == 15 ? &layout_v15 : &layout_classic;

        ts.version = version;
        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                if (field_present(&l->delay[d], version, len, 8)) {
                        ts.delay_ns[d] = unaligned_u64(p + l->delay[d].offset);
                        ts.present |= TASK_DELAY_MASK(d);
                }
        for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++) {
                if (field_present(&l->max[d], version, len, 8)) {
                        ts.max_ns[d] = unaligned_u64(p + l->max[d].offset);
                        ts.max_present |= TASK_DELAY_MASK(d);
                }
                if (field_present(&l->max_ts[d], version, len, 16) &&
                    get_timespec_ns(p, l->max_ts[d].offset, &ts.max_ts_ns[d]))
                        ts.max_ts_present |= TASK_DELAY_MASK(d);
        }
        if (field_present(&l->comm, version, len, TASKSTATS_COMM_MAX)) {
                memcpy(ts.comm, p + l->comm.offset, TASKSTATS_COMM_MAX);
                ts.comm[TASKSTATS_COMM_MAX] = '\0';
        }
        if (field_present(&l->uid, version, len, 4))
                ts.uid = unaligned_u32(p + l->uid.offset);
        if (field_present(&l->pid, version, len, 4))
                ts.pid = (pid_t) unaligned_u32(p + l->pid.offset);
        if (field_present(&l->ppid, version, len, 4))
                ts.ppid = (pid_t) unaligned_u32(p + l->ppid.offset);
        if (field_present(&l->btime64, version, len, 8))
                ts.btime_s = unaligned_u64(p + l->btime64.offset);
        if (field_present(&l->exit_code, version, len, 4)) {
                ts.exit_code = unaligned_u32(p + l->exit_code.offset);
                ts.has_exit_code = true;
        }
        if (field_present(&l->tgid, version, len, 4))
                ts.tgid = (pid_t) unaligned_u32(p + l->tgid.offset);
        if (field_present(&l->cpu_run, version, len, 8)) {
                ts.cpu_run_ns = unaligned_u64(p + l->cpu_run.offset);
                ts.has_cpu_run = true;
        }
        if (field_present(&l->hiwater_rss, version, len, 8)) {
                ts.hiwater_rss_kib = unaligned_u64(p + l->hiwater_rss.offset);
                ts.has_hiwater_rss = true;
        }
        if (field_present(&l->read_bytes, version, len, 8) && field_present(&l->write_bytes, version, len, 8) &&
            field_present(&l->cancelled_write_bytes, version, len, 8)) {
                ts.read_bytes = unaligned_u64(p + l->read_bytes.offset);
                ts.write_bytes = unaligned_u64(p + l->write_bytes.offset);
                ts.cancelled_write_bytes = unaligned_u64(p + l->cancelled_write_bytes.offset);
                ts.has_io = true;
        }

        *ret = ts;
        return 0;
}

int taskstats_parse_payload(const void *data, size_t len, TaskStats *ret) {
        return parse_payload(data, len, 0, ret);
}

/* Common checks of a generic netlink reply; returns the genl header's attributes via libnl. */
static int reply_check(const struct nlmsghdr *nlh, size_t len, uint16_t family) {
        if (len < sizeof *nlh || nlh->nlmsg_len < sizeof *nlh || nlh->nlmsg_len > len)
                return -EBADMSG;
        if (nlh->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(nlh);

                if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof *e))
                        return -EBADMSG;
                return e->error < 0 ? e->error : -EBADMSG;
        }
        if (nlh->nlmsg_type != family)
                return -EPROTO;
        if (nlh->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN))
                return -EBADMSG;
        return 0;
}

/* The STATS payload of an AGGR_PID or AGGR_TGID nest, and the pid or tgid beside it (0 when
 * absent). 0 or -EBADMSG. */
static int parse_aggr(struct nlattr *aggr, uint16_t version_if_none, TaskStats *ret, pid_t *ret_id) {
        struct nlattr *nested[TASKSTATS_TYPE_MAX + 1];
        struct nlattr *id;
        int r;

        if (nla_parse_nested(nested, TASKSTATS_TYPE_MAX, aggr, NULL) < 0 || !nested[TASKSTATS_TYPE_STATS])
                return -EBADMSG;
        r = parse_payload(nla_data(nested[TASKSTATS_TYPE_STATS]), (size_t) nla_len(nested[TASKSTATS_TYPE_STATS]),
                          version_if_none, ret);
        if (r < 0)
                return r;
        id = nested[TASKSTATS_TYPE_PID] ? nested[TASKSTATS_TYPE_PID] : nested[TASKSTATS_TYPE_TGID];
        *ret_id = id && nla_len(id) >= (int) sizeof(uint32_t) ? (pid_t) nla_get_u32(id) : 0;
        return 0;
}

static int parse_genl(const struct nlmsghdr *nlh, size_t len, uint16_t family, struct nlattr **tb) {
        int r = reply_check(nlh, len, family);

        if (r < 0)
                return r;
        /* libnl's parsers take non-const pointers but do not write through them. */
        if (genlmsg_parse((struct nlmsghdr *) nlh, 0, tb, TASKSTATS_TYPE_MAX, NULL) < 0)
                return -EBADMSG;
        return 0;
}

int taskstats_parse_reply(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStats *ret) {
        struct nlattr *tb[TASKSTATS_TYPE_MAX + 1], *aggr;
        pid_t id;
        int r;

        r = parse_genl(nlh, len, family, tb);
        if (r < 0)
                return r;
        aggr = tb[TASKSTATS_TYPE_AGGR_PID] ? tb[TASKSTATS_TYPE_AGGR_PID] : tb[TASKSTATS_TYPE_AGGR_TGID];
        if (!aggr)
                return -EBADMSG;
        return parse_aggr(aggr, 0, ret, &id);
}

int taskstats_parse_exit(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStats *thread, TaskStats *process,
                         bool *has_process) {
        struct nlattr *tb[TASKSTATS_TYPE_MAX + 1];
        TaskStats t, p;
        pid_t id, tgid;
        int r;

        r = parse_genl(nlh, len, family, tb);
        if (r < 0)
                return r;
        if (!tb[TASKSTATS_TYPE_AGGR_PID])
                return -EBADMSG;
        r = parse_aggr(tb[TASKSTATS_TYPE_AGGR_PID], 0, &t, &id);
        if (r < 0)
                return r;
        if (t.pid == 0)
                t.pid = id;
        *has_process = false;
        if (tb[TASKSTATS_TYPE_AGGR_TGID] && parse_aggr(tb[TASKSTATS_TYPE_AGGR_TGID], t.version, &p, &tgid) == 0 &&
            tgid > 0) {
                p.pid = p.tgid = tgid;
                p.ppid = t.ppid;
                p.uid = t.uid;
                p.btime_s = 0;
                memcpy(p.comm, t.comm, sizeof p.comm);
                *process = p;
                *has_process = true;
        }
        *thread = t;
        return 0;
}

int cgroupstats_parse_reply(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStateCounts *ret) {
        struct nlattr *tb[CGROUPSTATS_TYPE_MAX + 1];
        int r;

        r = reply_check(nlh, len, family);
        if (r < 0)
                return r;
        if (genlmsg_parse((struct nlmsghdr *) nlh, 0, tb, CGROUPSTATS_TYPE_MAX, NULL) < 0 ||
            !tb[CGROUPSTATS_TYPE_CGROUP_STATS])
                return -EBADMSG;
        return cgroupstats_parse_payload(nla_data(tb[CGROUPSTATS_TYPE_CGROUP_STATS]),
                                         (size_t) nla_len(tb[CGROUPSTATS_TYPE_CGROUP_STATS]), ret);
}

TaskstatsSource *taskstats_source_free(TaskstatsSource *s) {
        if (s)
                s->ops->free(s);
        return NULL;
}

/* Measured on 6.18 (struct version 16): a listener of 4 MiB kept 1,820 records of a 3,730-thread
 * process ending and dropped the rest, 2,304 bytes each: a message built with room for two
 * payloads (a thread of a multi-threaded process) in the 2 KiB slab, plus the sk_buff. Every
 * version up to 17 fits that slab; a later one is assumed to take the next
 * (kernel-facts.md: exit-socket-drops). */
size_t taskstats_exit_record_bytes(uint16_t version) {
        return version <= TASKSTATS_VERSION_KNOWN ? 2304 : 4352;
}

size_t taskstats_exit_rcvbuf_bytes(uint64_t threads, unsigned cpus, uint16_t version) {
        const uint64_t min = UINT64_C(4) << 20, max = UINT64_C(64) << 20;
        uint64_t want = (MIN(threads, max) + 256 * (uint64_t) MAX(cpus, 1u)) * taskstats_exit_record_bytes(version);

        return (size_t) MIN(MAX(want, min), max);
}
