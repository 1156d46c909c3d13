/* SPDX-License-Identifier: MIT */
/* Who is causing the pressure: the processes and the cgroups of the culprit scope (the node, or the
 * cgroup whose limit the stalled tasks compete under) ranked by their use of the fired resource
 * during the sample: cpu time, storage bytes, or memory growth then size. Processes rank by
 * program: those of one comm in one cgroup are one entry, their use summed, with their count and
 * their live ones' pids, whether they lived through the sample, ended in it (their exit records':
 * kernel-facts.md: exit-records) or started and ended inside it (a fork storm's, placed by their
 * live ancestor's cgroup, and named by their spawner, the nearest ancestor still alive). A live
 * process's comm is asked of CulpritsInput.comm_of; one whose comm or cgroup is unknown is an entry
 * of its own. Cgroups rank on their own counters (a cgroup's counter less its children's) where
 * every counter is there, else on the sum of their own processes. culprits_build() is pure (no
 * I/O but through comm_of, no logging); culprits_read_spawners() reads /proc for the spawners'
 * names only. Buffers are reused. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/cgusage.h"
#include "probes/limits-find.h"
#include "sampling/culprit-usage.h"
#include "probes/pressure.h"
#include "probes/procfs.h"
#include "sampling/snapshot.h"

/* Programs whose processes all started and ended during a sample are one entry each, up to this
 * many entries; the rest are summed in the last. */
#define CULPRIT_AGGREGATES_MAX 64

/* An entry lists the pids of this many of its live processes, most use first. */
#define CULPRIT_PIDS_MAX 8

/* An aggregate counts the live ancestors of its processes, up to this many different ones. */
#define CULPRIT_SPAWNER_CANDIDATES 4
#define CULPRIT_SPAWNER_CMDLINE_MAX 1024

/* An entry's spawner: the nearest ancestor of its processes that started and ended in the sample
 * alive at its end, the one most of them descend from (a build's make behind its compilers' short-lived gcc). */
typedef struct CulpritSpawner {
        pid_t pid;
        unsigned processes; /* of the entry's that started in the sample, how many descend from it */
        char comm[PROC_COMM_MAX];
        ssize_t comm_len; /* raw bytes; -1: unknown (it ended after the sample) */
        char cmdline[CULPRIT_SPAWNER_CMDLINE_MAX];
        ssize_t cmdline_len; /* -1: unknown */
} CulpritSpawner;

/* One program's processes: those of one comm in one cgroup (above), or one process whose comm or
 * cgroup is unknown. */
typedef struct CulpritProcess {
        pid_t tgid;                   /* its top process: the live one that used most, else the one measured at
                                       * the start that ended and used most; 0 when all started and ended in the
                                       * sample (an aggregate) */
        uint8_t origin;               /* ProcessOrigin: its top process's; SHORT for an aggregate */
        pid_t ppid;                   /* its processes' parent when they share it (ended ones: from the exit
                                       * records; 0 for a live one) */
        int64_t uid;                  /* its processes' uid when they share it, from the exit records; -1 otherwise */
        unsigned processes;           /* how many processes it stands for */
        unsigned ended;               /* of them, how many ended during the sample */
        pid_t pids[CULPRIT_PIDS_MAX]; /* its live processes', most use first */
        unsigned n_pids;
        char comm[TASKSTATS_COMM_MAX + 1]; /* the program's; "" for a live process alone whose comm is unknown */
        const char *cgroup;                /* the program's cgroup, relative to the scope ("" the scope itself), into
                                            * a walk's names: a live process's in the end walk, one that ended in the
                                            * start walk, an aggregate's its processes' nearest live ancestor's; NULL
                                            * unknown */
        CulpritUsage usage;
        double share;
        bool victim; /* one of its processes is also among the most delayed */
        int64_t key; /* the order: the score, or memory growth */
        uint64_t key2;
        /* Its candidate spawners (culprits_build): the live ancestors of its processes that started
         * and ended in the sample, how many descend from each, and whether the end snapshot had it
         * (else it lies outside the scope: alive only if /proc still has it). */
        pid_t spawner_pids[CULPRIT_SPAWNER_CANDIDATES];
        unsigned spawner_counts[CULPRIT_SPAWNER_CANDIDATES];
        bool spawner_measured[CULPRIT_SPAWNER_CANDIDATES];
        const CulpritSpawner *spawner; /* culprits_read_spawners(), into Culprits.spawners; NULL: none */
} CulpritProcess;

typedef struct CulpritCgroup {
        const char *path;   /* relative to the scope ("" the scope itself), into the end walk's names */
        bool from_counters; /* source "cgroup" (its own counters) or "processes" (its processes summed) */
        CulpritUsage usage;
        bool has_dirty;       /* io: its subtree's dirty and writeback page cache at the end (cgroup2 */
        uint64_t dirty_bytes; /* memory.stat; probes/cgusage.h) */
        double share;
        int64_t key;
        uint64_t key2;
} CulpritCgroup;

/* Scratch: a cgroup's own use (its counter less its children's), per cgroup of a walk. */
typedef struct CulpritOwn {
        bool complete; /* it and every child have the counter */
        uint64_t cpu_us, read_bytes, write_bytes, memory_bytes;
} CulpritOwn;

/* Where the culprit pass's walks found one of the most delayed processes (CulpritsInput.victims). */
typedef struct CulpritVictim {
        pid_t pid;
        const char *cgroup; /* relative to the scope ("" the scope itself), into the walks' names */
} CulpritVictim;

