/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "agent/ratelimit.h"

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
