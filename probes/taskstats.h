/* SPDX-License-Identifier: MIT */
/* Per-thread delay accounting over the TASKSTATS generic netlink family, and cgroup state counts
 * over CGROUPSTATS. struct taskstats is read through our own layout table keyed on the payload's
 * version and length, never through the system header (kernel-facts.md: taskstats-layout; v15 inserted fields
 * mid-struct, v16 moved them to the end, v17 appended more). The source is an interface so tests can use a fake. Never
 * logs above debug. */
#pragma once

#include <linux/netlink.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/states.h"

typedef enum TaskDelay {
        TASK_DELAY_CPU,
        TASK_DELAY_BLKIO,
        TASK_DELAY_SWAPIN,
        TASK_DELAY_RECLAIM, /* freepages_delay_total */
        TASK_DELAY_THRASHING,
        TASK_DELAY_COMPACT,
        TASK_DELAY_WPCOPY,
        TASK_DELAY_IRQ,
        _TASK_DELAY_MAX,
} TaskDelay;

#define TASK_DELAY_MASK(d) (1u << (d))
#define TASK_DELAY_ALL ((1u << _TASK_DELAY_MAX) - 1)

/* "cpu", "blkio", "swapin", "reclaim", "thrashing", "compact", "wpcopy", "irq" */
const char *task_delay_to_string(TaskDelay d);

#define TASKSTATS_COMM_MAX 32 /* TS_COMM_LEN */

typedef struct TaskStats {
        uint16_t version;
        pid_t pid;  /* ac_pid: the thread id */
        pid_t tgid; /* ac_tgid (v12+), 0 when absent */
        pid_t ppid; /* ac_ppid: the parent process, 0 when absent */
        uid_t uid;
        uint64_t btime_s; /* ac_btime64 (v10+), 0 when absent */
        /* ac_exitcode: the task's exit_code as bacct_add_tsk() copies it (kernel/tsacct.c): the
         * signal that ended it in the low 7 bits (0x80: core dumped), else the status << 8. Only
         * exit records carry it (0 in a query's reply: the task is alive). */
        uint32_t exit_code;
        bool has_exit_code;
        char comm[TASKSTATS_COMM_MAX + 1];
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint32_t present; /* TASK_DELAY_MASK bits of the delays this payload carries */
        /* cpu_run_virtual_total: CPU time used, the scheduler's sum_exec_runtime in ns (a TGID
         * reply: ended threads too); never cpu_run_real_total, which is utime + stime sampled at
         * the tick (kernel-facts.md: cpu-run-time). */
        uint64_t cpu_run_ns;
        bool has_cpu_run;
        /* The longest single delay of each kind (*_delay_max, v15 mid-struct, v16+ at the end), ns.
         * Per thread and over the thread's whole life, never a window's: a TGID reply carries
         * whichever thread the kernel added last, not the process's worst (kernel-facts.md:
         * delay-maxima), so ask per TID for them. 0 with the bit set: no delay of that kind yet. */
        uint64_t max_ns[_TASK_DELAY_MAX];
        uint32_t max_present; /* TASK_DELAY_MASK bits of max_ns this payload carries */
        /* When each maximum happened (*_delay_max_ts, v17+): CLOCK_REALTIME in ns since the epoch,
         * stamped by the kernel's ktime_get_real_ts64() as the maximum was recorded; 0 with the bit
         * set when none was recorded. Same thread as max_ns, so also last-thread-wins by TGID. */
        uint64_t max_ts_ns[_TASK_DELAY_MAX];
        uint32_t max_ts_present; /* TASK_DELAY_MASK bits of max_ts_ns this payload carries */
        /* Per-PID replies and exit records only (xacct_add_tsk() in kernel/tsacct.c): a TGID reply
         * and an AGGR_TGID record leave them 0 although the layout has them (kernel-facts.md:
         * tgid-totals). The high-water mark of the address space's resident set, in KiB (the whole
         * process's: threads share it; an exit record is sent before exit_mm(), so it has it), and
         * the thread's own storage bytes, rounded down to KiB. */
        uint64_t hiwater_rss_kib;
        bool has_hiwater_rss;
        uint64_t read_bytes, write_bytes, cancelled_write_bytes;
        bool has_io;
} TaskStats;

