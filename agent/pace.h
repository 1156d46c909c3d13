/* SPDX-License-Identifier: MIT */
/* The pace of a costly, repeatable job (a walk of the cgroup tree after a change): once done, it
 * may start again only when nine times what it took (at least min_us, at most PACE_MAX_US) has
 * passed since it ended, so that it takes at most a tenth of the loop however often it is asked
 * for. Asked for too early, a timer runs it when it may. */
#pragma once

#include <ev.h>
#include <stdbool.h>

#include "base/timeutil.h"

#define PACE_FACTOR 9
#define PACE_MAX_US (10 * USEC_PER_SEC)

typedef struct Pace {
        ev_timer timer;
        usec_t next_us; /* monotonic: the earliest the job may start */
} Pace;

/* cb runs the job when the timer fires (t->data is data). */
void pace_init(Pace *p, void (*cb)(struct ev_loop *loop, ev_timer *t, int revents), void *data);

/* Whether the job may run now; if not, the timer is armed for when it may. */
bool pace_ready(struct ev_loop *loop, Pace *p);

/* The job ran from start (monotonic) until now: the timer is stopped, the next start set. */
void pace_done(struct ev_loop *loop, Pace *p, usec_t start, usec_t min_us);

void pace_stop(struct ev_loop *loop, Pace *p);
