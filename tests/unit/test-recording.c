/* SPDX-License-Identifier: MIT */
/* The recorder's decisions on the loop's side (agent/recording.h): how often and how far back a
 * watch is recorded, and which watches may record. */
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_period_and_depth),
                cmocka_unit_test(test_admit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
