/* SPDX-License-Identifier: MIT */
/* One snapshot of a cgroup subtree (or the whole host), process first: each process's taskstats
 * totals from one TGID query (threads that already ended included, kernel-facts.md: tgid-totals),
 * the thread count, task states and the cgroup's pressure; and, only for the few processes an
 * incident details, each of their threads. Buffers live in the Snapshot and are reused from one
 * sample to the next. Logs nothing; the caller reports errors and counts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "probes/cgtree.h"
#include "probes/states.h"
#include "probes/sysroot.h"
#include "probes/taskstats.h"
#include "probes/tasks.h"
#include "probes/pressure.h"

/* Above this many threads, states are read from a sample of this many and scaled: a
 * /proc/<tid>/task/<tid>/stat read costs about twice a taskstats round trip (9 us against 5 us on a
 * small VM), so reading every thread's would triple the cost of a large snapshot. */
#define SAMPLE_STATES_MAX 256

/* Pressure is read for every resource (irq too, for the stall growth of irq triggers); incidents
 * report cpu, memory and io. Indexed by PsiResource. */
#define SAMPLE_PRESSURE_RESOURCES _PSI_RESOURCE_MAX

typedef struct ThreadDelays {
        pid_t tid, tgid;
        uint64_t btime_s;
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint32_t present;
        /* The thread's longest single delay of each class over its life (taskstats v16+), and when
         * it ended (v17+, CLOCK_REALTIME ns): kernel-facts.md: delay-maxima. */
        uint32_t max_present, max_ts_present;
        uint64_t max_ns[_TASK_DELAY_MAX];
        uint64_t max_ts_ns[_TASK_DELAY_MAX];
        char comm[TASKSTATS_COMM_MAX + 1];
} ThreadDelays;

typedef enum ProcessOrigin {
        PROCESS_MEASURED, /* listed and asked for by TGID */
        PROCESS_ENDED,    /* measured at the start, ended during the sample: its exit record's final counters */
        PROCESS_SHORT,    /* started and ended inside the sample, placed in the subtree by its parent */
} ProcessOrigin;

typedef struct ProcessDelays {
        pid_t tgid;
        pid_t ppid;  /* from an exit record (ENDED, SHORT); 0 otherwise */
        int64_t uid; /* from an exit record; -1 otherwise */
        uint8_t origin;
        bool born_in_sample; /* began after the snapshot it is compared to (snapshot_mark_born) */
        uint32_t present;
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint64_t cpu_run_ns;
        bool has_cpu_run;
        bool has_io, has_mem;              /* read for a culprit pass (SampleScope.usage) */
        uint64_t read_bytes, write_bytes;  /* /proc/<pid>/io */
        uint64_t rss_bytes, majflt;        /* /proc/<pid>/stat, the whole process */
        uint64_t blkio_max_ns;             /* the reply's blkio maximum (by TGID its last thread's: kernel-facts.md:
                                            * delay-maxima); 0 none. For blkio-unstarted (sampling/rank.h) */
        char comm[TASKSTATS_COMM_MAX + 1]; /* from an exit record; "" otherwise */
} ProcessDelays;

typedef struct Snapshot {
        ProcessDelays *procs; /* sorted by tgid */
        size_t n_procs, cap_procs;
        ThreadDelays *threads; /* the detailed processes' threads (snapshot_take_threads), sorted by tid */
        size_t n, cap;
        TidList pids, tids; /* scratch: the processes listed, the threads of process tids_pid */
        pid_t tids_pid;
        uint32_t *counts; /* scratch: the threads of each listed process */
        size_t cap_counts;
        bool threaded; /* the scope is a threaded cgroup: processes from its threads */
        usec_t mono_us, real_us, boot_us;
        usec_t threads_mono_us;     /* when the threads were read (0: none were) */
        unsigned listed;            /* threads counted (count_tasks), the agent's own excluded */
        unsigned processes;         /* processes listed, the agent excluded */
        unsigned exited;            /* processes listed, then gone before taskstats answered (ESRCH) */
        unsigned errors;            /* other failures: listing, taskstats, parse */
        int first_error;            /* the first of those, for one log line */
        uint16_t taskstats_version; /* 0: no reply */
        bool has_states;
        TaskStateCounts states;
        /* Processes with a thread in uninterruptible sleep (D) when the states were read, the
         * first SNAPSHOT_BLOCKED_MAX seen: a process stuck in a wait that has not ended has no
         * delay yet (delay accounting adds a wait when it ends: kernel-facts.md: delayacct), so
         * the sampler looks at them beside the leaders (sampling/blocked.h). */
        TaskStateBlocked blocked;
        bool has_pressure[SAMPLE_PRESSURE_RESOURCES];
        PressureStats pressure[SAMPLE_PRESSURE_RESOURCES];
        bool has_cgroups;
        CgroupTotals cgroups; /* one resource's totals of every descendant cgroup */

        /* Set on the end snapshot by snapshot_merge_exits() (sampling/exits.h). */
        bool has_exit_listener;     /* exit records were listened for during the sample */
        unsigned exit_records;      /* the subtree's threads that ended during the sample, by their records */
        unsigned lost_exit_records; /* ENOBUFS: records the kernel dropped */
        unsigned ended_unheard;     /* processes of the start that ended with no exit record heard */
        unsigned unattributed;      /* processes that started and ended in the sample, not placed */
        uint64_t unattributed_ns[_TASK_DELAY_MAX];
        uint32_t unattributed_present;
} Snapshot;

