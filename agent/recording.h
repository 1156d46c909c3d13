/* SPDX-License-Identifier: MIT */
/* The recorder's loop side and its one owner (sampling/recorder.h): a watch is recorded from its
 * pressure incident on, every period, until it has had no wakeup with real growth for record_s, so
 * that its next incident covers the trigger's window (kernel-facts.md: trigger-latency). The
 * pressure path (agent/stall.h) tells it of each wakeup and starts each sample through it: it lends
 * the watch's recorder to the sample (agent/sample.h), which takes an entry and never stops it; it
 * learns of incidents (to restart on what follows) and removed watches through the watches' hooks
 * (agent/core.h). At most max_concurrent_samples watches record at once; an idle node records
 * nothing. The decisions are the pure functions below. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "agent/core.h"

/* How a wakeup the recorder saw in its own entries is handled: as the kernel's (stall_trigger_fired(),
 * given by the composition root: the pressure path calls this module, not the other way round). */
typedef void (*RecordingRaise)(Trigger *t);

/* a->recording, and its hooks. 0, -ENOMEM or -ENOSPC (too many hooks). */
int recording_start(Agent *a, RecordingRaise raise);
/* Stops every recording and frees them. */
void recording_stop(Agent *a);

/* A wakeup of w with real stall growth, whatever its verdict: a recording of w goes on for record_s
 * from now. */
void recording_wakeup(Watch *w);
/* t of w fired and its wakeup is a sample: it starts (sample_start()) from w's recorder when w is
 * recorded, else after the wakeup. Without a->recording (not started) it is sample_start() alone. */
void recording_sample(Watch *w, Trigger *t);

/* How often a watch is recorded: a quarter of its longest trigger window, at least
 * RECORDER_PERIOD_MIN_MS. And how far back its ring reaches: that window, plus the 2 s the kernel
 * can take to check an unprivileged trigger (kernel-facts.md: trigger-latency). */
uint64_t recording_period_ms(uint64_t longest_window_us);
uint64_t recording_depth_ms(uint64_t longest_window_us);

/* Whether the recorder raises a wakeup of a trigger (spec; its wakeups t) whose fired line grew by
 * growth_us over the trigger's window as the recorder's entries saw it: a read of the pressure
 * file, which the recorder makes, can fold the stall into the averages before the kernel checks an
 * unprivileged trigger, which then never fires for it (kernel-facts.md: pressure-reads). As the
 * kernel would: growth at least the threshold, once a window at most (since the trigger's newest
 * wakeup or arming). Whether that growth is an incident's stall carried over is the raised
 * wakeup's verdict, as for the kernel's (wakeup_decide(): WAKEUP_REPORTED); the ring restarts at
 * every incident, so its growth is never stall from before the incident's end. Pure. */
bool recording_should_fire(uint64_t growth_us, const PsiTriggerSpec *spec, const TriggerTotal *t, usec_t now_mono_us);

/* Whether a watch whose incident (or wakeup) comes now should record: record_s is not 0, and
 * fewer than max watches record (already: it is one of them). */
bool recording_admit(unsigned record_s, unsigned recording, unsigned max, bool already);
