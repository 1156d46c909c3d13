/* SPDX-License-Identifier: MIT */
/* SIGHUP: reopens the outputs (logrotate), then reloads the config file. A bad config is refused
 * and the running one kept; triggers whose cgroup and text did not change stay armed on the same
 * descriptors (no gap, no spurious first event); others are closed or armed. Logs what it did. */
#pragma once

#include "agent/core.h"

void reload_config(Agent *a);

/* The watch of the new config nc that is ow (a watch of old) across a reload: the same target
 * (config_target_same(): the cgroup pattern text or the container selector, node-wide alike) and
 * the same occurrence of it in the list. NULL when nc has none. Pure. */
const WatchConfig *reload_match_watch(const Config *old, const WatchConfig *ow, const Config *nc);
