/* SPDX-License-Identifier: MIT */
/* kill incidents: processes of a watched cgroup ended by SIGKILL or SIGTERM under memory pressure,
 * grouped per cgroup and named by their killer's mark. A kill window opens at a memory pressure
 * incident and is extended by later wakeups (both learnt through the watches' hooks); while any is
 * open an exit listener, a 1 s refresh of the members and the kill log files are open, none
 * otherwise. Every decision is kills/kills.h's. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "agent/core.h"
#include "kills/prekill.h"

/* a->kills, and its hooks. 0, -ENOMEM or -ENOSPC (too many hooks). */
int kills_start(Agent *a);
/* Writes the groups in flight and closes everything. */
void kills_stop(Agent *a);

/* Every /dev/kmsg message (oomd's kill line). */
void kills_kmsg_message(Agent *a, const char *msg, size_t len);

/* systemd-oomd announced the kill of m->cgroup and m is what was measured (agent/prekillhook.h); takes
 * m. The deepest watch over the cgroup opens its kill window (without one, m is dropped, logged):
 * its kill incident names systemd-oomd (basis prekill) and carries m; with no kill within
 * prekill_wait_s, a kill incident of no victim says so. */
void kills_prekill(Agent *a, PrekillMeasure *m);
/* systemd-oomd's Notify of cgroup, before it is measured and answered: the deepest watch over it
 * opens its kill window now (listening, then the cgroup's processes listed), so that a kill right
 * after the answer is heard; kills_prekill() brings the measure. */
void kills_prekill_listen(Agent *a, const char *cgroup);
/* A victim of the kernel's OOM killer: its exit is an oom incident's, never a kill incident's. */
void kills_kernel_victim(Agent *a, pid_t pid);
