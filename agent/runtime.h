/* SPDX-License-Identifier: MIT */
/* What the agent and `psidiag snapshot` both start with: the sysroot, taskstats (or the reason it
 * is unavailable), delay accounting, host facts and the online cpus; and the agent's
 * self-protection (memory lock, priority, open-file limit). Logs what it finds, once. */
#pragma once

#include <stdbool.h>

#include "config/config.h"
#include "containers/containers.h"
#include "probes/limits-find.h"
#include "probes/sysroot.h"
#include "probes/system.h"
#include "probes/taskstats.h"

typedef struct Runtime {
        Sysroot *sysroot;
        TaskstatsSource *taskstats; /* NULL when taskstats is unavailable (degraded) */
        LimitsHierarchy *limits;    /* where cgroup limits are read (culprit scope, "on what"); NULL: none */
        ContainerCache *containers; /* the names of containers, lent to every sample; NULL: none (no memory) */
        HostInfo host;
        bool privileged;            /* CAP_SYS_RESOURCE: PSI windows need not be multiples of 2 s */
        char *cpus;                 /* /sys/devices/system/cpu/possible, the exit listeners' cpumask; NULL: unknown */
        int exit_refused;           /* the kernel's refusal of an exit listener for cpus at start (logged), or 0 */
        uint16_t taskstats_version; /* the struct version taskstats answers with; 0 unknown */
} Runtime;

/* The cpus exit listeners register for (every possible one: a cpu brought online later is heard),
 * NULL when taskstats or the cpu list is missing, or the kernel refused the registration. */
const char *runtime_exit_cpus(const Runtime *rt);

/* Opens the sysroot at "/" and where cgroup limits are read (rt->limits, NULL when out of memory),
 * checks and optionally switches on delay accounting, opens taskstats (a warning, not an error,
 * when that fails). Returns 0 or -errno (logged). */
int runtime_open(Runtime *rt, bool enable_delayacct);
void runtime_close(Runtime *rt);
/* Current kernel.task_delayacct (false when unreadable). */
bool runtime_delayacct(const Runtime *rt);

/* The config's outputs can be opened here: today, that libsystemd can be loaded when an output
 * is "journal" (the config parser checks only that psidiag was built with it). 0, or -EOPNOTSUPP
 * with *ret_error (malloc'ed, naming path) saying why; -ENOMEM. Loads libsystemd only when an
 * output is the journal. */
int runtime_check_outputs(const Config *c, const char *path, char **ret_error);

/* A diagnostician the load starves or reclaim pages out reports late: locks the (small) memory
 * with CAP_IPC_LOCK and runs at nice -10 with CAP_SYS_NICE, when allowed. */
void runtime_protect_self(const Runtime *rt);

/* Raises the soft open-file limit to the hard one (one fd per trigger). */
void runtime_raise_fd_limit(void);
