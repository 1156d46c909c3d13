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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spurious_first_event),
                cmocka_unit_test(test_unknown_total_samples),
                cmocka_unit_test(test_busy_and_cooldown),
                cmocka_unit_test(test_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