/* The blkio maximum of a reply, or of a thread (NULL: none); 0 when it has none. */
static inline uint64_t blkio_max_from(const TaskStats *ts) {
        return ts->max_present & TASK_DELAY_MASK(TASK_DELAY_BLKIO) ? ts->max_ns[TASK_DELAY_BLKIO] : 0;
}

static inline uint64_t thread_blkio_max(const ThreadDelays *t) {
        return t && (t->max_present & TASK_DELAY_MASK(TASK_DELAY_BLKIO)) ? t->max_ns[TASK_DELAY_BLKIO] : 0;
}

/* Whether s's replies carry the per-delay maxima (taskstats v15 on: kernel-facts.md: delay-maxima);
 * a snapshot without any reply is taken to. */
static inline bool snapshot_has_maxima(const Snapshot *s) {
        return s->taskstats_version == 0 || s->taskstats_version >= 15;
}

/* Copies a reply's per-delay maxima and their times into t. */
static inline void thread_maxima_from(ThreadDelays *t, const TaskStats *ts) {
        t->max_present = ts->max_present;
        t->max_ts_present = ts->max_ts_present;
        memcpy(t->max_ns, ts->max_ns, sizeof t->max_ns);
        memcpy(t->max_ts_ns, ts->max_ts_ns, sizeof t->max_ts_ns);
}

/* Appending to a snapshot out of order (the exit records' merge), then sorting it again:
 * lookups need the sorted order. 0 or -ENOMEM. */
int snapshot_append_process(Snapshot *s, const ProcessDelays *p);
int snapshot_append_thread(Snapshot *s, const ThreadDelays *t);
void snapshot_sort(Snapshot *s);

/* Marks the processes of b that a did not have and that began after a was taken (their whole
 * totals belong to the sample; the others moved in, or were missed). Reads each one's start
 * time from /proc: only processes new since a cost a read. */
void snapshot_mark_born(Snapshot *b, const Snapshot *a, int proc_fd);

typedef struct SampleScope {
        const Sysroot *sysroot;
        TaskstatsSource *taskstats; /* NULL: no taskstats (no CAP_NET_ADMIN); tasks are listed only */
        int cgroup_fd;              /* the cgroup's directory, or -1 for the whole host */
        pid_t exclude_tgid;         /* the agent itself; 0 for none */
        pid_t pid;                  /* > 0: only this process (cgroup_fd is then ignored); its threads are detailed */
        bool walk_cgroups;          /* also read cgroups_resource's totals of every descendant cgroup */
        PsiResource cgroups_resource;
        int resource;                       /* what processes are ranked on: a PsiResource or RANK_SCORE_ALL */
        unsigned detail;                    /* processes whose threads are measured for the incident (its top) */
        const struct CulpritScope *culprit; /* also a culprit pass over it (the Sampler); NULL: none */
        struct CulpritPass *pass;           /* with culprit: the owner's pass, shared with other samples of the same
                                             * scope (sampling/sampler.h); NULL: the sample's own */
        const struct Snapshot *reuse;       /* taken just before: its processes are copied, not asked again */
        const TidList *listed; /* the scope's processes, listed just before (a culprit pass's cgroup walk) */
        const struct LimitsHierarchy *limits; /* with limits_cgroup: "on what" (the Sampler) */
        struct OnWhat *onwhat;                /* where "on what" goes, the owner's; NULL: none */
        const char *limits_cgroup;            /* the trigger's cgroup ("a/b"); NULL: no "on what" */
        PsiResource limits_resource;
        int usage; /* PSI_RESOURCE_IO or _MEMORY: also each process's storage bytes or resident
                    * size (a culprit pass); -1 (or cpu: taskstats has it) for none */
        /* The Sampler's result (sampling/result.h): */
        PsiStall stall;          /* with resource a PsiResource: the line the sample is about */
        const char *cgroup_path; /* the cgroup's path ("a/b", "" root), NULL node-wide: names the hot cgroups */
        struct ProcessInfoBuffer *identities; /* the owner's, where reported processes' identities go; NULL: none */
        struct ContainerCache *containers;    /* the owner's, naming their containers; NULL: none named */
        /* On-cpu stacks over the window (sampling/stacks.h) at this rate; 0: none. Of the culprit
         * scope's cgroup when there is one (the node's tasks for a node scope), else the sample's. */
        uint32_t stacks_hz;
} SampleScope;

