/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/timeutil.h"

usec_t now_usec(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / NSEC_PER_USEC;
}

char *format_rfc3339_us(usec_t t, char *buf, size_t size) {
        time_t sec = (time_t) (t / USEC_PER_SEC);
        struct tm tm;

        if (!gmtime_r(&sec, &tm)) {
                snprintf(buf, size, "1970-01-01T00:00:00.000000Z");
                return buf;
        }
        snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned) (t % USEC_PER_SEC));
        return buf;
}

int parse_duration_us(const char *s, usec_t *ret) {
        static const struct {
                const char *suffix;
                usec_t mult;
        } units[] = {
                { "us", 1 },
                { "ms", USEC_PER_MSEC },
                { "s", USEC_PER_SEC },
        };
        uint64_t whole = 0, frac = 0, frac_div = 1;
        const char *p = s;

        if (!s || !isdigit((unsigned char) *p))
                return -EINVAL;

        for (; isdigit((unsigned char) *p); p++) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (frac_div >= 1000000000ULL)
                                return -ERANGE;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                        frac_div *= 10;
                }
        }

        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
                usec_t m = units[i].mult;

                if (strcmp(p, units[i].suffix) != 0)
                        continue;
                if (whole > UINT64_MAX / m)
                        return -ERANGE;
                /* A fraction that does not land on a whole microsecond is refused rather than
                 * silently rounded: trigger thresholds are written to the kernel in us. */
                if ((frac * m) % frac_div != 0)
                        return -ERANGE;
                *ret = whole * m + frac * m / frac_div;
                return 0;
        }
        return -EINVAL;
}
