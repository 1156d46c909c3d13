/* SPDX-License-Identifier: MIT */
/* Cgroups that come and go: arms every configured cgroup (a path, or each match of a glob) that
 * exists and is not armed yet, watches (inotify) the directories where others may appear, and
 * disarms the watches of cgroups that are removed. Says once per config watch that its cgroup is
 * not there yet. */
#pragma once

#include <stdbool.h>

#include "agent/core.h"

/* a->discovery (a->config must be loaded), with its inotify instance when there is a cgroup2
 * mount (without one: a warning, and only the cgroups present at each discovery_run() are armed).
 * 0 or -ENOMEM. */
int discovery_start(Agent *a);
void discovery_stop(Agent *a);

/* Arms whatever the config asks for and is not armed yet. */
void discovery_run(Agent *a);

/* Whether cgroups that appear later are noticed (the inotify instance exists). */
bool discovery_follows_new_cgroups(const Agent *a);

/* A reload's new config: its "not there yet" flags, one per config watch (calloc'ed by the caller,
 * who allocates before committing; taken over). */
void discovery_take_warned(Agent *a, bool *missing_warned);
