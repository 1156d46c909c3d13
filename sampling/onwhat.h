/* SPDX-License-Identifier: MIT */
/* On what: the limit behind a stall and where the blocked threads wait. At both ends of a sample,
 * the counters of the cgroup that limits the trigger's resource (the trigger's cgroup or its
 * nearest limited ancestor, cgroup2 or its cgroup-v1 twin found through a process's
 * /proc/<pid>/cgroup: probes/limits-find.h); during it, a few looks at the leading processes'
 * threads, the uninterruptible ones grouped by wchan (sampling/blocked.h) with one kernel stack
 * where the agent may read it. Reading failures leave parts null, never fail the sample. Logs
 * nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "probes/diskstats.h"
#include "probes/limits-find.h"
#include "probes/pressure.h"
#include "probes/wchan.h"
#include "sampling/blocked.h"
#include "sampling/snapshot.h"

/* Looks a sample takes at most (its middle and its end), and threads one look reads at most. */
#define ONWHAT_LOOKS_MAX 2
#define ONWHAT_LOOK_THREADS_MAX 512
/* Kernel stacks one look reads at most to tell what a D thread waits for (sampling/waitfor.h). */
#define ONWHAT_LOOK_STACKS_MAX 16

/* io on the node's own per-device counters (probes/diskstats.h): on hosts whose cgroup counters do
 * not see the io (cgroup-v1 blkio without a throttle rule), the devices busy during the sample. */
#define ONWHAT_DISK_BUF (64 * 1024) /* /proc/diskstats of about 500 devices, partitions included */
#define ONWHAT_NODE_DEVICES_MAX 4   /* the busiest devices an incident names */

typedef struct OnWhatDisks {
        bool has_a, has_b;
        usec_t a_us, b_us; /* CLOCK_MONOTONIC of the readings */
        DiskStats a, b;
        char buf[ONWHAT_DISK_BUF];
        bool has_dirty;
        NodeDirty dirty; /* the node's dirty and writeback page cache at the end */
} OnWhatDisks;

typedef struct OnWhat {
        PsiResource resource;
        bool located;
        LimitsLocation loc; /* where the trigger's cgroup and its limit are */
        bool has_a, has_b;
        CpuLimits cpu_a, cpu_b;
        MemoryLimits mem_a, mem_b;
        IoLimits io_a, io_b; /* the trigger's cgroup */
        IoLimits io_max;     /* the io.max rules of the limited cgroup, at the end */
        bool has_io_max;

        BlockedThreadLook *look_threads; /* ONWHAT_LOOKS_MAX * ONWHAT_LOOK_THREADS_MAX */
        OnWhatDisks *disks;              /* io only; in the looks' pages, untouched until an io sample */
        size_t n_look[ONWHAT_LOOKS_MAX];
        size_t n_looks;
        BlockedSummary blocked;
        bool has_blocked;
        bool has_stack;
        WchanStack stack;                    /* of the first blocked thread seen whose stack could be read */
        char stack_wchan[BLOCKED_WCHAN_MAX]; /* its wchan then: the group it belongs to */
        WaitFor stack_wait_for;              /* and what it waited for, the group's other key */
        int stack_error;                     /* why there is no stack (0: there is, or none was needed) */
        int since_error;                     /* the first reason a blocked thread's time could not be told (0: none) */
} OnWhat;

/* The limit's counters at one moment (those of the resource: cpu, memory or io), and for io the
 * node's disks: what a recorder keeps of each entry, so that the "on what" of a recorded window
 * starts where the window starts (sampling/recorder.h). */
typedef struct OnWhatReading {
        bool has_limits;
        CpuLimits cpu;
        MemoryLimits mem;
        IoLimits io;
        bool has_disks;
        usec_t disks_us;  /* CLOCK_MONOTONIC of the disks' reading */
        DiskStats *disks; /* the caller's, io only; NULL: the disks are not read */
} OnWhatReading;

/* Where the limit of res for the cgroup at path ("a/b"; NULL node-wide) is (limits_locate()), as
 * onwhat_begin() locates it. False when there is none to read (node-wide, irq, no controller). */
bool onwhat_locate(const LimitsHierarchy *h, const char *path, PsiResource res, LimitsLocation *ret);

/* Reads the counters of res at loc (NULL: none) into ret, and for io the node's disks into
 * ret->disks when it points somewhere, with buf (ONWHAT_DISK_BUF bytes) to read them into. */
void onwhat_read(const LimitsHierarchy *h, const LimitsLocation *loc, PsiResource res, char *buf, OnWhatReading *ret);

/* Moves w's start (onwhat_begin(), just called) back to rd, an earlier reading at loc: the limits
 * when loc is where w located them (a limit set or lifted since leaves w's own start), the disks
 * when both have them. */
void onwhat_begin_at(OnWhat *w, const LimitsLocation *loc, const OnWhatReading *rd);

/* Locates and reads the limits of res for the cgroup at path ("a/b", relative to the cgroup2
 * mount; NULL node-wide: no limits) into w->*_a, and forgets the looks. irq has no limits
 * (nothing is read). io also reads the node's disks (w->disks), node-wide too. */
void onwhat_begin(OnWhat *w, const LimitsHierarchy *h, const char *path, PsiResource res);

/* One look at the threads of pids[0..n) that s has measured (snapshot_take_threads): their states
 * from /proc, and of those in D the wchan, how long each has been blocked (since it last ran:
 * probes/schedclock.h, which moves the calling thread to each of their cpus for a moment) and what
 * it waits for (sampling/waitfor.h: its wchan and flags, and its stack where they do not tell and
 * stacks may be read, at most ONWHAT_LOOK_STACKS_MAX a look); the kernel stack of the first one
 * whose stack can be read. At most ONWHAT_LOOKS_MAX looks count. */
void onwhat_look(OnWhat *w, int proc_fd, const Snapshot *s, const pid_t *pids, size_t n);

/* The threads of the last look taken (n 0 and NULL when none was). */
const BlockedThreadLook *onwhat_last_look(const OnWhat *w, size_t *n);

/* Reads the limits again (w->*_b) and groups the looks. For io, both also read the node's
 * /proc/diskstats (w->disks) when w has them (onwhat_init()). */
void onwhat_end(OnWhat *w, const LimitsHierarchy *h);

/* "throttled" when the throttled time of the sample covers at least half of the stall (or, the
 * stall unknown, 30% of the sample), else "contention". */
const char *onwhat_cpu_verdict(uint64_t throttled_us, bool has_stall, uint64_t stall_us, uint64_t duration_us);

/* d, the limited cgroup's memory counters' growth over the sample: "limit" when its memory.max
 * events grew (reclaim at the hard limit), else "throttled" when memory.high is set and its high
 * events grew (held at memory.high: the kernel's reclaim and over-high sleeps there count as the
 * cgroup's memory stall but as no task's delay), else "contention". */
const char *onwhat_memory_verdict(const MemoryLimits *d);

/* Allocates w's looks ahead of its samples (onwhat_look() would at its first look otherwise), on
 * a zeroed w. 0 or -ENOMEM. */
int onwhat_init(OnWhat *w);

void onwhat_done(OnWhat *w);
