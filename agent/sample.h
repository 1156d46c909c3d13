/* SPDX-License-Identifier: MIT */
/* A watch's sample, from its start to its pressure incident: the scope (agent/core.h), what it
 * borrows (a place, an "on what", a shared culprit pass: agent/pools.h), the recorder's entry it may
 * start from (lent by agent/recording.c, never stopped here), the incident it ends in
 * (agent/report.h), and the one end that gives everything back, whether the sample was reported,
 * failed or was dropped. Logs each error once, where it is handled. */
#pragma once

#include "agent/core.h"

struct Recorder;

/* w's sampler, its done callback this module's. */
void sample_init(Watch *w);

/* t of w fired and its wakeup is a sample: it starts now, from rec's ring when rec records what it
 * samples (recorder_matches(); NULL: after the wakeup). A sample that cannot start is logged and
 * given back at once. */
void sample_start(Watch *w, Trigger *t, struct Recorder *rec);

/* Stops w's sample in flight, if any, without an incident, and says why in the log. */
void sample_drop(Watch *w, const char *why);