/* Highest struct version whose layout we know; newer versions are read with the v16+ layout,
 * which upstream keeps append-only, and only fields that fit the payload are used. Maxima: v15
 * (mid-struct) and v16+ (at the end); their timestamps: v17+. */
#define TASKSTATS_VERSION_KNOWN 17

/* Parses a struct taskstats payload. Returns 0, or -EBADMSG when the payload is too short to hold
 * even the version and the cpu delay. */
int taskstats_parse_payload(const void *data, size_t len, TaskStats *ret);

/* Parses a whole netlink reply to TASKSTATS_CMD_GET. len is the bytes received. Returns 0; the
 * kernel's error for an NLMSG_ERROR reply (-ESRCH: the task exited; -EPERM: no CAP_NET_ADMIN or not
 * in the host's PID namespace); -EBADMSG for a truncated or malformed reply; -EPROTO for a message
 * of another family. */
int taskstats_parse_reply(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStats *ret);

/* Parses one exit message (TASKSTATS_CMD_NEW, sent unasked to exit listeners): the thread's final
 * counters (AGGR_PID) into thread, and, when the message also carries AGGR_TGID (the last thread of
 * a process that had more than one went), the whole process's final counters into process with
 * *has_process set. The kernel copies that aggregate from a structure it never stamps with a
 * version (kernel-facts.md: exit-records), so it is read with the thread record's layout; pid and
 * tgid are the process's, ppid, uid and comm the last thread's. Errors as taskstats_parse_reply(). */
int taskstats_parse_exit(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStats *thread, TaskStats *process,
                         bool *has_process);

/* Same for a CGROUPSTATS_CMD_GET reply. -EINVAL from the kernel means a cgroup2 directory (kernel-facts.md:
 * cgroupstats). */
int cgroupstats_parse_reply(const struct nlmsghdr *nlh, size_t len, uint16_t family, TaskStateCounts *ret);

typedef struct TaskstatsSource TaskstatsSource;

typedef struct TaskstatsSourceOps {
        /* Stats of one thread: 0, -ESRCH (exited), or -errno. */
        int (*get_tid)(TaskstatsSource *s, pid_t tid, TaskStats *ret);
        /* Stats of a whole process (TASKSTATS_CMD_ATTR_TGID): its live threads summed, plus what
         * the kernel kept of the threads that ended (kernel-facts.md: tgid-totals). Only the
         * version, delays and cpu time are filled: pid, comm and begin time are zero in such a
         * reply. 0, -ESRCH (exited), or -errno. */
        int (*get_tgid)(TaskstatsSource *s, pid_t tgid, TaskStats *ret);
        /* Many queries of one kind (a process's TGID, or a thread's PID when tgid is false), as
         * get_tgid/get_tid would answer them one by one: ret[i] and errs[i] (0, -ESRCH, -errno)
         * for ids[i]. Pipelined where the source can: requests sent together, replies read
         * together. Returns 0, or -errno when the whole batch failed (errs then all set). */
        int (*get_many)(TaskstatsSource *s, bool tgid, const pid_t *ids, size_t n, TaskStats *ret, int *errs);
        /* State counts of the cgroup-v1 directory open at cgroup_fd: 0 or -errno (-EINVAL on v2). */
        int (*cgroupstats)(TaskstatsSource *s, int cgroup_fd, TaskStateCounts *ret);
        void (*free)(TaskstatsSource *s);
} TaskstatsSourceOps;

struct TaskstatsSource {
        const TaskstatsSourceOps *ops;
};

static inline int taskstats_get_tid(TaskstatsSource *s, pid_t tid, TaskStats *ret) {
        return s->ops->get_tid(s, tid, ret);
}

