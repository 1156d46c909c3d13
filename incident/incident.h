/* SPDX-License-Identifier: MIT */
/* Building the incident JSON (schema_version 1, schemas/incident.schema.json) from a sample's
 * result and its context, and dumping it as one line. Pure: no I/O and no logging. Task names and
 * command lines are arbitrary bytes; they are made valid UTF-8 here (kernel-facts.md: utf8). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "incident/jsonutil.h"
#include "sampling/hot.h"
#include "sampling/rank.h"
#include "sampling/result.h"
#include "sampling/snapshot.h"
#include "probes/kmsg.h"
#include "kills/kills.h"
#include "kills/prekill.h"
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
        const ContainerInfo *victim_container; /* the container it was in, named at the kill; NULL none */
        bool has_victim_delay;
        uint64_t victim_delay_ns[_TASK_DELAY_MAX];
        uint32_t victim_present;
        const char *victim_delay_source; /* "exit_record" or "taskstats" */
        const char *const *related;      /* ids, newest first */
        size_t n_related;
} OomReport;

/* What a kill incident says ("kill" and "related" in the schema): the victims of one watched
 * cgroup that died by SIGKILL or SIGTERM under pressure, who killed them, and what pressure. */
typedef struct KillReport {
        const KillGroup *group;
        const char *cgroup; /* the watched cgroup, "a/b"; NULL node-wide */
        /* Where the victims' containers were looked up (container_cache_lookup() of each listed
         * victim's cgroup, just before); NULL: none named. */
        const ContainerCache *containers;
        const KillerChoice *killer;
        /* The cgroup's memory right after (null where not read). */
        bool has_memory_current, has_memory_max, has_swap_current, has_oom_kill;
        uint64_t memory_current_kib, memory_max_kib, swap_current_kib, oom_kill;
        /* The pressure the kill came under: the watch's trigger, the last pressure incident, how
         * long before the first victim it was written, and whether a trigger fired since. */
        const char *trigger_spec;
        const char *pressure_incident; /* id; NULL when none is known */
        uint64_t since_pressure_ms;
        bool above_trigger;
        const char *const *related; /* ids, newest first */
        size_t n_related;
        /* What the prekill hook measured before the kill (NULL: it was not called): "kill.prekill",
         * with the outcome ("killed", or "no_kill" for a group of no victim) and the first
         * victim's death (CLOCK_MONOTONIC). */
        const PrekillMeasure *prekill;
        const char *prekill_outcome;
        usec_t kill_mono_us;
        /* Exit records the kernel dropped on the window's listener since its last kill incident
         * (its socket was full): group->unheard victims ended while they were. */
        uint64_t lost_exit_records;
} KillReport;

/* What an incident says beside its sample: who writes it, why, and about what. The sample itself
 * is the Sampler's SampleResult (sampling/result.h), taken as it is. */
typedef struct IncidentContext {
        const char *type; /* "pressure", "snapshot", "oom" or "kill" */
        const char *id;
        const HostInfo *host;
        const char *agent_version; /* NULL: PSIDIAG_VERSION */
        bool delayacct;

        bool has_trigger;
        const char *trigger_cgroup; /* NULL: node-wide */
        PsiTriggerSpec trigger;     /* effective */
        const char *trigger_spec;   /* as configured */

        unsigned threads_per_process; /* 0: INCIDENT_THREADS_PER_PROCESS */
        bool has_suppressed;          /* write "suppressed" (the agent's incidents) */
        uint64_t suppressed;

        const OomReport *oom;   /* type "oom": writes "oom" and "related" */
        const KillReport *kill; /* type "kill": writes "kill" and "related" */

        /* The agent's pressure incidents (agent/episode.h): the episode of the trigger's resource
         * they belong to, and the id of the node culprit pass their culprits come from when it may
         * serve several samples. NULL: "episode" null, "culprits.shared_pass" null. */
        const char *episode;
        const char *culprit_pass;
} IncidentContext;

/* The incident of sample res (schemas/incident.schema.json), a new reference, in *ret. Pure: the
 * identities of the processes it names come with res. 0 or -ENOMEM. */
int incident_build(const SampleResult *res, const IncidentContext *ctx, json_t **ret);

/* Significant digits of the reals in an incident line (avg10, share). */
#define INCIDENT_REAL_PRECISION 6

/* The incident as one line of compact JSON with its newline, malloc'ed. 0 or -ENOMEM. */
int incident_dump_line(const json_t *incident, char **ret, size_t *ret_len);

/* "<boot id prefix>-<time us hex>-<pid hex>-<seq>": unique on the host across agent restarts. */
void incident_format_id(const HostInfo *host, usec_t time_real_us, pid_t pid, uint64_t seq, char *buf, size_t size);
