/* SPDX-License-Identifier: MIT */
/* What one sample answers, as the Sampler hands it to its owner: the snapshots, the ranking, the
 * hottest cgroups, the culprits and "on what", each where the Sampler keeps it (pointed to, never
 * copied), and the identity (comm, cmdline, uid, cgroup, container) of each process the incident
 * names, read from /proc and the container runtimes' files here so that the incident layer does
 * no I/O; and the result of pressure alone, made without a Sampler. Does not build the incident
 * (incident/incident.h takes the result as it is) and does not log. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timeutil.h"
#include "containers/containers.h"
#include "probes/pressure.h"
#include "sampling/culprits.h"
#include "sampling/fired.h"
#include "sampling/hot.h"
#include "sampling/onwhat.h"
#include "sampling/rank.h"
#include "sampling/snapshot.h"

/* What /proc said of a reported process. */
typedef struct ProcessInfo {
        char comm[64];
        size_t comm_len; /* raw bytes */
        char cmdline[4096];
        ssize_t cmdline_len; /* -1: unknown (exited) -> null */
        int64_t uid;         /* -1: unknown -> null */
        char cgroup[1024];
        bool has_cgroup;
        pid_t placed_by; /* the parent whose cgroup cgroup is (an ended process); 0: none */
        /* Why /proc did not say who it is ("" when it did): the process ended before it was read,
         * or its /proc files are refused (an LSM such as AppArmor, hidepid); comm then comes from
         * taskstats (ac_comm), or is "?" when nothing said it. */
        char unreadable[128];
        /* The container its cgroup is in, named by its runtime's files (containers/containers.h);
         * has_container false when its cgroup names none or no cache was lent. */
        ContainerInfo container;
        bool has_container;
} ProcessInfo;

/* Where the identities of a sample's reported processes are read: the owner's, lent to every
 * sample it runs (SampleScope.identities). Samples whose results are used one at a time (in their
 * done callback) can share one; the owner may replace items by a larger one between samples.
 * process_info_buffer_cap(SampleScope.detail) entries serve a sample. */
typedef struct ProcessInfoBuffer {
        ProcessInfo *items;
        size_t cap;
} ProcessInfoBuffer;

/* Entries of a ProcessInfoBuffer per process a sample details: its most delayed, then its
 * culprits. */
#define PROCESS_INFO_PER_TOP 2

/* The entries a ProcessInfoBuffer needs for samples that detail up to top processes. */
static inline size_t process_info_buffer_cap(unsigned top) {
        return (size_t) top * PROCESS_INFO_PER_TOP;
}

typedef enum SampleBasis {
        SAMPLE_BASIS_DELTA,    /* A and B around the window: delays over the window */
        SAMPLE_BASIS_LIFETIME, /* A alone (a window of 0, or B not taken): delays since each task began */
        SAMPLE_BASIS_NONE,     /* pressure only: no task was measured */
} SampleBasis;

typedef struct SampleResult {
        SampleBasis basis;
        usec_t wakeup_real_us;
        const Snapshot *a;            /* the start: NULL unless basis DELTA */
        const Snapshot *b;            /* the end; for LIFETIME and NONE the one snapshot */
        const Snapshot *threads_base; /* where the threads' deltas start (NULL: lifetime, or none measured) */
        const Ranking *ranking;       /* of a and b, threads attached */
        int resource;                 /* what was ranked: a PsiResource or RANK_SCORE_ALL */
        bool has_stall;               /* resource is a PsiResource: stall is the line the sample is about */
        PsiStall stall;
        const HotCgroups *hot;    /* the hottest descendant cgroups; NULL: not walked */
        const char *hot_prefix;   /* the sampled cgroup ("a/b", "" root), NULL node-wide: prefixes hot paths */
        const ProcessInfo *procs; /* one per ranking->procs[i], i < n_procs */
        size_t n_procs;           /* capped at the scope's detail */
        const Culprits *culprits; /* NULL: no culprit pass (or it ran out of memory) */
        const struct CulpritScope *culprit_scope;
        bool has_culprit_window;      /* a delta sample's culprits: the window they cover */
        usec_t culprit_start_real_us; /* the sample's own, or that of the pass it shares */
        usec_t culprit_duration_us;
        const ProcessInfo *culprit_procs; /* one per culprits->procs[i], i < n_culprit_procs */
        size_t n_culprit_procs;
        const OnWhat *onwhat;              /* NULL: no "limits" nor "blocked" */
        bool recorded;                     /* a starts before the wakeup, from a recorder (sampling/recorder.h) */
        const struct StackCapture *stacks; /* the window's on-cpu stacks; NULL: none asked */
        const char *stacks_scope;          /* the cgroup they are of ("a/b"), NULL: the node */
        /* The containers of the cgroups named (hot, culprits'), looked up by sample_result_name_containers():
         * container_cache_peek() answers from it without reading. NULL: none named. */
        const ContainerCache *containers;
} SampleResult;

