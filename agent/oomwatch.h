/* SPDX-License-Identifier: MIT */
/* Where OOM kills are learnt: /dev/kmsg (the kernel's oom-kill lines, and every message handed to
 * the kill incidents for oomd's mark), or, when kmsg is closed to us, the kill counters of the
 * watched memory cgroups (cgroup2 memory.events, v1 memory.oom_control), one per cgroup, followed
 * through the watches' hooks. Each kill goes to agent/oom.h. Logs what it cannot read, once. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "agent/core.h"
#include "probes/memcg.h"

/* Starts reading kills (a->oomwatch; without memory for it, kills are not read: logged). */
void oomwatch_start(Agent *a);
/* Stops reading kills and closes every counter. */
void oomwatch_stop(Agent *a);

/* A counted cgroup, as the decision below sees it. */
typedef struct OomCounterView {
        const char *path; /* relative to the cgroup2 mount */
        MemcgCounterKind kind;
} OomCounterView;

/* The counter nearest above counters[i] whose count includes i's kills: cgroup2 counts a kill in
 * every ancestor's memory.events, a v1 memcg only its own. Its index, or -1 when none. Pure. */
ssize_t oomwatch_counter_parent(const OomCounterView *counters, size_t n, size_t i);
