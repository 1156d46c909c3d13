/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "agent/base/log.h"
#include "agent/base/timeutil.h"
#include "agent/base/utf8.h"
#include "tests/unit/test-util.h"

static void test_utf8_valid_passes_through(void **state) {
        char out[64];
        const char *s = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80";

        assert_int_equal(utf8_sanitize(s, strlen(s), out, sizeof out), strlen(s));
        assert_string_equal(out, s);
}

static void test_utf8_invalid_replaced(void **state) {
        char out[64];
        /* lone continuation, truncated 2-byte, overlong '/', surrogate, > U+10FFFF, NUL */
        const char in[] = "a\x80" "b\xc3" "c\xc0\xaf" "d\xed\xa0\x80" "e\xf4\x90\x80\x80" "f\0g";
        size_t n = utf8_sanitize(in, sizeof in - 1, out, sizeof out);

        assert_string_equal(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd"
                                 "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                 "e\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                 "f g");
        assert_int_equal(n, strlen(out));
}

static void test_utf8_never_overflows(void **state) {
        char out[5];
        const char in[] = "\xff\xff\xff";

        /* Room for one replacement (3 bytes) and the NUL, not two. */
        assert_int_equal(utf8_sanitize(in, 3, out, sizeof out), 3);
        assert_string_equal(out, "\xef\xbf\xbd");
        assert_int_equal(utf8_sanitize("abc", 3, out, 1), 0);
        assert_string_equal(out, "");
}

static void test_parse_duration(void **state) {
        usec_t u;

        assert_int_equal(parse_duration_us("150ms", &u), 0);
        assert_int_equal(u, 150000);
        assert_int_equal(parse_duration_us("2s", &u), 0);
        assert_int_equal(u, 2000000);
        assert_int_equal(parse_duration_us("1.5s", &u), 0);
        assert_int_equal(u, 1500000);
        assert_int_equal(parse_duration_us("0.5ms", &u), 0);
        assert_int_equal(u, 500);
        assert_int_equal(parse_duration_us("500us", &u), 0);
        assert_int_equal(u, 500);
        assert_int_equal(parse_duration_us("2", &u), -EINVAL);
        assert_int_equal(parse_duration_us("2m", &u), -EINVAL);
        assert_int_equal(parse_duration_us("-1s", &u), -EINVAL);
        assert_int_equal(parse_duration_us(".5s", &u), -EINVAL);
        assert_int_equal(parse_duration_us("1.s", &u), -EINVAL);
        assert_int_equal(parse_duration_us("0.0001ms", &u), -ERANGE);
        assert_int_equal(parse_duration_us("99999999999999999999s", &u), -ERANGE);
        assert_int_equal(parse_duration_us("", &u), -EINVAL);
}

static void test_parse_uint64(void **state) {
        uint64_t v;

        assert_int_equal(parse_uint64("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_uint64("18446744073709551615", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(parse_uint64("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_uint64("12a", &v), -EINVAL);
        assert_int_equal(parse_uint64("", &v), -EINVAL);
        assert_int_equal(parse_uint64("+1", &v), -EINVAL);
}

static void test_rfc3339(void **state) {
        char buf[RFC3339_MAX];

        assert_string_equal(format_rfc3339_us(0, buf, sizeof buf), "1970-01-01T00:00:00.000000Z");
        assert_string_equal(format_rfc3339_us(1795337041123456ULL, buf, sizeof buf), "2026-11-22T08:44:01.123456Z");
}

static void test_log_level(void **state) {
        assert_int_equal(log_level_from_string("debug"), LOG_LEVEL_DEBUG);
        assert_int_equal(log_level_from_string("warn"), LOG_LEVEL_WARNING);
        assert_int_equal(log_level_from_string("loud"), _LOG_LEVEL_INVALID);
        assert_int_equal(log_error_errno(-ENOENT, "x"), -ENOENT);
        assert_int_equal(log_error_errno(ENOENT, "x"), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utf8_valid_passes_through),
                cmocka_unit_test(test_utf8_invalid_replaced),
                cmocka_unit_test(test_utf8_never_overflows),
                cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_uint64),
                cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_log_level),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
