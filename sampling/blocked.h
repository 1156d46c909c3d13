/* SPDX-License-Identifier: MIT */
/* The "blocked" part of an incident ("on what"): from a few looks at a cgroup's threads (state and
 * wchan, read with probes/procfs.h and probes/wchan.h), the threads in uninterruptible sleep (D)
 * grouped by where they wait in the kernel and what for (sampling/waitfor.h), most-seen first. Pure: no I/O, no
 * logging; the only allocation is scratch space freed before returning. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/procfs.h"
#include "probes/wchan.h"
#include "sampling/waitfor.h"

#define BLOCKED_GROUPS_MAX 8            /* wchans listed; the rest are summed in other_seen */
#define BLOCKED_THREADS_PER_GROUP_MAX 8 /* threads listed per wchan; all are counted */
#define BLOCKED_WCHAN_MAX WCHAN_SYMBOL_MAX

/* One thread as one look saw it. */
typedef struct BlockedThreadLook {
        pid_t pid, tid;
        char comm[PROC_COMM_MAX];      /* NUL-terminated */
        char state;                    /* the state letter of /proc/<pid>/task/<tid>/stat; 'D' counts */
        char wchan[BLOCKED_WCHAN_MAX]; /* "" when the kernel said "0" (wchan_read() returned 0:
                                        * no ptrace access, or running again) or it was not read */
        int64_t blocked_ns;            /* in D: how long it has not run (probes/schedclock.h); -1 when
                                        * not known */
        WaitFor wait_for;              /* in D: what it waits for (sampling/waitfor.h) */
} BlockedThreadLook;

typedef struct BlockedLook {
        const BlockedThreadLook *threads;
        size_t n_threads;
} BlockedLook;

typedef struct BlockedThread {
        pid_t pid, tid;
        char comm[PROC_COMM_MAX]; /* as the last look that saw it in D had it */
        uint64_t seen;            /* looks that saw it in D at this wchan */
        int64_t blocked_ns;       /* the longest a look found it blocked; -1 when no look knew */
} BlockedThread;

typedef struct BlockedGroup {
        char wchan[BLOCKED_WCHAN_MAX]; /* "" groups the D threads whose wchan was unknown */
        WaitFor wait_for;              /* a wchan's threads that wait for different things are two groups */
        uint64_t seen;                 /* D threads here, summed over the looks */
        size_t n_threads_total;        /* distinct threads (pid, tid) seen here */
        size_t n_threads;
        BlockedThread threads[BLOCKED_THREADS_PER_GROUP_MAX]; /* most seen first, then by pid, tid */
} BlockedGroup;

typedef struct BlockedSummary {
        size_t n_looks;
        uint64_t seen;         /* every D sighting, listed groups or not */
        size_t n_groups_total; /* distinct wchans and what they wait for */
        size_t n_groups;
        BlockedGroup groups[BLOCKED_GROUPS_MAX]; /* seen descending, then wchan ascending, then wait_for */
        uint64_t other_seen;                     /* sightings in the groups past BLOCKED_GROUPS_MAX */
} BlockedSummary;

/* Groups the D-state threads of looks[0..n_looks) by wchan and wait_for. A thread listed twice in one look
 * counts twice. 0, or -ENOMEM (ret untouched). */
int blocked_group(const BlockedLook *looks, size_t n_looks, BlockedSummary *ret);
