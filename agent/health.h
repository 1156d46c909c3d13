/* SPDX-License-Identifier: MIT */
/* The metrics file (sinks/metrics.h): the agent's health, rewritten from the counters
 * (agent/counters.h), the watches and the outputs after a counter changed. No timer: an idle agent
 * stays idle. Reads, never counts. Complains at most every SINK_COMPLAINT_INTERVAL_US when it
 * cannot write. */
#pragma once

#include "agent/core.h"

/* a->health. 0 or -ENOMEM (not logged). */
int health_start(Agent *a);
void health_stop(Agent *a);

/* Rewrites the metrics file, when one is configured. */
void health_update(Agent *a);
