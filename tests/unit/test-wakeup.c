/* SPDX-License-Identifier: MIT */
#include "agent/wakeup.h"
#include "tests/unit/test-util.h"

#define S USEC_PER_SEC

static void test_spurious_first_event(void **state) {
        TriggerTotal t = { .known = true, .total_us = 1000 }; /* read when arming */
        WatchTiming w = { .cooldown_us = 10 * S };

        assert_int_equal(wakeup_decide(&t, &w, 1000, 5 * S), WAKEUP_NO_GROWTH);
        assert_int_equal(wakeup_decide(&t, &w, 999, 5 * S), WAKEUP_NO_GROWTH);
        assert_int_equal(t.total_us, 1000);
        assert_int_equal(wakeup_decide(&t, &w, 1500, 6 * S), WAKEUP_SAMPLE);
        assert_int_equal(t.total_us, 1500);
}

static void test_unknown_total_samples(void **state) {
        TriggerTotal t = {};
        WatchTiming w = {};

        /* The total could not be read when arming: the first wakeup counts. */
        assert_int_equal(wakeup_decide(&t, &w, 0, 1 * S), WAKEUP_SAMPLE);
        assert_true(t.known);
}

static void test_busy_and_cooldown(void **state) {
        TriggerTotal t = { .known = true, .total_us = 0 };
        WatchTiming w = { .sampling = true, .cooldown_us = 10 * S };

        assert_int_equal(wakeup_decide(&t, &w, 100, 1 * S), WAKEUP_BUSY);
        /* The growth seen while busy is consumed: the next wakeup must bring more. */
        w.sampling = false;
        assert_int_equal(wakeup_decide(&t, &w, 100, 2 * S), WAKEUP_NO_GROWTH);

        w.has_incident = true;
        w.last_incident_mono_us = 3 * S;
        assert_int_equal(wakeup_decide(&t, &w, 200, 12 * S), WAKEUP_COOLDOWN);
        assert_int_equal(wakeup_decide(&t, &w, 300, 13 * S), WAKEUP_SAMPLE);

        w.cooldown_us = 0;
        w.last_incident_mono_us = 13 * S;
        assert_int_equal(wakeup_decide(&t, &w, 400, 13 * S), WAKEUP_SAMPLE);
}

static void test_strings(void **state) {
        assert_string_equal(wakeup_verdict_to_string(WAKEUP_NO_GROWTH), "woke without stall growth");
        assert_string_equal(wakeup_verdict_to_string(WAKEUP_COOLDOWN), "fired during its cooldown");
}

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
                cmocka_unit_test(test_spurious_first_event),
                cmocka_unit_test(test_unknown_total_samples),
                cmocka_unit_test(test_busy_and_cooldown),
                cmocka_unit_test(test_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
