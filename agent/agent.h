/* SPDX-License-Identifier: MIT */
/* The agent: arms the configured triggers, runs the libev loop, samples the fired cgroup and writes
 * incidents. Logs every error once, where it is handled. The composition root of agent/'s modules
 * (agent/core.h and one header per module). */
#pragma once

#include "agent/options.h"

/* Runs until SIGINT/SIGTERM. Returns the process exit code: 0, 1 (runtime failure), 2 (config). */
int agent_run(const AgentOptions *opts);
