/* SPDX-License-Identifier: MIT */
#include "sampling/fired.h"

FiredCoverage fired_coverage(const PsiTriggerSpec *trigger, uint64_t duration_us, bool has_stall, uint64_t stall_us) {
        FiredCoverage c = { .verdict = FIRED_UNKNOWN };

        if (!trigger->window_us || !trigger->threshold_us || !duration_us)
                return c;
        /* In 128 bits: a threshold of 10 s times a sample of days still fits. */
        c.expected_us = (uint64_t) ((unsigned __int128) trigger->threshold_us * duration_us / trigger->window_us);
        if (!has_stall || !c.expected_us)
                return c;
        c.seen = (double) stall_us / (double) c.expected_us;
        c.verdict = c.seen >= FIRED_SEEN_SHARE_MIN ? FIRED_MEASURED : FIRED_PASSED;
        return c;
}

FiredCoverage fired_coverage_blocked(FiredCoverage c, uint64_t blocked_us) {
        if (c.verdict == FIRED_PASSED && (double) blocked_us >= FIRED_SEEN_SHARE_MIN * (double) c.expected_us)
                c.verdict = FIRED_BLOCKED;
        return c;
}

const char *fired_verdict_to_string(FiredVerdict v) {
        static const char *const names[_FIRED_VERDICT_MAX] = {
                [FIRED_UNKNOWN] = "unknown",
                [FIRED_MEASURED] = "measured",
                [FIRED_PASSED] = "passed",
                [FIRED_BLOCKED] = "blocked",
        };

        return v >= 0 && v < _FIRED_VERDICT_MAX ? names[v] : "unknown";
}
