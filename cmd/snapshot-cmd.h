/* SPDX-License-Identifier: MIT */
/* `psidiag snapshot`: one incident now, to stdout, measured exactly as the agent measures a fired
 * trigger (the same runtime, sampler and incident modules), for a cgroup, the whole node, or one
 * process. Logs its errors. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct SnapshotCmdOptions {
        const char *cgroup; /* NULL: node-wide */
        pid_t pid;          /* > 0: one process and all its threads (--pid) */
        int resource;       /* PsiResource, or -1 for all delays */
        uint64_t sample_ms;
        unsigned top;
        unsigned stacks_hz; /* on-cpu stacks over the sample (--stacks-hz); 0: none */
        bool enable_delayacct;
} SnapshotCmdOptions;

/* `psidiag snapshot`: one incident of type "snapshot" on stdout. Returns the exit code. */
int snapshot_cmd_run(const SnapshotCmdOptions *opts);
