/* SPDX-License-Identifier: MIT */
/* Episodes of a node-wide storm: which pressure wakeups of one resource belong together, and
 * whether a sample may reuse the node culprit pass another sample of that resource is running.
 * Pure: the caller reads the clocks and owns the passes; no I/O, no logging.
 *
 * An episode of a resource is a run of wakeups of triggers on that resource that measured real
 * stall growth (every verdict but no_growth and below_threshold: a wakeup held back by a cooldown,
 * the capacity or the rate limit still shows the stall going on), each coming at most two trigger
 * windows (the firing trigger's) after the episode's latest wakeup or the end of its latest sample,
 * whichever is later. A stall that lasts keeps its triggers firing about once a window (at most once:
 * a firing a little more than a window after the last is common, hence two), so it stays one episode
 * however many cgroups it wakes; two quiet windows end it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timeutil.h"

/* episode_format_id() and its NUL. */
#define EPISODE_ID_MAX 64

typedef struct Episode {
        bool open;            /* an episode was seen (it may have ended: see until_mono_us) */
        uint64_t seq;         /* its number since the agent started, from 1 */
        usec_t start_real_us; /* its first wakeup */
        usec_t until_mono_us; /* a wakeup up to here joins it */
} Episode;

/* Notes a wakeup at now (monotonic; now_real_us the same instant on the wall clock) of a trigger
 * whose window is window_us; sample_end_mono_us is the end of the sample it starts, 0 for none.
 * *next_seq numbers the episodes of every resource (the caller's counter, incremented when one
 * opens). Returns true when the wakeup opened a new episode, false when it joined e's. */
bool episode_note(Episode *e, uint64_t *next_seq, usec_t now_mono_us, usec_t now_real_us, usec_t window_us,
                  usec_t sample_end_mono_us);

/* An id unique on the host across agent restarts, in the form of an incident id: boot_id's first 8
 * hex digits (dashes skipped), start_real_us and pid in hex, then kind ('e' an episode, 'p' a
 * shared culprit pass) and seq: "0a1b2c3d-5f3e...-2a-e1". */
void episode_format_id(char kind, usec_t start_real_us, uint64_t seq, const char *boot_id, pid_t pid, char *buf,
                       size_t size);

/* Whether a sample whose culprit scope is the node (and not the sample's own scope) may reuse the
 * open node pass of its resource instead of running one: only a delta sample (sample_ms > 0), and
 * only while that pass's end is not taken yet (its window then overlaps the new sample's). */
bool episode_pass_joinable(bool pass_open, bool pass_ended, uint64_t sample_ms);
