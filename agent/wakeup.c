/* SPDX-License-Identifier: MIT */
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
        case _WAKEUP_VERDICT_MAX:
                break;
        }
        return "unknown";
}
