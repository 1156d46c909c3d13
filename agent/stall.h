/* SPDX-License-Identifier: MIT */
/* A trigger's firing, the start of the pressure path: its wakeup judged (agent/wakeup.h: the growth
 * of the fired line's total=, the watch's busy and cooldown; then the capacity and the rate
 * limit), counted, told to the modules that follow the watches and to the episodes, and a sample
 * started through the recording (agent/recording.h), which starts it from its ring or after the
 * wakeup (agent/sample.h). Knows nothing of the trigger set or of removed cgroups (agent/watch.c).
 * Logs at debug level what it ignores. */
#pragma once

#include "agent/core.h"

/* t fired: the wakeup is judged and handled (a sample, or a verdict that holds it back). The
 * recorder raises it too, for a trigger whose growth it saw itself (agent/recording.h). */
void stall_trigger_fired(Trigger *t);
