/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/pools.h"
#include "agent/recording.h"
#include "agent/stall.h"
#include "base/log.h"
#include "probes/pressure.h"

/* The global limits come after the watch's own: a wakeup its cooldown ignores is not an incident
 * the rate limit has to count. */
static WakeupVerdict limit(Agent *a, WakeupVerdict verdict) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (verdict != WAKEUP_SAMPLE)
                return verdict;
        if (pools_full(a)) {
                a->rate.suppressed_since_incident++;
                return WAKEUP_CAPACITY;
        }
        if (rate_limit_admit(&a->rate, now))
                return WAKEUP_SAMPLE;
        /* Once a minute at most: the metrics and the next incident carry the counts. */
        if (log_ratelimit_pass(&a->rate_warned, now))
                log_warning("more than %u incidents in a minute (max_incidents_per_minute): dropping and counting the "
                            "next ones",
                            a->config->max_incidents_per_minute);
        return WAKEUP_RATE_LIMIT;
}

/* A wakeup with real growth, held back or not: the stall goes on. */
static void goes_on(Watch *w, Trigger *t, WakeupVerdict verdict) {
        Agent *a = w->agent;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        core_hooks_wakeup(a, w, t, verdict); /* a kill window goes on */
        recording_wakeup(w);
        Episode *e = pools_episode(a, t->effective.resource);
        if (episode_note(e, &a->counters.episodes, now, now_usec(CLOCK_REALTIME), t->effective.window_us,
                         verdict == WAKEUP_SAMPLE ? now + w->cfg->sample_ms * USEC_PER_MSEC : 0))
                log_debug("episode %" PRIu64 " of %s pressure begins with %s", e->seq,
                          psi_resource_to_string(t->effective.resource), w->name);
        if (verdict == WAKEUP_SAMPLE)
                episode_format_id('e', e->start_real_us, e->seq, a->rt.host.boot_id, getpid(), w->episode,
                                  sizeof w->episode);
}

void stall_trigger_fired(Trigger *t) {
        Watch *w = t->watch;
        Agent *a = w->agent;
        PressureStats ps;
        int r;

        /* A wakeup is measured by the growth of the fired line's total=: none (no_growth), or less
         * than the threshold since arming (a firing on the cgroup's stall history). */
        r = pressure_read_fd(t->fd, &ps);
        if (r < 0 || !ps.has[t->effective.stall]) {
                log_debug_errno(r, "cannot read %s pressure of %s", psi_resource_to_string(t->effective.resource),
                                w->name);
                return;
        }
        uint64_t total = ps.line[t->effective.stall].total_us;
        WakeupVerdict verdict =
                limit(a, wakeup_decide(&t->total, &t->effective, &w->timing, total, now_usec(CLOCK_MONOTONIC)));
        a->counters.wakeups[verdict]++;
        if (verdict != WAKEUP_NO_GROWTH && verdict != WAKEUP_BELOW_THRESHOLD && verdict != WAKEUP_REPORTED)
                goes_on(w, t, verdict);
        if (verdict != WAKEUP_SAMPLE) {
                health_update(a);
                log_debug("trigger \"%s\" on %s %s; ignored", t->cfg->text, w->name, wakeup_verdict_to_string(verdict));
                return;
        }
        recording_sample(w, t);
}