/* Makes *ret of scope's pressure alone (basis NONE: no task measured, no process named), read now
 * into snap, ret's one snapshot (ret->b): what an owner reports when it measures no task, as a kill
 * incident does of its cgroup right after the kill (sampler_result_unmeasured() makes the same in a
 * Sampler, for an oom kill's cgroup that could not be sampled). Only snap's times and pressure are
 * written and nothing is allocated in it: a zeroed Snapshot says no task was listed and needs no
 * snapshot_done(). ret points at snap (and at an empty ranking of its own) for as long as snap
 * lives. Reads scope's sysroot, cgroup_fd (-1: node-wide), resource and stall alone. Never fails:
 * a pressure file that cannot be read is left out. */
void sample_result_unmeasured(const SampleScope *scope, Snapshot *snap, SampleResult *ret);

/* Fills ret for the live process pid, falling back to fallback_comm (from taskstats), then to a
 * per-pid taskstats query's ac_comm (ts; NULL: none) when /proc does not give its name; says in
 * ret->unreadable why /proc did not. Never fails, never leaves comm empty: what cannot be read is
 * marked unknown. */
void process_info_read(int proc_fd, TaskstatsSource *ts, pid_t pid, const char *fallback_comm, ProcessInfo *ret);

/* Reads the identities of r's reported processes into buf (at most top of r->ranking's, then at
 * most top of r->culprits'), and points r->procs and r->culprit_procs at them. A process that ended
 * during the sample keeps what its exit record says; its pid may be another's by now, so /proc is
 * read only for the cgroup of the parent that placed a short-lived one, and one among the most
 * delayed takes the cgroup the culprits' start walk found it in. r->ranking, r->culprits and
 * r->culprit_scope are set before. */
void sample_result_identify(SampleResult *r, int proc_fd, TaskstatsSource *ts, ProcessInfoBuffer *buf, size_t top);

/* Names the containers of what r names, once r's identities are read (sample_result_identify()
 * into buf): each reported process's (ProcessInfo.container) and, looked up so that
 * container_cache_peek() has them, the hot cgroups' and the culprit cgroups'; r->containers = c.
 * c NULL (the owner lent none): nothing is named. Reads a runtime's files only for a container
 * not cached; never per task. Never fails. */
void sample_result_name_containers(SampleResult *r, ProcessInfoBuffer *buf, ContainerCache *c);

/* The growth of the sampled scope's fired line (resource, stall) over the window: a delta sample
 * whose scope's pressure was read at both ends. False otherwise (*ret untouched). */
bool sample_result_stall_us(const SampleResult *res, uint64_t *ret);

/* The longest that a process of the ranking had a thread blocked at the sample's last look, in us
 * (ProcessDelta.blocked_ns: waits that count for resource, ranking_add_blocked()); 0 when none was,
 * or resource is not io or memory, or not what was ranked. */
uint64_t sample_result_blocked_us(const SampleResult *res, PsiResource resource);

/* What the sample's window (A..B of a delta sample; none otherwise) saw of the stall that fired
 * trigger (sampling/fired.h), a thread still blocked on trigger's resource at its end included
 * (fired_coverage_blocked()). */
FiredCoverage sample_result_fired(const SampleResult *res, const PsiTriggerSpec *trigger);