typedef struct Culprits {
        PsiResource resource;
        CulpritProcess *procs; /* most first; at most top */
        size_t n_procs, cap_procs;
        CulpritCgroup *cgroups; /* most first; at most top */
        size_t n_cgroups, cap_cgroups;
        size_t n_cgroups_total; /* the cgroups that used the resource, before the cut to top */
        CulpritUsage total;     /* the scope's processes summed over the sample */
        size_t *order;          /* scratch: a's walk sorted by path */
        size_t cap_order;
        CulpritOwn *own_a, *own_b; /* scratch: per cgroup of each walk */
        size_t cap_own_a, cap_own_b;
        struct CulpritPid *pids; /* scratch: every process of the end walk with its cgroup, by pid */
        size_t n_pids, cap_pids;
        struct CulpritPid *start_pids; /* scratch: the same of the start walk */
        size_t n_start_pids, cap_start_pids;
        struct CulpritEnded *ended; /* scratch: the ended processes' use by their cgroup's path */
        size_t n_ended, cap_ended;
        CulpritUsage *pu; /* scratch: per process of b */
        bool *pu_valid;
        size_t cap_pu, cap_pu_valid;
        CulpritSpawner *spawners; /* one per entry of procs (culprits_read_spawners) */
        size_t cap_spawners;
        CulpritVictim *victims; /* the most delayed the walks had: the end walk's cgroup, else the start's */
        size_t n_victims, cap_victims;
        struct CulpritMember *members; /* scratch: the processes of b with a use, by program */
        size_t cap_members;
        char *comms; /* scratch: the live processes' comms, TASKSTATS_COMM_MAX + 1 bytes per process of b */
        size_t cap_comms;
} Culprits;

/* Where a culprit pass looks (culprit_scope_open(), sampling/sampler.h): the processes and cgroups that compete for
 * the stalled cgroup's resource. */
typedef struct CulpritScope {
        PsiResource resource;
        bool node;                        /* the whole node */
        char path[4096];                  /* the scope's cgroup, relative to the cgroup2 mount ("" for the node) */
        LimitsSetting limit;              /* the limit that made it the scope (NONE: the node) */
        LimitsSource limit_source;        /* the hierarchy of limit_path */
        char limit_path[LIMITS_PATH_MAX]; /* the cgroup that sets it, in that hierarchy: "limits"' cgroup */
        bool own_limit;                   /* cpu, io: the stalled cgroup is limited by its own cpu.max or io.max */
        bool same;                        /* it is the sampled scope itself: the sample's own snapshots serve */
        int cgroup_fd;                    /* its cgroup2 directory (the mount's root for the node), -1 without one */
        int v1_fd;                        /* the same path under the resource's cgroup-v1 controller, or -1 */
} CulpritScope;

typedef struct CulpritsInput {
        PsiResource resource;
        const Snapshot *a, *b;       /* the scope's processes; a NULL: b's lifetime totals */
        const CgroupUsages *ga, *gb; /* the scope's cgroups; gb NULL: no cgroups; ga NULL: lifetime */
        bool scope_is_node;          /* the walk's first cgroup is the root: its counters are the node's */
        const pid_t *victims;        /* the most delayed processes */
        size_t n_victims;
        size_t top;
        /* A live process's comm into out (size bytes), without a newline: its length or -errno
         * (proc_read_comm(), given comm_fd). NULL: live processes are not grouped. */
        ssize_t (*comm_of)(int comm_fd, pid_t pid, char *out, size_t size);
        int comm_fd;
} CulpritsInput;

/* Builds c from in; no spawner is named yet (CulpritProcess.spawner NULL). 0 or -ENOMEM. */
int culprits_build(Culprits *c, const CulpritsInput *in);
/* culprits_build()'s cgroups (sampling/culprit-cgroups.c), after its processes: c->cgroups from
 * in->gb (and in->ga), c->ended and the processes' use. 0 or -ENOMEM. */
int culprits_build_cgroups(Culprits *c, const CulpritsInput *in);
/* Names the spawner of each entry with processes that started and ended in the sample: of its candidates, the one most
 * of its processes descend from, with its comm and cmdline from /proc (proc_fd). One the end snapshot did not have and
 * /proc no longer has is none (it ended, or never was alive). Does not log. 0 or -ENOMEM. */
int culprits_read_spawners(Culprits *c, int proc_fd);
/* The cgroup (relative to the scope) the walks found pid in, one of CulpritsInput.victims: for a
 * process whose /proc is gone when it is named (it ended during the sample, or after its end
 * snapshot). NULL when neither walk had it. */
const char *culprits_victim_cgroup(const Culprits *c, pid_t pid);
void culprits_done(Culprits *c);

/* A culprit pass over the sampled scope itself (scope->culprit->same) ranks on the scope's own
 * snapshots: they read each process's use of the resource too (scope->usage). The sampler and the
 * recorder apply it to the scope they copy. */
void culprit_pass_usage(SampleScope *scope);

/* One end of a culprit pass over scope->culprit (nothing without one): the scope's cgroups into g,
 * and its processes into snap unless the scope is the sample's own (sample: the sample's snapshot
 * just taken, whose processes are copied, not asked again). A failure leaves that part out
 * (*has_snap, *has_g false), never fails the sample. */
void culprit_pass_take(const SampleScope *scope, Snapshot *snap, const Snapshot *sample, CgroupUsages *g,
                       bool *has_snap, bool *has_g);
