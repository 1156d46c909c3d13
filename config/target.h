/* SPDX-License-Identifier: MIT */
/* What a watch watches: the node, a cgroup (a path or a glob), or the containers that its
 * container, image and pod keys select (containers/ctrselect.h). Checks and stores those keys' values,
 * refuses a watch that asks for both a cgroup and containers, and answers the questions the agent
 * asks of a watch's target: node-wide or not, its label (metrics, logs), the same target as
 * another's. No I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config/model.h"

/* Stores the value of the watch key ("cgroup", "container", "image" or "pod") into w. where is the
 * value's "FILE:LINE:COLUMN" (kept for a cgroup's later errors). 0; -EINVAL with the reason, a
 * sentence starting with the key, in why (size bytes); -ENOMEM. */
int config_target_set(WatchConfig *w, const char *key, const char *value, const char *where, char *why, size_t size);

/* Whether w watches the whole node: no cgroup, no container selector. */
bool config_target_is_node(const WatchConfig *w);

/* Whether w selects containers by their names (container, image or pod). */
bool config_target_by_container(const WatchConfig *w);

/* The watch's label, what the metrics and logs call it: its cgroup as configured (a glob stays one
 * label however many cgroups it matches), its selector ("container=web*"), or "/" for the node and
 * the root cgroup. NULL w: "/". */
const char *config_target_label(const WatchConfig *w);

/* Whether a and b watch the same thing: both the node, the same cgroup text, or the same selector. */
bool config_target_same(const WatchConfig *a, const WatchConfig *b);

/* Frees what config_target_set() stored (NULL-safe) and clears it. */
void config_target_clear(WatchConfig *w);
