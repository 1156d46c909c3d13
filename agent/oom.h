/* SPDX-License-Identifier: MIT */
/* oom incidents: for each OOM kill that a watch covers, one incident per distinct output of the
 * covering watches, after a sample of the victim's cgroup (or its nearest ancestor there is, up to
 * the deepest covering watch), with the victim's last delays and the related pressure incidents.
 * Where kills are learnt is agent/oomwatch.h's. */
#pragma once

#include <stdint.h>

#include "agent/core.h"
#include "probes/kmsg.h"

/* The oom incidents' state (a->ooms). 0 or -ENOMEM. */
int oom_start(Agent *a);
/* Writes the kills still in their sample (with what snapshot A saw) and frees every oom incident. */
void oom_stop(Agent *a);

/* A kill (kill NULL: counted, the victim unknown; kills: how many) in victim_cgroup ("a/b"; NULL
 * unknown), learnt from source ("kmsg", "memory.events" or "memory.oom_control"). Not watched:
 * nothing (logged at debug level). */
void oom_report(Agent *a, const OomKill *kill, const char *victim_cgroup, const char *source, uint64_t kills);

/* The victim's cgroup as our watches name it, from /proc while it lives, else its memcg. NULL when
 * unknown. The caller frees it. */
char *oom_victim_cgroup(const Agent *a, const OomKill *k);