/* What the owner of samples lends each of them: SampleScope's fields of the same names. */
typedef struct SampleOwner {
        const Sysroot *sysroot;
        TaskstatsSource *taskstats;
        struct ProcessInfoBuffer *identities;
        struct ContainerCache *containers;
} SampleOwner;

/* The scope of a sample of the cgroup cgroup_fd at cgroup_path (-1 and NULL: the node) with what
 * o lends, the calling process left out, its processes ranked on resource and `detail` of them
 * detailed. resource a PsiResource: its totals of every descendant cgroup are read too;
 * RANK_SCORE_ALL: no cgroup's. The rest (pid, stall, culprit, "on what") is the caller's. */
static inline SampleScope sample_scope_make(const SampleOwner *o, int cgroup_fd, const char *cgroup_path, int resource,
                                            unsigned detail) {
        return (SampleScope) {
                .sysroot = o->sysroot,
                .taskstats = o->taskstats,
                .cgroup_fd = cgroup_fd,
                .exclude_tgid = getpid(),
                .walk_cgroups = resource >= 0,
                .cgroups_resource = resource >= 0 ? (PsiResource) resource : PSI_RESOURCE_CPU,
                .resource = resource,
                .detail = detail,
                .cgroup_path = cgroup_path,
                .identities = o->identities,
                .containers = o->containers,
        };
}

/* At most this many threads are measured one by one for the detailed processes of one snapshot
 * (the first process is measured whole whatever its size; the next ones within what is left). */
#define SAMPLE_DETAIL_THREADS_MAX 4096

/* Takes a snapshot into s (reusing its buffers): pressure, the descendant cgroups' totals when
 * asked, the processes (one TGID query each) and, with count_tasks, the thread count and the
 * threads' states (what an incident says of its sample's start; the end snapshot goes without).
 * No thread is measured (snapshot_take_threads). Failures of single processes are counted, not
 * returned. Returns 0, or -errno when the cgroup could not be listed at all (-ENOENT/-ENODEV:
 * the cgroup is gone) or memory ran out. */
int snapshot_take(Snapshot *s, const SampleScope *scope, bool count_tasks);

/* The processes alone (listing and TGID queries), for choosing whose threads to detail; with
 * count_tasks, their thread counts and states too, as snapshot_take() reads them. */
int snapshot_take_processes(Snapshot *s, const SampleScope *scope, bool count_tasks);

/* Measures every thread of the processes pids[0..n) into s->threads (replacing what was there),
 * process after process until SAMPLE_DETAIL_THREADS_MAX threads are reached. A process that has
 * exited is skipped. 0 or -ENOMEM. */
int snapshot_take_threads(Snapshot *s, const SampleScope *scope, const pid_t *pids, size_t n);

/* Allocates s's buffers for n threads in p processes ahead of a sample, so the sample itself
 * allocates nothing unless the cgroup grew past that. 0 or -ENOMEM. */
int snapshot_reserve(Snapshot *s, size_t n, size_t p);

/* Reads only the pressure files into s (used at the end of a sample for stall growth). */
void snapshot_read_pressure(Snapshot *s, const SampleScope *scope);

/* The total of one pressure line (res, stall) that s read. False when it read none (res not a
 * PsiResource, the file unreadable, the line absent): *ret untouched. */
static inline bool snapshot_pressure_total(const Snapshot *s, int res, PsiStall stall, uint64_t *ret) {
        if (res < 0 || (size_t) res >= SAMPLE_PRESSURE_RESOURCES || !s->has_pressure[res] ||
            !s->pressure[res].has[stall])
                return false;
        *ret = s->pressure[res].line[stall].total_us;
        return true;
}

const ThreadDelays *snapshot_find(const Snapshot *s, pid_t tid);
const ProcessDelays *snapshot_find_process(const Snapshot *s, pid_t tgid);
/* The same among the first n (sorted) of s's threads or processes. */
const ThreadDelays *snapshot_find_n(const Snapshot *s, size_t n, pid_t tid);
const ProcessDelays *snapshot_find_process_n(const Snapshot *s, size_t n, pid_t tgid);
void snapshot_done(Snapshot *s);
