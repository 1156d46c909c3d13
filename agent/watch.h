/* SPDX-License-Identifier: MIT */
/* Watches: arming a config watch's triggers on one cgroup (or the node), the trigger set's events,
 * each wakeup's verdict, the sample it starts and the pressure incident that ends it; the pools its
 * samples borrow from ("on what", shared culprit passes) and the node-wide storms' episodes. Other
 * modules follow the watches through core_hooks_*() (agent/core.h), never the other way round.
 * Logs each error once, where it is handled. */
#pragma once

#include <ev.h>

#include "agent/core.h"

/* The watches' shared state (a->pools). 0 or -ENOMEM. */
int watch_start(Agent *a);
/* Frees it; every watch must be removed (watch_remove()) first. */
void watch_stop(Agent *a);

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
/* Stops w's sample in flight, if any, and says why in the log. */
void watch_drop_sample(Watch *w, const char *why);

/* Grows the pool of "on what" to n (max_concurrent_samples); it never shrinks, as samples in
 * flight may hold some. 0 or -ENOMEM (what could be allocated is kept). */
int watch_onwhat_reserve(Agent *a, size_t n);

/* t fired: the wakeup is judged and handled as one from the kernel (a sample, or a verdict that
 * holds it back). The recorder raises it for a trigger whose growth it saw itself (agent/recording.h).
 * It may remove t's watch (its cgroup gone). */
void watch_trigger_fired(Trigger *t);

/* The trigger set's notify fd is readable: handles its events (ev_io callback, data: the agent). */
void watch_on_trigger_set(struct ev_loop *loop, ev_io *io, int revents);
