/* SPDX-License-Identifier: MIT */
#include "agent/ratelimit.h"
#include "tests/unit/test-util.h"

/* max_incidents_per_minute: at most max in any 60 s, the rest dropped and counted. */
static void test_rate_limit(void **state) {
        RateLimit r;
        usec_t t0 = 1000 * USEC_PER_SEC;

        assert_int_equal(rate_limit_init(&r, 3), 0);
        assert_true(rate_limit_admit(&r, t0));
        assert_true(rate_limit_admit(&r, t0 + 1 * USEC_PER_SEC));
        assert_true(rate_limit_admit(&r, t0 + 2 * USEC_PER_SEC));
        assert_false(rate_limit_admit(&r, t0 + 3 * USEC_PER_SEC));
        assert_false(rate_limit_admit(&r, t0 + 59 * USEC_PER_SEC));
        assert_int_equal(r.suppressed_since_incident, 2);
        /* A minute after the first, one more fits; then the second's minute must pass. */
        assert_true(rate_limit_admit(&r, t0 + 60 * USEC_PER_SEC));
        assert_false(rate_limit_admit(&r, t0 + 60 * USEC_PER_SEC + 1));
        assert_true(rate_limit_admit(&r, t0 + 61 * USEC_PER_SEC));
        rate_limit_done(&r);

        assert_int_equal(rate_limit_init(&r, 0), 0); /* no limit */
        for (int i = 0; i < 1000; i++)
                assert_true(rate_limit_admit(&r, t0));
        assert_int_equal(r.suppressed_since_incident, 0);
        rate_limit_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rate_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
