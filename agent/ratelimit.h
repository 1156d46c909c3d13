/* SPDX-License-Identifier: MIT */
/* max_incidents_per_minute: the global limit on incidents, pressure and kill alike, as a ring of
 * the last `max` admission times, and how many were dropped since the last incident was written
 * (the next incident's "suppressed"). Pure: the caller reads the clock; no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/timeutil.h"

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
