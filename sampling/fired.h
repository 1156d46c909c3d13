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
        FIRED_BLOCKED,  /* it saw less, but a thread was still blocked on the resource at its end */
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

/* c (fired_coverage()) with what the sample found blocked at its end: blocked_us, the longest that
 * a thread of the sampled scope had been in D at the sample's last look, on a wait that counts for
 * an io or memory trigger's resource (sampling/rank.h: ranking_add_blocked(); 0: none). A window
 * that saw the stall "pass" (FIRED_PASSED) while such a thread had been blocked for at least
 * FIRED_SEEN_SHARE_MIN of expected_us (the "passed" line: the wait alone is as long as the stall
 * the window needed) has not: FIRED_BLOCKED. The pressure total counts only io_schedule()'s sleeps
 * and memory stall sections (kernel-facts.md: wait-resource): a writer held in the journal
 * (add_transaction_credits()) or on a lock behind the io sleeps in D in plain schedule(), in no
 * pressure. Any other verdict is kept. */
FiredCoverage fired_coverage_blocked(FiredCoverage c, uint64_t blocked_us);

/* "measured", "passed", "blocked", "unknown". */
const char *fired_verdict_to_string(FiredVerdict v);
