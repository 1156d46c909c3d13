/* SPDX-License-Identifier: MIT */
#include <stdint.h>

#include "sampling/fired.h"
#include "tests/unit/test-util.h"

static const PsiTriggerSpec web = {
        .resource = PSI_RESOURCE_CPU, .stall = PSI_STALL_SOME, .threshold_us = 100000, .window_us = 2000000
};

/* The measured cases of the burst next door: a trigger of 100 ms in 2 s, a sample of 1 s after the
 * wakeup saw 1.6-2.6 ms: at the trigger's rate it would have seen 50 ms. */
static void test_passed(void **state) {
        FiredCoverage c = fired_coverage(&web, 1000000, true, 2600);

        assert_int_equal(c.verdict, FIRED_PASSED);
        assert_int_equal(c.expected_us, 50000);
        assert_true(c.seen > 0.051 && c.seen < 0.053);
        assert_string_equal(fired_verdict_to_string(c.verdict), "passed");
        /* The tail of a sustained load under the default trigger (500 ms in 2 s): 2.7 ms seen. */
        c = fired_coverage(&(PsiTriggerSpec) { .threshold_us = 500000, .window_us = 2000000 }, 1002000, true, 2700);
        assert_int_equal(c.verdict, FIRED_PASSED);
        assert_int_equal(c.expected_us, 250500);
}

/* The boundary is a quarter of the trigger's rate, inclusive; a sustained stall is far above it. */
static void test_measured(void **state) {
        assert_int_equal(fired_coverage(&web, 1000000, true, 12500).verdict, FIRED_MEASURED);
        assert_int_equal(fired_coverage(&web, 1000000, true, 12499).verdict, FIRED_PASSED);
        assert_int_equal(fired_coverage(&web, 1000000, true, 900000).verdict, FIRED_MEASURED);
        /* A window longer than the trigger's expects more. */
        assert_int_equal(fired_coverage(&web, 4000000, true, 49999).verdict, FIRED_PASSED);
        assert_int_equal(fired_coverage(&web, 4000000, true, 50000).verdict, FIRED_MEASURED);
        assert_string_equal(fired_verdict_to_string(FIRED_MEASURED), "measured");
}

/* Nothing measured, or nothing to compare with: unknown, never passed. */
static void test_unknown(void **state) {
        FiredCoverage c = fired_coverage(&web, 1000000, false, 0);

        assert_int_equal(c.verdict, FIRED_UNKNOWN);
        assert_int_equal(c.expected_us, 50000);
        assert_int_equal(fired_coverage(&web, 0, true, 0).verdict, FIRED_UNKNOWN);
        assert_int_equal(fired_coverage(&(PsiTriggerSpec) { .threshold_us = 1 }, 1000000, true, 0).verdict,
                         FIRED_UNKNOWN);
        assert_int_equal(
                fired_coverage(&(PsiTriggerSpec) { .threshold_us = 1, .window_us = 2000000 }, 1000000, true, 0).verdict,
                FIRED_UNKNOWN);
        /* No overflow for a long window of a large threshold. */
        c = fired_coverage(&(PsiTriggerSpec) { .threshold_us = 10000000, .window_us = 10000000 }, UINT64_MAX / 2, true,
                           0);
        assert_int_equal(c.verdict, FIRED_PASSED);
        assert_true(c.expected_us == UINT64_MAX / 2);
        assert_string_equal(fired_verdict_to_string(FIRED_UNKNOWN), "unknown");
        assert_string_equal(fired_verdict_to_string((FiredVerdict) 99), "unknown");
}

/* trixie's writeback case (tests/vm/waits.py): an fsync writer held 486 ms in jbd2's
 * add_transaction_credits() at the sample's end, a wait in no io pressure, while the window of
 * "io some 50ms 2s" saw under the 6.25 ms line. Blocked that long, the stall had not passed; a
 * thread blocked for less than the line says nothing, and any other verdict stays. */
static void test_blocked(void **state) {
        static const PsiTriggerSpec db = {
                .resource = PSI_RESOURCE_IO, .stall = PSI_STALL_SOME, .threshold_us = 50000, .window_us = 2000000
        };
        FiredCoverage c = fired_coverage(&db, 1000000, true, 3100);

        assert_int_equal(c.verdict, FIRED_PASSED);
        assert_int_equal(c.expected_us, 25000);
        FiredCoverage b = fired_coverage_blocked(c, 486000);
        assert_int_equal(b.verdict, FIRED_BLOCKED);
        assert_string_equal(fired_verdict_to_string(b.verdict), "blocked");
        assert_int_equal(b.expected_us, c.expected_us);
        assert_true(b.seen == c.seen);
        /* The line, inclusive: a quarter of expected_us. */
        assert_int_equal(fired_coverage_blocked(c, 6250).verdict, FIRED_BLOCKED);
        assert_int_equal(fired_coverage_blocked(c, 6249).verdict, FIRED_PASSED);
        assert_int_equal(fired_coverage_blocked(c, 0).verdict, FIRED_PASSED);
        assert_int_equal(fired_coverage_blocked(fired_coverage(&db, 1000000, true, 20000), 486000).verdict,
                         FIRED_MEASURED);
        assert_int_equal(fired_coverage_blocked(fired_coverage(&db, 1000000, false, 0), 486000).verdict, FIRED_UNKNOWN);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_passed),
                cmocka_unit_test(test_measured),
                cmocka_unit_test(test_unknown),
                cmocka_unit_test(test_blocked),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
