/* SPDX-License-Identifier: MIT */
/* The agent: arms the configured triggers, runs the libev loop, samples the fired cgroup and writes
 * incidents. Also the start-up both the agent and `psidiag snapshot` share (Runtime). Logs every
 * error once, where it is handled. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "agent/incident.h"
#include "probes/sysroot.h"
#include "probes/taskstats.h"

typedef struct Runtime {
        Sysroot *sysroot;
        TaskstatsSource *taskstats; /* NULL when taskstats is unavailable (degraded) */
        HostInfo host;
        bool privileged; /* CAP_SYS_RESOURCE: PSI windows need not be multiples of 2 s */
        char cpus_online[256]; /* /sys/devices/system/cpu/online, for the exit listener's cpumask */
} Runtime;

/* Registers an exit listener for one sample (NULL when taskstats or the cpu list is missing, or the
 * kernel refused; the refusal is logged at debug). */
TaskstatsExitListener *runtime_exit_listener(const Runtime *rt);

/* Opens the sysroot at "/", checks and optionally switches on delay accounting, opens taskstats (a
 * warning, not an error, when that fails). Returns 0 or -errno (logged). */
int runtime_open(Runtime *rt, bool enable_delayacct);
void runtime_close(Runtime *rt);
/* Current kernel.task_delayacct (false when unreadable). */
bool runtime_delayacct(const Runtime *rt);

typedef struct AgentOptions {
        const char *config_path; /* NULL: the embedded default */
        const char *output;      /* NULL: as configured */
        bool enable_delayacct;
} AgentOptions;

/* Runs until SIGINT/SIGTERM. Returns the process exit code: 0, 1 (runtime failure), 2 (config). */
int agent_run(const AgentOptions *opts);

typedef struct SnapshotOptions {
        const char *cgroup; /* NULL: node-wide */
        pid_t pid;          /* > 0: one process and all its threads (--pid) */
        int resource;       /* PsiResource, or -1 for all delays */
        uint64_t sample_ms;
        unsigned top;
        bool enable_delayacct;
} SnapshotOptions;

/* `psidiag snapshot`: one incident of type "snapshot" on stdout. Returns the exit code. */
int snapshot_run(const SnapshotOptions *opts);
