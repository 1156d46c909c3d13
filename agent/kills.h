/* SPDX-License-Identifier: MIT */
/* kill incidents: processes of a watched cgroup ended by SIGKILL or SIGTERM under memory pressure,
 * grouped per cgroup and named by their killer's mark. A kill window opens at a memory pressure
 * incident and is extended by later wakeups (both learnt through the watches' hooks); while any is
 * open an exit listener, a 1 s refresh of the members and the kill log files are open, none
 * otherwise. Every decision is sampling/kills.h's. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "agent/core.h"
#include "sampling/prekill.h"

/* a->kills, and its hooks. 0, -ENOMEM or -ENOSPC (too many hooks). */
int kills_start(Agent *a);
/* Writes the groups in flight and closes everything. */
void kills_stop(Agent *a);

/* Every /dev/kmsg message (oomd's kill line). */
void kills_kmsg_message(Agent *a, const char *msg, size_t len);

/* systemd-oomd announced the kill of m->cgroup and m is what was measured (agent/prekill.h); takes
 * m. The deepest watch over the cgroup opens its kill window (without one, m is dropped, logged):
 * its kill incident names systemd-oomd (basis prekill) and carries m; with no kill within
 * prekill_wait_s, a kill incident of no victim says so. */
void kills_prekill(Agent *a, PrekillMeasure *m);
/* A victim of the kernel's OOM killer: its exit is an oom incident's, never a kill incident's. */
void kills_kernel_victim(Agent *a, pid_t pid);
