/* SPDX-License-Identifier: MIT */
/* Building the incident JSON (schema_version 1, schemas/incident.schema.json) from plain structs,
 * and dumping it as one line. Pure: no I/O and no logging. Task names and command lines are
 * arbitrary bytes; they are made valid UTF-8 here (kernel-facts.md: utf8). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "incident/jsonutil.h"
#include "sampling/hot.h"
#include "sampling/rank.h"
#include "sampling/snapshot.h"
#include "probes/kmsg.h"
#include "probes/system.h"
#include "triggers/trigger.h"

#define INCIDENT_SCHEMA_VERSION 1
#define INCIDENT_THREADS_PER_PROCESS 3

/* What an oom incident says about the kill ("oom" and "related" in the schema). */
typedef struct OomReport {
        const char *source;        /* "kmsg", or the counter file for a kill counted without kmsg */
        const OomKill *kill;       /* from kmsg; NULL when counted: the victim is unknown */
        uint64_t kills;            /* kills this incident stands for (counter growth; 1 from kmsg) */
        const char *cgroup;        /* the cgroup measured, "a/b" relative to the cgroup2 mount; NULL node-wide */
        const char *victim_cgroup; /* "a/b" as the watches name it; NULL unknown */
        bool has_victim_delay;
        uint64_t victim_delay_ns[_TASK_DELAY_MAX];
        uint32_t victim_present;
        const char *victim_delay_source; /* "exit_record" or "taskstats" */
        const char *const *related;      /* ids, newest first */
        size_t n_related;
} OomReport;

typedef struct IncidentInput {
        const char *type; /* "pressure", "snapshot" or "oom" */
        const char *id;
        usec_t time_real_us; /* the wakeup */
        const HostInfo *host;
        const char *agent_version;
        bool delayacct;
        int taskstats_version; /* -1: null */

        bool has_trigger;
        const char *trigger_cgroup; /* NULL: node-wide */
        PsiTriggerSpec trigger;     /* effective */
        const char *trigger_spec;   /* as configured */

        const Snapshot *pressure_from; /* pressure of cpu, memory, io */
        unsigned threads_per_process;  /* 0: INCIDENT_THREADS_PER_PROCESS */

        usec_t sample_start_real_us;
        uint64_t sample_duration_ms;
        bool lifetime;       /* one snapshot, delays since each thread began (sample_ms 0) */
        bool unmeasured;     /* no tasks measured, pressure only: basis "none" */
        bool has_suppressed; /* write "suppressed" (the agent's incidents) */
        uint64_t suppressed;
        bool has_exit_listener; /* exit records were listened for */
        unsigned exit_records, lost_exit_records;
        bool has_hot; /* the descendant cgroups were walked: "cgroups" is written */
        const HotCgroup *hot;
        size_t n_hot;
        const char *hot_prefix;         /* the sampled cgroup ("a/b"), NULL node-wide */
        unsigned tasks, exited, errors; /* tasks: threads listed at the start */
        unsigned processes;             /* processes listed at the start */
        unsigned unattributed;          /* started and ended in the sample, not placed (with an exit listener) */
        uint64_t unattributed_ns[_TASK_DELAY_MAX];
        uint32_t unattributed_present;
        bool has_threads_ms; /* the threads' deltas cover the last threads_ms of the sample */
        uint64_t threads_ms;
        bool has_stall;
        uint64_t stall_us;

        const TaskStateCounts *states; /* NULL: counts unavailable -> all zero, source procfs */

        const Ranking *ranking;
        const ProcessInfo *procs; /* one per ranking->procs[i], i < n_procs */
        size_t n_procs;           /* already capped at top */

        const OomReport *oom; /* type "oom": writes "oom" and "related" */

        /* Who is causing it: "culprits" (null without a culprit pass). */
        const struct Culprits *culprits;
        const struct CulpritScope *culprit_scope;
        const ProcessInfo *culprit_procs; /* one per culprits->procs[i], i < n_culprit_procs */
        size_t n_culprit_procs;
        /* On what: "limits" and "blocked" (null without them). */
        const struct OnWhat *onwhat;
} IncidentInput;

/* Returns a new reference, or NULL when memory ran out. */
json_t *incident_build(const IncidentInput *in);

/* Significant digits of the reals in an incident line (avg10, share). */
#define INCIDENT_REAL_PRECISION 6

/* The incident as one line of compact JSON with its newline, malloc'ed. 0 or -ENOMEM. */
int incident_dump_line(const json_t *incident, char **ret, size_t *ret_len);

/* "<boot id prefix>-<time us hex>-<pid hex>-<seq>": unique on the host across agent restarts. */
void incident_format_id(const HostInfo *host, usec_t time_real_us, pid_t pid, uint64_t seq, char *buf, size_t size);
