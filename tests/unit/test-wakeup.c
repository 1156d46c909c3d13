/* SPDX-License-Identifier: MIT */
#include "agent/wakeup.h"
#include "tests/unit/test-util.h"

/* "some 100ms 2s" */
static const PsiTriggerSpec spec = { .threshold_us = 100 * USEC_PER_MSEC, .window_us = 2 * USEC_PER_SEC };

static void test_spurious_first_event(void **state) {
        TriggerTotal t;
        WatchTiming w = { .cooldown_us = 10 * USEC_PER_SEC };

        wakeup_total_arm(&t, 1000, 1 * USEC_PER_SEC);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 1000, 2 * USEC_PER_SEC), WAKEUP_NO_GROWTH);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 999, 2 * USEC_PER_SEC), WAKEUP_NO_GROWTH);
        assert_int_equal(t.last_us, 1000);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 101000, 3 * USEC_PER_SEC), WAKEUP_SAMPLE);
        assert_int_equal(t.last_us, 101000);
}

/* The measured case (kernel-facts.md: trigger-history): armed on a cgroup with 980 ms of old
 * stall, the trigger fires after 1.55 s with 7 ms new, then again a window later with a little
 * more. Neither is an incident; real stall after them is. */
static void test_history_firing_is_not_an_incident(void **state) {
        TriggerTotal t;
        WatchTiming w = {};
        usec_t t0 = 100 * USEC_PER_SEC;

        wakeup_total_arm(&t, 980000, t0);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 987000, t0 + 1550 * USEC_PER_MSEC), WAKEUP_BELOW_THRESHOLD);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 995000, t0 + 3560 * USEC_PER_MSEC), WAKEUP_BELOW_THRESHOLD);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 1003000, t0 + 5570 * USEC_PER_MSEC), WAKEUP_BELOW_THRESHOLD);
        /* A neighbour arrives: 150 ms within the next window. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 1153000, t0 + 7580 * USEC_PER_MSEC), WAKEUP_SAMPLE);
}

/* A real stall in the first window after arming still counts. */
static void test_first_window_real_stall(void **state) {
        TriggerTotal t;
        WatchTiming w = {};

        wakeup_total_arm(&t, 5 * USEC_PER_SEC, 10 * USEC_PER_SEC);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 5 * USEC_PER_SEC + 400 * USEC_PER_MSEC, 11 * USEC_PER_SEC),
                         WAKEUP_SAMPLE);
}

/* An hour of quiet after a real incident, then a millisecond: the kernel fires on the old window's
 * growth, here measured from the wakeup two windows back. */
static void test_late_small_stall(void **state) {
        TriggerTotal t;
        WatchTiming w = {};

        wakeup_total_arm(&t, 0, 0);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 150000, 2 * USEC_PER_SEC), WAKEUP_SAMPLE);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 151000, 3600 * USEC_PER_SEC), WAKEUP_BELOW_THRESHOLD);
        /* Steady stall of 60 ms a second fires every window: each counts, measured over two
         * windows or more. */
        uint64_t total = 151000;
        for (usec_t now = 3602 * USEC_PER_SEC; now < 3700 * USEC_PER_SEC; now += 2 * USEC_PER_SEC + 4 * USEC_PER_MSEC) {
                total += 120000;
                assert_int_equal(wakeup_decide(&t, &spec, &w, total, now), WAKEUP_SAMPLE);
                assert_true(t.n_recent <= 2);
        }
}

/* More wakeups than the kernel sends in two windows keep the older base (lenient). */
static void test_recent_overflow(void **state) {
        TriggerTotal t;
        WatchTiming w = {};

        wakeup_total_arm(&t, 0, 0);
        for (unsigned i = 1; i <= 10; i++)
                assert_int_equal(wakeup_decide(&t, &spec, &w, i * 20000, i * 100 * USEC_PER_MSEC),
                                 i < 5 ? WAKEUP_BELOW_THRESHOLD : WAKEUP_SAMPLE);
        assert_int_equal(t.n_recent, TRIGGER_RECENT_MAX);
        assert_int_equal(t.base.total_us, 0);
}

