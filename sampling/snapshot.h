/* SPDX-License-Identifier: MIT */
/* One snapshot of a cgroup subtree (or the whole host): every thread's taskstats delays, the
 * cgroup's pressure, and optionally its task states. Buffers live in the Snapshot and are reused
 * from one sample to the next. Logs nothing; the caller reports errors and counts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/timeutil.h"
#include "probes/cgtree.h"
#include "probes/states.h"
#include "probes/sysroot.h"
#include "probes/taskstats.h"
#include "probes/tasks.h"
#include "probes/pressure.h"

/* Above this many threads, states are read from an evenly spaced sample of this many and scaled:
 * a /proc/<tid>/task/<tid>/stat read costs about twice a taskstats round trip (9 us against 5 us
 * on a small VM), so reading every thread's would triple the cost of a large snapshot. */
#define SAMPLE_STATES_MAX 256

/* Pressure is read for every resource (irq too, for the stall growth of irq triggers); incidents
 * report cpu, memory and io. Indexed by PsiResource. */
#define SAMPLE_PRESSURE_RESOURCES _PSI_RESOURCE_MAX

typedef struct ThreadDelays {
        pid_t tid, tgid;
        uint64_t btime_s;
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint32_t present;
        char comm[TASKSTATS_COMM_MAX + 1];
} ThreadDelays;

typedef struct Snapshot {
        ThreadDelays *threads; /* sorted by tid */
        size_t n, cap;
        TidList tids; /* scratch: the listing */
        usec_t mono_us, real_us;
        unsigned listed;            /* threads listed, the agent's own excluded */
        unsigned exited;            /* listed, then gone before taskstats answered (ESRCH) */
        unsigned errors;            /* other failures: listing, taskstats, parse */
        int first_error;            /* the first of those, for one log line */
        uint16_t taskstats_version; /* 0: no reply */
        bool has_states;
        TaskStateCounts states;
        bool has_pressure[SAMPLE_PRESSURE_RESOURCES];
        PressureStats pressure[SAMPLE_PRESSURE_RESOURCES];
        bool has_cgroups;
        CgroupTotals cgroups;       /* one resource's totals of every descendant cgroup */
        bool has_exit_listener;     /* exit records were listened for during the sample */
        unsigned exit_records;      /* threads whose final counters came from an exit record */
        unsigned lost_exit_records; /* ENOBUFS: records the kernel dropped */
} Snapshot;

/* Exit records gathered while a sample runs (taskstats_exit_listener_drain), reused. */
typedef struct ExitRecords {
        ThreadDelays *items;
        size_t n, cap;
        unsigned lost;
} ExitRecords;

/* Keeps one record (the thread's final counters). 0 or -ENOMEM. */
int exit_records_add(ExitRecords *e, const TaskStats *ts);
/* The same as a taskstats_exit_listener_drain() callback (userdata: the ExitRecords); a record
 * that cannot be kept counts as lost. */
void exit_records_collect(const TaskStats *ts, void *userdata);
void exit_records_clear(ExitRecords *e);
void exit_records_done(ExitRecords *e);

/* Puts into b the final counters of the threads of a that exited during the sample (same tid,
 * same begin time, no longer in b), so their delay is not lost. Records of other tasks (the
 * listener hears the whole host) are ignored, and so are threads born and gone within the
 * sample: an exit record does not say which cgroup the thread was in. Sets b's exit counters.
 * 0 or -ENOMEM. */
int snapshot_merge_exits(Snapshot *b, const Snapshot *a, const ExitRecords *e);

typedef struct SampleScope {
        const Sysroot *sysroot;
        TaskstatsSource *taskstats; /* NULL: no taskstats (no CAP_NET_ADMIN); threads are listed only */
        int cgroup_fd;              /* the cgroup's directory, or -1 for the whole host */
        pid_t exclude_tgid;         /* the agent itself; 0 for none */
        pid_t pid;                  /* > 0: only this process's threads (cgroup_fd is then ignored) */
        bool walk_cgroups;          /* also read cgroups_resource's totals of every descendant cgroup */
        PsiResource cgroups_resource;
} SampleScope;

/* Takes a snapshot into s (reusing its buffers). Failures of single threads are counted, not
 * returned. Returns 0, or -errno when the cgroup could not be listed at all (-ENOENT/-ENODEV: the
 * cgroup is gone) or memory ran out. */
int snapshot_take(Snapshot *s, const SampleScope *scope, bool count_states);

/* Allocates s's buffers for n threads (and a quarter more) ahead of a sample, so the sample
 * itself allocates nothing unless the cgroup grew past that. 0 or -ENOMEM. */
int snapshot_reserve(Snapshot *s, size_t n);

/* Reads only the pressure files into s (used at the end of a sample for stall growth). */
void snapshot_read_pressure(Snapshot *s, const SampleScope *scope);

const ThreadDelays *snapshot_find(const Snapshot *s, pid_t tid);
void snapshot_done(Snapshot *s);
