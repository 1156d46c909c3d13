/* SPDX-License-Identifier: MIT */
/* What to do when a trigger wakes the agent: sample, or ignore it (no stall growth, a sample
 * already in flight, cooldown). Pure: the caller reads the pressure file and the clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/timeutil.h"
#include "triggers/trigger.h"

typedef enum WakeupVerdict {
        WAKEUP_SAMPLE,
        WAKEUP_NO_GROWTH,       /* total= did not grow since the last wakeup */
        WAKEUP_BELOW_THRESHOLD, /* total= grew by less than the threshold since arming, or since the
                                 * newest wakeup two windows old: a firing on old stall
                                 * (kernel-facts.md: trigger-history) */
        WAKEUP_REPORTED,        /* within two windows of the end of the trigger's last incident, total= grew
                                 * since by less than half its rate: the kernel firing again for stall that
                                 * incident reported (kernel-facts.md: trigger-latency) */
        WAKEUP_BUSY,            /* this watch is already sampling */
        WAKEUP_COOLDOWN,        /* the watch's last incident is younger than its cooldown */
        WAKEUP_CAPACITY,        /* max_concurrent_samples samples of other watches are in flight */
        WAKEUP_RATE_LIMIT,      /* max_incidents_per_minute were taken in the last minute */
        _WAKEUP_VERDICT_MAX,
} WakeupVerdict;

/* A reading of a trigger's stall total (the fired line's total=) and when it was taken. */
typedef struct StallPoint {
        usec_t mono_us;
        uint64_t total_us;
} StallPoint;

#define TRIGGER_RECENT_MAX 4
/* A firing within two windows of an incident's end with less new stall than this share of the
 * trigger's rate over the time since is that incident's stall carried over (WAKEUP_REPORTED). Half,
 * stricter than an incident's own rule (sampling/fired.h): the kernel's carried-over firing over a
 * watched service's own background stall measured a third of the rate here. */
#define WAKEUP_REPORTED_SHARE 0.5

/* What a trigger's wakeups are measured against. A trigger fires at most once per window, so the
 * wakeups younger than two windows fit in recent[]. */
typedef struct TriggerTotal {
        bool known;                            /* the total was read when arming */
        uint64_t last_us;                      /* total= at the last wakeup (or when arming) */
        StallPoint base;                       /* arming, or the newest wakeup at least two windows old */
        StallPoint recent[TRIGGER_RECENT_MAX]; /* later wakeups, oldest first */
        size_t n_recent;
        bool has_reported;   /* an incident of this trigger was written: */
        StallPoint reported; /* ... the total at the end of its window */
} TriggerTotal;

typedef struct WatchTiming {
        bool sampling;
        bool has_incident;
        usec_t last_incident_mono_us;
        usec_t cooldown_us;
} WatchTiming;

/* Records the total read right after the trigger was written (arming, re-arming, discovery). */
void wakeup_total_arm(TriggerTotal *t, uint64_t total_us, usec_t now_mono_us);

/* When the trigger last woke with stall growth (whatever the verdict), or was armed. */
usec_t wakeup_total_newest_mono(const TriggerTotal *t);

/* Records the end of the window of an incident of the trigger: the total then, and when. */
void wakeup_total_reported(TriggerTotal *t, uint64_t total_us, usec_t mono_us);

/* Decides what a wakeup of a trigger armed with spec is. A wakeup counts only if the total grew by
 * at least spec->threshold_us since the base: the arming, or the newest earlier wakeup at least
 * two windows old: stricter than the kernel's window, which can carry stall over a quiet gap
 * (kernel-facts.md: trigger-history). The first wakeup of a trigger whose total could not be read when
 * arming counts, and becomes its arming. A wakeup whose total grew since the end of the trigger's
 * last incident window, at most a window ago, by less than WAKEUP_REPORTED_SHARE of what the
 * trigger's rate gives over that time is REPORTED: the kernel's window carries the stall of the previous one into the
 * next (window_update()'s prev_growth), and fires again for what that incident already measured. Records total_us
 * whenever it grew, whatever the verdict. */
WakeupVerdict wakeup_decide(TriggerTotal *t, const PsiTriggerSpec *spec, const WatchTiming *w, uint64_t total_us,
                            usec_t now_mono_us);

const char *wakeup_verdict_to_string(WakeupVerdict v);

/* The metrics label: "sample", "no_growth", "below_threshold", "busy", "cooldown", "capacity",
 * "rate_limit". */
const char *wakeup_verdict_label(WakeupVerdict v);

/* Verdicts that hold an incident back (the metrics' "suppressed" reasons) are the last ones. */
#define WAKEUP_SUPPRESSED_FIRST WAKEUP_COOLDOWN