static void test_unknown_total_samples(void **state) {
        TriggerTotal t = {};
        WatchTiming w = {};

        /* The total could not be read when arming: the first wakeup counts, and is the arming. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 7, 1 * USEC_PER_SEC), WAKEUP_SAMPLE);
        assert_true(t.known);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 10007, 2 * USEC_PER_SEC), WAKEUP_BELOW_THRESHOLD);
}

static void test_busy_and_cooldown(void **state) {
        TriggerTotal t;
        WatchTiming w = { .sampling = true, .cooldown_us = 10 * USEC_PER_SEC };

        wakeup_total_arm(&t, 0, 0);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 100000, 1 * USEC_PER_SEC), WAKEUP_BUSY);
        /* The growth seen while busy is consumed: the next wakeup must bring more. */
        w.sampling = false;
        assert_int_equal(wakeup_decide(&t, &spec, &w, 100000, 2 * USEC_PER_SEC), WAKEUP_NO_GROWTH);

        w.has_incident = true;
        w.last_incident_mono_us = 3 * USEC_PER_SEC;
        assert_int_equal(wakeup_decide(&t, &spec, &w, 200000, 12 * USEC_PER_SEC), WAKEUP_COOLDOWN);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 300000, 13 * USEC_PER_SEC), WAKEUP_SAMPLE);

        w.cooldown_us = 0;
        w.last_incident_mono_us = 13 * USEC_PER_SEC;
        assert_int_equal(wakeup_decide(&t, &spec, &w, 400000, 13 * USEC_PER_SEC), WAKEUP_SAMPLE);
}

/* A burst of 300 ms makes an incident whose window ends at 12.25 s; the kernel fires again 2 s later
 * (its next window carries the last one's growth): 9 ms more since is under half the trigger's
 * rate over 1.75 s (43.75 ms), a repeat, not an incident. Steady stall at the trigger's
 * rate, or a new burst, is. */
static void test_reported(void **state) {
        TriggerTotal t;
        WatchTiming w = {};
        usec_t t0 = 10 * USEC_PER_SEC;

        wakeup_total_arm(&t, 0, t0);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 300000, t0 + 2 * USEC_PER_SEC), WAKEUP_SAMPLE);
        wakeup_total_reported(&t, 302000, t0 + 2250 * USEC_PER_MSEC);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 311000, t0 + 4 * USEC_PER_SEC), WAKEUP_REPORTED);
        assert_string_equal(wakeup_verdict_label(WAKEUP_REPORTED), "reported");
        /* At the trigger's rate since: an incident. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 311000 + 100000, t0 + 6 * USEC_PER_SEC), WAKEUP_SAMPLE);
        wakeup_total_reported(&t, 411000, t0 + 6250 * USEC_PER_MSEC);
        /* Just under half the rate over 1.75 s: a repeat; at half: not. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 411000 + 43000, t0 + 8 * USEC_PER_SEC), WAKEUP_REPORTED);
        assert_int_equal(wakeup_decide(&t, &spec, &w, 411000 + 44000, t0 + 8 * USEC_PER_SEC + 1), WAKEUP_SAMPLE);
        wakeup_total_reported(&t, 456000, t0 + 8250 * USEC_PER_MSEC);
        /* The kernel's echo of it 2.75 s after (more than a window: the recorder raised the
         * incident early, and the stall weighs in the kernel's check for two windows): 55 ms more,
         * under half the rate over 2.75 s (68.75 ms), is a repeat. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 456000 + 55000, t0 + 11 * USEC_PER_SEC), WAKEUP_REPORTED);
        /* The next burst 8 s later, past the two windows the kernel carries a stall over: a new
         * stall. */
        assert_int_equal(wakeup_decide(&t, &spec, &w, 456000 + 55000 + 150000, t0 + 16 * USEC_PER_SEC), WAKEUP_SAMPLE);
}

static void test_strings(void **state) {
        assert_string_equal(wakeup_verdict_to_string(WAKEUP_NO_GROWTH), "woke without stall growth");
        assert_string_equal(wakeup_verdict_to_string(WAKEUP_COOLDOWN), "fired during its cooldown");
        assert_string_equal(wakeup_verdict_label(WAKEUP_BELOW_THRESHOLD), "below_threshold");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spurious_first_event),
                cmocka_unit_test(test_reported),
                cmocka_unit_test(test_history_firing_is_not_an_incident),
                cmocka_unit_test(test_first_window_real_stall),
                cmocka_unit_test(test_late_small_stall),
                cmocka_unit_test(test_recent_overflow),
                cmocka_unit_test(test_unknown_total_samples),
                cmocka_unit_test(test_busy_and_cooldown),
                cmocka_unit_test(test_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
