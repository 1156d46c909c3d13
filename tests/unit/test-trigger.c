/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "tests/unit/test-util.h"
#include "triggers/trigger.h"

static PsiTriggerSpec parse_ok(const char *s) {
        PsiTriggerSpec spec;
        const char *reason = NULL;

        assert_int_equal(psi_trigger_spec_parse(s, &spec, &reason), 0);
        assert_null(reason);
        return spec;
}

static void parse_fails(const char *s, const char *reason_part) {
        PsiTriggerSpec spec;
        const char *reason = NULL;

        assert_int_equal(psi_trigger_spec_parse(s, &spec, &reason), -EINVAL);
        assert_non_null(reason);
        if (!strstr(reason, reason_part))
                fail_msg("\"%s\": reason \"%s\" does not mention \"%s\"", s, reason, reason_part);
}

static void test_grammar_durations(void **state) {
        PsiTriggerSpec s = parse_ok("memory some 150ms 2s");

        assert_int_equal(s.resource, PSI_RESOURCE_MEMORY);
        assert_int_equal(s.stall, PSI_STALL_SOME);
        assert_int_equal(s.threshold_us, 150000);
        assert_int_equal(s.window_us, 2000000);

        s = parse_ok("  io   full 100ms\t1s ");
        assert_int_equal(s.resource, PSI_RESOURCE_IO);
        assert_int_equal(s.stall, PSI_STALL_FULL);
        assert_int_equal(s.window_us, 1000000);

        s = parse_ok("irq full 500us 500ms");
        assert_int_equal(s.resource, PSI_RESOURCE_IRQ);
        assert_int_equal(s.threshold_us, 500);
        assert_int_equal(s.window_us, 500000);

        s = parse_ok("cpu some 10s 10s");
        assert_int_equal(s.threshold_us, s.window_us);
}

static void test_grammar_percent(void **state) {
        PsiTriggerSpec s = parse_ok("cpu some 20% 2s");

        assert_int_equal(s.threshold_us, 400000);
        s = parse_ok("cpu full 12.5% 4s");
        assert_int_equal(s.threshold_us, 500000);
        s = parse_ok("cpu some 100% 2s");
        assert_int_equal(s.threshold_us, 2000000);
}

static void test_grammar_errors(void **state) {
        parse_fails("", "a trigger is");
        parse_fails("cpu some 1s", "a trigger is");
        parse_fails("cpu some 1s 2s extra", "a trigger is");
        parse_fails("disk some 1s 2s", "unknown resource");
        parse_fails("cpu most 1s 2s", "unknown stall");
        parse_fails("irq some 1ms 2s", "irq pressure accepts only");
        parse_fails("cpu some 1ms 499ms", "window must be between");
        parse_fails("cpu some 1ms 11s", "window must be between");
        parse_fails("cpu some 1ms 2", "window must be a duration");
        parse_fails("cpu some 3s 2s", "must not exceed");
        parse_fails("cpu some 0ms 2s", "greater than zero");
        parse_fails("cpu some 0% 2s", "greater than zero");
        parse_fails("cpu some 101% 2s", "percent");
        parse_fails("cpu some 20%% 2s", "percent");
        parse_fails("cpu some abc 2s", "stall must be");
        parse_fails("CPU some 1s 2s", "unknown resource");
}

static void test_effective_rounding(void **state) {
        PsiTriggerSpec in = parse_ok("cpu some 50ms 1s"), out;

        /* Unprivileged: 1s -> 2s, stall scaled 50ms -> 100ms. */
        assert_int_equal(psi_trigger_spec_effective(&in, false, &out), 1);
        assert_int_equal(out.window_us, 2000000);
        assert_int_equal(out.threshold_us, 100000);
        /* Privileged: untouched. */
        assert_int_equal(psi_trigger_spec_effective(&in, true, &out), 0);
        assert_int_equal(out.window_us, 1000000);

        in = parse_ok("memory some 300ms 3s");
        assert_int_equal(psi_trigger_spec_effective(&in, false, &out), 1);
        assert_int_equal(out.window_us, 4000000);
        assert_int_equal(out.threshold_us, 400000);

        in = parse_ok("io full 9s 9s");
        assert_int_equal(psi_trigger_spec_effective(&in, false, &out), 1);
        assert_int_equal(out.window_us, 10000000);
        assert_int_equal(out.threshold_us, 10000000);

        in = parse_ok("io full 1s 4s");
        assert_int_equal(psi_trigger_spec_effective(&in, false, &out), 0);
        assert_memory_equal(&in, &out, sizeof in);
}

static void test_format(void **state) {
        PsiTriggerSpec s = parse_ok("memory full 1.5s 10s");
        char buf[64];

        assert_int_equal(psi_trigger_spec_format_kernel(&s, buf, sizeof buf), (int) strlen("full 1500000 10000000"));
        assert_string_equal(buf, "full 1500000 10000000");
        assert_int_equal(psi_trigger_spec_format_kernel(&s, buf, 5), -ENOBUFS);
        assert_string_equal(psi_trigger_spec_format(&s, buf, sizeof buf), "memory full 1500ms 10s");
        s = parse_ok("cpu some 250us 2s");
        assert_string_equal(psi_trigger_spec_format(&s, buf, sizeof buf), "cpu some 250us 2s");
}

static void test_names(void **state) {
        assert_string_equal(psi_resource_to_string(PSI_RESOURCE_IRQ), "irq");
        assert_null(psi_resource_to_string(_PSI_RESOURCE_MAX));
        assert_int_equal(psi_resource_from_string("io"), PSI_RESOURCE_IO);
        assert_int_equal(psi_resource_from_string("Io"), _PSI_RESOURCE_INVALID);
        assert_string_equal(psi_stall_to_string(PSI_STALL_FULL), "full");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_grammar_durations),
                cmocka_unit_test(test_grammar_percent),
                cmocka_unit_test(test_grammar_errors),
                cmocka_unit_test(test_effective_rounding),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
