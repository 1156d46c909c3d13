/* SPDX-License-Identifier: MIT */
/* The agent: arms the configured triggers, runs the libev loop, samples the fired cgroup and writes
 * incidents. Logs every error once, where it is handled. Its modules share agent/daemon.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct AgentOptions {
        const char *config_path; /* NULL: the embedded default */
        const char *output;      /* NULL: as configured */
        bool enable_delayacct;
} AgentOptions;

/* Runs until SIGINT/SIGTERM. Returns the process exit code: 0, 1 (runtime failure), 2 (config). */
int agent_run(const AgentOptions *opts);