static inline int taskstats_get_tgid(TaskstatsSource *s, pid_t tgid, TaskStats *ret) {
        return s->ops->get_tgid(s, tgid, ret);
}

static inline int taskstats_get_many(TaskstatsSource *s, bool tgid, const pid_t *ids, size_t n, TaskStats *ret,
                                     int *errs) {
        return s->ops->get_many(s, tgid, ids, n, ret, errs);
}

static inline int taskstats_cgroupstats(TaskstatsSource *s, int cgroup_fd, TaskStateCounts *ret) {
        return s->ops->cgroupstats(s, cgroup_fd, ret);
}

TaskstatsSource *taskstats_source_free(TaskstatsSource *s);

/* Exit records: while registered for a cpumask, the kernel sends every exiting task's final
 * taskstats (TASKSTATS_CMD_NEW with AGGR_PID, plus AGGR_TGID when a multi-threaded process's last
 * thread goes) to this socket. Registered for one sample at a time,
 * so it costs nothing while idle. */
typedef struct TaskstatsExitListener TaskstatsExitListener;

/* Registers for exits on cpus (the kernel's cpulist format, e.g. "0-3" from
 * /sys/devices/system/cpu/possible, so that a cpu brought online later is heard too; any length)
 * and reads the kernel's acknowledgement (NLM_F_ACK): 0, or the kernel's refusal (-EINVAL: a cpu
 * outside the possible ones, or not in the initial user and PID namespaces; -EPERM without
 * CAP_NET_ADMIN), or -errno. Records that arrive before the acknowledgement are kept for the
 * first drain. The socket is non-blocking; its fd can be polled. */
int taskstats_exit_listener_new(const char *cpumask, TaskstatsExitListener **ret);
int taskstats_exit_listener_fd(const TaskstatsExitListener *l);

/* Called for every exit record: thread's final counters, and process's when the message carries
 * the whole process's (NULL otherwise; see taskstats_parse_exit()). */
typedef void (*TaskstatsExitFn)(const TaskStats *thread, const TaskStats *process, void *userdata);

/* Reads the records queued now, at most max messages (0: all), and calls cb for each. A full
 * socket buffer (ENOBUFS: the kernel dropped records, and drops every record until the queue is
 * read empty) adds the records it dropped to *lost, from the socket's drop counter
 * (SO_MEMINFO's SK_MEMINFO_DROPS, read again until the queue is empty; kernel-facts.md:
 * exit-socket-drops), and reading goes on. Returns the number of messages read or -errno (a
 * refused registration: the kernel's error). */
int taskstats_exit_listener_drain(TaskstatsExitListener *l, size_t max, TaskstatsExitFn cb, void *userdata,
                                  unsigned *lost);

/* Sizes the socket's receive buffer to hold bytes of records (SO_RCVBUFFORCE, CAP_NET_ADMIN;
 * else SO_RCVBUF within net.core.rmem_max) and returns in *ret_bytes what the kernel gave. 0 or
 * -errno. */
int taskstats_exit_listener_set_rcvbuf(TaskstatsExitListener *l, size_t bytes, size_t *ret_bytes);

/* What one exit record takes of a socket's buffer (its skb's truesize) at most, for a struct of
 * version (a thread of a multi-threaded process: two payloads in one message; kernel-facts.md:
 * exit-socket-drops). */
size_t taskstats_exit_record_bytes(uint16_t version);
/* The receive buffer for a node of threads threads on cpus cpus: room for every thread to end at
 * once, plus a margin per cpu, within [4 MiB, 64 MiB]. */
size_t taskstats_exit_rcvbuf_bytes(uint64_t threads, unsigned cpus, uint16_t version);

/* Deregisters and closes. */
TaskstatsExitListener *taskstats_exit_listener_free(TaskstatsExitListener *l);

/* Opens a generic netlink socket and resolves the TASKSTATS family. Returns 0, -EPROTONOSUPPORT when
 * the kernel has no taskstats, or -errno. Requests fail later with -EPERM without CAP_NET_ADMIN. */
int taskstats_netlink_new(TaskstatsSource **ret);
