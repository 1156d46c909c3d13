/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "agent/wakeup.h"

WakeupVerdict wakeup_decide(TriggerTotal *t, const WatchTiming *w, uint64_t total_us, usec_t now_mono_us) {
        /* Unprivileged triggers can fire once right after arming with no new stall (their state
         * starts from the averaging worker's last snapshot); real firings always add stall time. */
        if (t->known && total_us <= t->total_us)
                return WAKEUP_NO_GROWTH;
        t->known = true;
        t->total_us = total_us;

        if (w->sampling)
                return WAKEUP_BUSY;
        if (w->has_incident && now_mono_us - w->last_incident_mono_us < w->cooldown_us)
                return WAKEUP_COOLDOWN;
        return WAKEUP_SAMPLE;
}

const char *wakeup_verdict_label(WakeupVerdict v) {
        static const char *const labels[_WAKEUP_VERDICT_MAX] = {
                [WAKEUP_SAMPLE] = "sample",     [WAKEUP_NO_GROWTH] = "no_growth", [WAKEUP_BUSY] = "busy",
                [WAKEUP_COOLDOWN] = "cooldown", [WAKEUP_CAPACITY] = "capacity",   [WAKEUP_RATE_LIMIT] = "rate_limit",
        };
        return v >= 0 && v < _WAKEUP_VERDICT_MAX ? labels[v] : "unknown";
}

const char *wakeup_verdict_to_string(WakeupVerdict v) {
        switch (v) {
        case WAKEUP_SAMPLE:
                return "sample";
        case WAKEUP_NO_GROWTH:
                return "woke without stall growth";
        case WAKEUP_BUSY:
                return "fired during a sample";
        case WAKEUP_COOLDOWN:
                return "fired during its cooldown";
        case WAKEUP_CAPACITY:
                return "fired while max_concurrent_samples samples ran";
        case WAKEUP_RATE_LIMIT:
                return "fired beyond max_incidents_per_minute";
        case _WAKEUP_VERDICT_MAX:
                break;
        }
        return "unknown";
}

int rate_limit_init(RateLimit *r, unsigned max_per_minute) {
        *r = (RateLimit) { .max = max_per_minute };
        if (max_per_minute == 0)
                return 0;
        r->times = calloc(max_per_minute, sizeof *r->times);
        return r->times ? 0 : -ENOMEM;
}

bool rate_limit_admit(RateLimit *r, usec_t now) {
        if (r->max == 0)
                return true;
        /* Full ring: the oldest of the last max admissions must be a minute old. */
        if (r->n == r->max && now - r->times[r->next] < 60 * USEC_PER_SEC) {
                r->suppressed_since_incident++;
                return false;
        }
        r->times[r->next] = now;
        r->next = (r->next + 1) % r->max;
        if (r->n < r->max)
                r->n++;
        return true;
}

void rate_limit_done(RateLimit *r) {
        free(r->times);
        *r = (RateLimit) {};
}
