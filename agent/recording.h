/* SPDX-License-Identifier: MIT */
/* The recorder's loop side (sampling/recorder.h): a watch is recorded from its pressure incident on,
 * every period, until it has had no wakeup with real growth for record_s, so that its next incident
 * covers the trigger's window (kernel-facts.md: trigger-latency). It learns of incidents and
 * wakeups through the watches' hooks and offers the watch's recorder when its next sample starts
 * (agent/core.h). At most max_concurrent_samples watches record at once; an idle node records
 * nothing. The decisions are the pure functions below. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "agent/core.h"

/* a->recording, and its hooks. 0, -ENOMEM or -ENOSPC (too many hooks). */
int recording_start(Agent *a);
/* Stops every recording and frees them. */
void recording_stop(Agent *a);

/* How often a watch is recorded: a quarter of its longest trigger window, at least
 * RECORDER_PERIOD_MIN_MS. And how far back its ring reaches: that window, plus the 2 s the kernel
 * can take to check an unprivileged trigger (kernel-facts.md: trigger-latency). */
uint64_t recording_period_ms(uint64_t longest_window_us);
uint64_t recording_depth_ms(uint64_t longest_window_us);

/* Whether a watch whose incident (or wakeup) comes now should record: record_s is not 0, and
 * fewer than max watches record (already: it is one of them). */
bool recording_admit(unsigned record_s, unsigned recording, unsigned max, bool already);
