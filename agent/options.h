/* SPDX-License-Identifier: MIT */
/* What the command line asks of the agent: the public entry's (agent.h) argument, read by the
 * modules that need it (reload.c) without depending on the entry. */
#pragma once

#include <stdbool.h>

typedef struct AgentOptions {
        const char *config_path; /* NULL: the embedded default */
        const char *output;      /* NULL: as configured */
        bool enable_delayacct;
} AgentOptions;
