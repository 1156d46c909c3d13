/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/wakeup.h"
#include "sampling/fired.h"

void wakeup_total_arm(TriggerTotal *t, uint64_t total_us, usec_t now_mono_us) {
        *t = (TriggerTotal) {
                .known = true,
                .last_us = total_us,
                .base = { .mono_us = now_mono_us, .total_us = total_us },
        };
}

/* The wakeups at least two windows old move into the base: the newest of them is the tightest
 * reference that still holds all the stall a real firing can have measured. */
static void trigger_total_age(TriggerTotal *t, usec_t window_us, usec_t now_mono_us) {
        size_t old = 0;

        while (old < t->n_recent && now_mono_us - t->recent[old].mono_us >= 2 * window_us)
                old++;
        if (old == 0)
                return;
        t->base = t->recent[old - 1];
        t->n_recent -= old;
        memmove(t->recent, t->recent + old, t->n_recent * sizeof *t->recent);
}

usec_t wakeup_total_newest_mono(const TriggerTotal *t) {
        return t->n_recent > 0 ? t->recent[t->n_recent - 1].mono_us : t->base.mono_us;
}

void wakeup_total_reported(TriggerTotal *t, uint64_t total_us, usec_t mono_us) {
        t->has_reported = true;
        t->reported = (StallPoint) { .mono_us = mono_us, .total_us = total_us };
}

static void trigger_total_record(TriggerTotal *t, uint64_t total_us, usec_t now_mono_us) {
        /* Full only if the kernel fired more often than once a window: dropping the oldest keeps
         * the older base, which can only let more wakeups count. */
        if (t->n_recent == TRIGGER_RECENT_MAX)
                memmove(t->recent, t->recent + 1, --t->n_recent * sizeof *t->recent);
        t->recent[t->n_recent++] = (StallPoint) { .mono_us = now_mono_us, .total_us = total_us };
        t->last_us = total_us;
}

WakeupVerdict wakeup_decide(TriggerTotal *t, const PsiTriggerSpec *spec, const WatchTiming *w, uint64_t total_us,
                            usec_t now_mono_us) {
        if (!t->known) {
                /* Nothing to measure this wakeup against: it counts, and later ones are measured. */
                wakeup_total_arm(t, total_us, now_mono_us);
        } else if (total_us <= t->last_us) {
                return WAKEUP_NO_GROWTH;
        } else {
                /* A trigger armed on a cgroup with stall history fires on that history (its window
                 * starts from a total that does not hold it: kernel-facts.md: trigger-history), as
                 * does one whose last window ended long ago. Both show less than a threshold of
                 * growth here. */
                trigger_total_age(t, spec->window_us, now_mono_us);
                trigger_total_record(t, total_us, now_mono_us);
                if (total_us < t->base.total_us || total_us - t->base.total_us < spec->threshold_us)
                        return WAKEUP_BELOW_THRESHOLD;
                /* Within the two windows a stall weighs in the kernel's check (its window, then a
                 * share of it carried into the next: window_update()'s prev_growth), since the last
                 * incident's window ended: less than WAKEUP_REPORTED_SHARE of the trigger's rate over
                 * that time. */
                if (t->has_reported && now_mono_us > t->reported.mono_us &&
                    now_mono_us - t->reported.mono_us <= 2 * spec->window_us) {
                        FiredCoverage c =
                                fired_coverage(spec, now_mono_us - t->reported.mono_us, true,
                                               total_us >= t->reported.total_us ? total_us - t->reported.total_us : 0);
                        if (c.verdict != FIRED_UNKNOWN && c.seen < WAKEUP_REPORTED_SHARE)
                                return WAKEUP_REPORTED;
                }
        }

        if (w->sampling)
                return WAKEUP_BUSY;
        if (w->has_incident && now_mono_us - w->last_incident_mono_us < w->cooldown_us)
                return WAKEUP_COOLDOWN;
        return WAKEUP_SAMPLE;
}

const char *wakeup_verdict_label(WakeupVerdict v) {
        static const char *const labels[_WAKEUP_VERDICT_MAX] = {
                [WAKEUP_SAMPLE] = "sample",
                [WAKEUP_NO_GROWTH] = "no_growth",
                [WAKEUP_BELOW_THRESHOLD] = "below_threshold",
                [WAKEUP_REPORTED] = "reported",
                [WAKEUP_BUSY] = "busy",
                [WAKEUP_COOLDOWN] = "cooldown",
                [WAKEUP_CAPACITY] = "capacity",
                [WAKEUP_RATE_LIMIT] = "rate_limit",
        };
        return v >= 0 && v < _WAKEUP_VERDICT_MAX ? labels[v] : "unknown";
}

const char *wakeup_verdict_to_string(WakeupVerdict v) {
        switch (v) {
        case WAKEUP_SAMPLE:
                return "sample";
        case WAKEUP_NO_GROWTH:
                return "woke without stall growth";
        case WAKEUP_BELOW_THRESHOLD:
                return "woke with less new stall than its threshold";
        case WAKEUP_REPORTED:
                return "fired again for stall its last incident reported";
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
