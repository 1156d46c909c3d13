/* SPDX-License-Identifier: MIT */
/* The step shared by the agent and `psidiag snapshot`: from snapshots A and B and their ranking
 * to one incident. Reads comm, cmdline, uid and cgroup once per reported process, and for
 * no other. Logs nothing. */
#pragma once

#include <stdbool.h>

#include "sampling/hot.h"
#include "incident/incident.h"
#include "sampling/culprits.h"
#include "sampling/rank.h"
#include "sampling/sampler.h"
#include "sampling/snapshot.h"

/* Fills ret for process pid, falling back to fallback_comm (from taskstats) when it exited. */
void process_info_read(int proc_fd, pid_t pid, const char *fallback_comm, ProcessInfo *ret);

typedef struct Report {
        const Sysroot *sysroot;
        const HostInfo *host;
        const char *type;
        const char *id;
        usec_t wakeup_real_us;
        bool delayacct;

        bool has_trigger;
        const char *trigger_cgroup;
        PsiTriggerSpec trigger;
        const char *trigger_spec;

        int resource; /* the score: a PsiResource or RANK_SCORE_ALL */
        bool has_stall;
        PsiStall stall; /* which total= grew (with resource) */
        unsigned top;

        const Snapshot *a, *b;        /* a NULL: a sample of 0 ms, b alone with lifetime totals */
        const Snapshot *threads_base; /* where the threads' deltas start (NULL: lifetime, or none measured) */
        bool unmeasured;              /* b holds pressure only: no tasks were measured (sample.basis "none") */
        const Ranking *ranking;       /* of a and b, threads attached (the Sampler's) */
        HotCgroups *hot;              /* scratch for the hottest descendant cgroups (when the snapshots walked them) */
        const char *scope_cgroup;     /* the sampled cgroup ("a/b", "" root), NULL node-wide: prefixes hot paths */
        unsigned threads_per_process; /* 0: the default (3) */
        bool has_suppressed;          /* the agent: incidents dropped by its global limits since the last one */
        uint64_t suppressed;
        ProcessInfo *procs;       /* scratch of at least 2 * top entries (most delayed, then culprits) */
        const Culprits *culprits; /* NULL: no culprit pass */
        const CulpritScope *culprit_scope;
        const OnWhat *onwhat; /* NULL: no "limits" nor "blocked" */
        const OomReport *oom; /* type "oom" */
} Report;

/* Builds the incident (a new reference, schemas/incident.schema.json). 0 or -ENOMEM. */
int report_build(const Report *rep, json_t **ret);

/* Builds the incident line (malloc'ed, ending in '\n'): report_build(), then incident_dump_line().
 * 0 or -ENOMEM. */
int report_build_line(const Report *rep, char **ret, size_t *ret_len);

/* The step every writer of incidents takes: names the incident (incident_format_id() of the
 * report's host and wakeup time, our pid and seq, into id, and rep->id), then builds it as
 * report_build(); the sinks take the json_t (sinks/sink.h). */
int report_compose(Report *rep, uint64_t seq, char *id, size_t id_size, json_t **ret);
