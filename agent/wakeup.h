/* SPDX-License-Identifier: MIT */
/* What to do when a trigger wakes the agent: sample, or ignore it (no stall growth, a sample
 * already in flight, cooldown). Pure: the caller reads the pressure file and the clock. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/timeutil.h"

typedef enum WakeupVerdict {
        WAKEUP_SAMPLE,
        WAKEUP_NO_GROWTH,  /* total= did not grow: the spurious first event of an unprivileged trigger */
        WAKEUP_BUSY,       /* this watch is already sampling */
        WAKEUP_COOLDOWN,   /* the watch's last incident is younger than its cooldown */
        WAKEUP_CAPACITY,   /* max_concurrent_samples samples of other watches are in flight */
        WAKEUP_RATE_LIMIT, /* max_incidents_per_minute were taken in the last minute */
        _WAKEUP_VERDICT_MAX,
} WakeupVerdict;

typedef struct TriggerTotal {
        bool known;
        uint64_t total_us; /* the fired line's total= when last seen */
} TriggerTotal;

typedef struct WatchTiming {
        bool sampling;
        bool has_incident;
        usec_t last_incident_mono_us;
        usec_t cooldown_us;
} WatchTiming;

/* Decides, and records total_us in *t whenever it grew (so growth is measured from the previous
 * wakeup, busy or not). */
WakeupVerdict wakeup_decide(TriggerTotal *t, const WatchTiming *w, uint64_t total_us, usec_t now_mono_us);

const char *wakeup_verdict_to_string(WakeupVerdict v);

/* The metrics label: "sample", "no_growth", "busy", "cooldown", "capacity", "rate_limit". */
const char *wakeup_verdict_label(WakeupVerdict v);

/* Verdicts that hold an incident back (the metrics' "suppressed" reasons) are the last ones. */
#define WAKEUP_SUPPRESSED_FIRST WAKEUP_COOLDOWN

/* The global limit on incidents per minute: a ring of the last `max` admission times. */
typedef struct RateLimit {
        unsigned max;  /* 0: no limit */
        usec_t *times; /* ring of max entries */
        size_t n, next;
        uint64_t suppressed_since_incident; /* dropped since the last incident was written */
} RateLimit;

/* 0 or -ENOMEM. */
int rate_limit_init(RateLimit *r, unsigned max_per_minute);
/* True when one more incident may be taken at now (and records it); false when max were taken in
 * the last 60 s (and counts it as suppressed). */
bool rate_limit_admit(RateLimit *r, usec_t now_mono_us);
void rate_limit_done(RateLimit *r);
