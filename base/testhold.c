/* SPDX-License-Identifier: MIT */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/testhold.h"

#define TEST_HOLD_POINTS 8

void test_hold(const char *point) {
        static const char *done[TEST_HOLD_POINTS];
        static size_t n_done;
        const char *list = getenv("PSIDIAG_TEST_HOLD");
        size_t len = strlen(point);

        if (!list)
                return;
        for (size_t i = 0; i < n_done; i++)
                if (strcmp(done[i], point) == 0)
                        return;
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ",");
                if (n == len && memcmp(p, point, len) == 0) {
                        if (n_done < TEST_HOLD_POINTS)
                                done[n_done++] = point;
                        log_info("test hold: %s", point);
                        (void) raise(SIGSTOP);
                        return;
                }
                p += n;
                if (*p == ',')
                        p++;
        }
}
