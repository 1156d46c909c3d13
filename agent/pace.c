/* SPDX-License-Identifier: MIT */
#include "agent/pace.h"
#include "base/macro.h"

void pace_init(Pace *p, void (*cb)(struct ev_loop *loop, ev_timer *t, int revents), void *data) {
        ev_timer_init(&p->timer, cb, 0., 0.);
        p->timer.data = data;
        p->next_us = 0;
}

bool pace_ready(struct ev_loop *loop, Pace *p) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (now >= p->next_us)
                return true;
        if (!ev_is_active(&p->timer)) {
                /* libev counts the delay from its cached ev_now(), which may be older than now:
                 * the timer would fire before next_us */
                ev_now_update(loop);
                ev_timer_set(&p->timer, (double) (p->next_us - now) / USEC_PER_SEC, 0.);
                ev_timer_start(loop, &p->timer);
        }
        return false;
}

void pace_done(struct ev_loop *loop, Pace *p, usec_t start, usec_t min_us) {
        usec_t end = now_usec(CLOCK_MONOTONIC), took = end - start;

        ev_timer_stop(loop, &p->timer);
        p->next_us = end + MIN(MAX(PACE_FACTOR * took, min_us), (usec_t) PACE_MAX_US);
}

void pace_stop(struct ev_loop *loop, Pace *p) {
        ev_timer_stop(loop, &p->timer);
}
