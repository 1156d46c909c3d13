/* SPDX-License-Identifier: MIT */
/* Watches' lives: arming a config watch's triggers on one cgroup (or the node), rebinding it on a
 * reload, the trigger set's events (a firing goes down the pressure path, agent/stall.h; a removed
 * cgroup disarms its watch) and its removal. Other modules follow the watches through
 * core_hooks_*() (agent/core.h), never the other way round. Logs each error once, where it is
 * handled. */
#pragma once

#include <ev.h>

#include "agent/core.h"

/* Arms a watch of cfg on path (NULL: node-wide) and adds it to the agent. NULL when the cgroup
 * could not be opened or no trigger could be armed (logged). */
Watch *watch_new(Agent *a, const WatchConfig *cfg, const char *path);
/* The first half of watch_new(): a watch of cfg on path with its sampler and output, in the agent's
 * list, nothing armed (unit tests add triggers of their own). NULL out of memory or when its output
 * cannot be opened (logged). */
Watch *watch_add(Agent *a, const WatchConfig *cfg, const char *path);
Watch *watch_find(Agent *a, const WatchConfig *cfg, const char *path);
/* Disarms and frees w (its triggers go to the closer) and takes it out of the agent's list. */
void watch_remove(Agent *a, Watch *w);

/* Points w at cfg (a reload): its output, cooldown and triggers' texts. 0 or -errno (logged). */
int watch_set_config(Agent *a, Watch *w, const WatchConfig *cfg);
/* The trigger set's notify fd is readable: handles its events (ev_io callback, data: the agent). */
void watch_on_trigger_set(struct ev_loop *loop, ev_io *io, int revents);
