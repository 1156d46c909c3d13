/* SPDX-License-Identifier: MIT */
/* The recorder's decisions on the loop's side (agent/recording.h): how often and how far back a
 * watch is recorded, which watches may record, and when it raises a wakeup the kernel kept back. */
#include "agent/recording.h"
#include "sampling/recorder.h"
#include "tests/unit/test-util.h"

/* A quarter of the longest window, at least the shortest period; the ring reaches that window
 * plus the 2 s an unprivileged trigger can be late. */
static void test_period_and_depth(void **state) {
        assert_int_equal(recording_period_ms(2 * USEC_PER_SEC), RECORDER_PERIOD_MIN_MS);
        assert_int_equal(recording_period_ms(500 * USEC_PER_MSEC), RECORDER_PERIOD_MIN_MS);
        assert_int_equal(recording_period_ms(4 * USEC_PER_SEC), 1000);
        assert_int_equal(recording_period_ms(10 * USEC_PER_SEC), 2500);
        assert_int_equal(recording_depth_ms(2 * USEC_PER_SEC), 4000);
        assert_int_equal(recording_depth_ms(10 * USEC_PER_SEC), 12000);
        /* The ring a 10 s window needs fits: depth / period + 2 entries. */
        assert_true(recording_depth_ms(10 * USEC_PER_SEC) / recording_period_ms(10 * USEC_PER_SEC) + 2 <=
                    RECORDER_ENTRIES_MAX);
        assert_true(recording_depth_ms(2 * USEC_PER_SEC) / recording_period_ms(2 * USEC_PER_SEC) + 2 <=
                    RECORDER_ENTRIES_MAX);
}

/* record_s 0 records nothing; past the bound only a watch already recording goes on. */
static void test_admit(void **state) {
        assert_false(recording_admit(0, 0, 4, false));
        assert_false(recording_admit(0, 1, 4, true));
        assert_true(recording_admit(60, 0, 4, false));
        assert_true(recording_admit(60, 3, 4, false));
        assert_false(recording_admit(60, 4, 4, false));
        assert_true(recording_admit(60, 4, 4, true));
}

/* As the kernel: the threshold's worth of growth over the window, once a window at most (from the
 * newest wakeup, or arming). Stall an incident reported, carried on, is the raised wakeup's
 * verdict (WAKEUP_REPORTED), as it is for the kernel's: one rule, in agent/wakeup.c. */
static void test_should_fire(void **state) {
        PsiTriggerSpec spec = { .resource = PSI_RESOURCE_CPU,
                                .stall = PSI_STALL_SOME,
                                .threshold_us = 100 * US_PER_MS,
                                .window_us = 2 * USEC_PER_SEC };
        TriggerTotal t = {};

        wakeup_total_arm(&t, 1000, 10 * USEC_PER_SEC);
        /* Under the threshold, or within a window of arming: no. */
        assert_false(recording_should_fire(99 * US_PER_MS, &spec, &t, 20 * USEC_PER_SEC));
        assert_false(recording_should_fire(300 * US_PER_MS, &spec, &t, 11 * USEC_PER_SEC));
        assert_true(recording_should_fire(100 * US_PER_MS, &spec, &t, 12 * USEC_PER_SEC));
        /* A wakeup at 30 s (the kernel's, or one raised): not again before 32 s. */
        assert_int_equal(wakeup_decide(&t, &spec, &(WatchTiming) {}, 600 * US_PER_MS, 30 * USEC_PER_SEC),
                         WAKEUP_SAMPLE);
        assert_false(recording_should_fire(300 * US_PER_MS, &spec, &t, 31 * USEC_PER_SEC));
        assert_true(recording_should_fire(300 * US_PER_MS, &spec, &t, 32 * USEC_PER_SEC));
        /* Its incident's window ended at 31 s with the total at 700 ms; the ring restarted there.
         * Raised at 33 s with 20 ms of stall since: the incident's stall carried on, no sample. */
        wakeup_total_reported(&t, 700 * US_PER_MS, 31 * USEC_PER_SEC);
        assert_true(recording_should_fire(100 * US_PER_MS, &spec, &t, 33 * USEC_PER_SEC));
        assert_int_equal(wakeup_decide(&t, &spec, &(WatchTiming) {}, 720 * US_PER_MS, 33 * USEC_PER_SEC),
                         WAKEUP_REPORTED);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_period_and_depth),
                cmocka_unit_test(test_admit),
                cmocka_unit_test(test_should_fire),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
