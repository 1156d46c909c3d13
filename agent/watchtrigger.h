/* SPDX-License-Identifier: MIT */
/* Arming one trigger of a watch: its effective spec (2 s windows without CAP_SYS_RESOURCE, said
 * once at start), a descriptor from the budget, the pressure file written, its total read for the
 * wakeups to come, its place in the trigger set; and its release, off the loop. Logs what it could
 * not arm, once, where it is handled. */
#pragma once

#include "agent/core.h"

/* Arms one trigger of w; cgroup_fd is w's cgroup directory (-EBADF node-wide). NULL when it could
 * not be armed (logged, or counted as out of descriptors). */
Trigger *trigger_arm(Agent *a, Watch *w, int cgroup_fd, const WatchTrigger *cfg);
/* Takes t out of the trigger set and hands its fd to the closer. NULL-safe. */
void trigger_free(Agent *a, Trigger *t);
