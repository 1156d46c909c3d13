/* SPDX-License-Identifier: MIT */
/* A kill incident's "kill.prekill": what the agent measured of the cgroup systemd-oomd announced it
 * would kill (kills/prekill.h), before the kill, and whether the kill came. Pure: no I/O, no
 * logging. */
#pragma once

#include <jansson.h>

#include "base/timeutil.h"
#include "kills/prekill.h"

/* The most processes listed (the largest); every one measured is counted. */
#define PREKILL_REPORT_LISTED 8

/* outcome: "killed" (kill_mono_us: its first victim) or "no_kill". A new reference, or NULL when
 * memory ran out. */
json_t *prekill_report_object(const PrekillMeasure *m, const char *outcome, usec_t kill_mono_us);
