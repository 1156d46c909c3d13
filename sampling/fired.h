/* SPDX-License-Identifier: MIT */
/* What a sample saw of the stall that fired its trigger. A trigger fires for stall that has
 * already happened (kernel-facts.md: trigger-latency): when the sample's own window holds only a
 * small part of it, the incident must say so rather than name culprits of a quiet second. Pure:
 * no I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "triggers/trigger.h"

/* A sample "saw" the stall when it measured at least this share of what the trigger's rate gives
 * over the sample's duration (threshold * duration / window). Under it the stall had passed. A
 * quarter: a stall that fires a trigger can run at half its rate in the next second (PostgreSQL
 * beside stress-ng here: 49 ms of a 100 ms/s trigger's rate). */
#define FIRED_SEEN_SHARE_MIN 0.25

typedef enum FiredVerdict {
        FIRED_UNKNOWN,  /* no stall measured (no delta sample, or no pressure at both ends) */
        FIRED_MEASURED, /* the window saw at least FIRED_SEEN_SHARE_MIN of the trigger's rate */
        FIRED_PASSED,   /* it saw less: the stall had passed before the sample */
        _FIRED_VERDICT_MAX,
} FiredVerdict;

typedef struct FiredCoverage {
        FiredVerdict verdict;
        uint64_t expected_us; /* threshold_us * duration_us / window_us */
        double seen;          /* stall_us / expected_us; 0 when unknown */
} FiredCoverage;

/* Compares the stall a window of duration_us measured (has_stall false: none measured) with the
 * trigger that fired. Never fails: a zero window or duration gives FIRED_UNKNOWN. */
FiredCoverage fired_coverage(const PsiTriggerSpec *trigger, uint64_t duration_us, bool has_stall, uint64_t stall_us);

/* "measured", "passed", "unknown". */
const char *fired_verdict_to_string(FiredVerdict v);
