/* SPDX-License-Identifier: MIT */
/* What the prekill hook (agent/prekillhook.h) measures of a cgroup systemd-oomd is about to kill: every
 * process of its subtree with its memory (/proc/<pid>/status) and its delays read twice from
 * taskstats (their growth between the readings, and their totals), and the cgroup's memory
 * (memory.stat, memory.events, limits: cgroup2, or the v1 memcg on a hybrid host) and memory
 * pressure. In steps bounded by a deadline, so that the loop can answer in time and finish later.
 * Reads the kernel through the sysroot; never logs; knows no socket. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timeutil.h"
#include "probes/limits-find.h"
#include "probes/limits.h"
#include "probes/pressure.h"
#include "probes/procfs.h"
#include "probes/sysroot.h"
#include "probes/taskstats.h"

#define PREKILL_CGROUP_MAX 4096
#define PREKILL_CMDLINE_MAX 256
/* Processes measured at most; the subtree's count is kept beyond it. */
#define PREKILL_PROCS_MAX 4096

typedef struct PrekillProcess {
        pid_t pid;
        char comm[TASKSTATS_COMM_MAX + 1];
        char cmdline[PREKILL_CMDLINE_MAX];
        size_t cmdline_len;
        bool has_cmdline, has_memory;
        ProcMemory memory;
        /* taskstats: the totals at the first reading, and at the second (their growth is the
         * delay over the window); present: the delays the kernel gave both times. */
        uint64_t first_ns[_TASK_DELAY_MAX], last_ns[_TASK_DELAY_MAX];
        uint32_t present;
        bool has_first, has_last;
} PrekillProcess;

typedef struct PrekillMeasure {
        char cgroup[PREKILL_CGROUP_MAX]; /* as systemd-oomd named it, "/a/b" */
        usec_t notified_mono_us, notified_real_us;
        usec_t first_mono_us, last_mono_us; /* when each taskstats reading ended (0: not yet) */
        usec_t replied_mono_us;             /* when the agent answered (0: not yet, or never) */
        bool gone;                          /* the cgroup was not there */
        bool has_memory, has_pressure;
        MemoryLimits memory;
        PressureStats pressure;   /* memory.pressure */
        uint64_t processes_total; /* in the subtree when listed */
        PrekillProcess *procs;    /* those measured (at most PREKILL_PROCS_MAX) */
        size_t n_procs, next_first, next_last;
} PrekillMeasure;

/* A measure of cgroup ("/a/b", relative to the cgroup2 mount) notified at notified_mono_us. 0 or
 * -ENOMEM. */
int prekill_measure_new(const char *cgroup, usec_t notified_mono_us, PrekillMeasure **ret);
PrekillMeasure *prekill_measure_free(PrekillMeasure *m);

/* Lists the subtree's processes and reads the cgroup's memory files and pressure (h: where memory
 * limits are read, NULL for cgroup2 only). Sets m->gone when the cgroup is not there. 0 or -ENOMEM. */
int prekill_measure_cgroup(PrekillMeasure *m, const Sysroot *s, const LimitsHierarchy *h);

/* The first reading: each process's memory, comm, command line and delay totals, from where the
 * last call stopped, until all are read (true) or deadline (CLOCK_MONOTONIC) has passed (false).
 * ts may be NULL (no delays). A process that ended is dropped. */
bool prekill_measure_first(PrekillMeasure *m, const Sysroot *s, TaskstatsSource *ts, usec_t deadline);
/* The second reading of the delays, of the processes the first read, the same way. */
bool prekill_measure_last(PrekillMeasure *m, TaskstatsSource *ts, usec_t deadline);

/* The processes largest first (resident set, then swap). */
void prekill_measure_rank(PrekillMeasure *m);
