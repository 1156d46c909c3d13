/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/text.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "base/utf8.h"
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
        const char in[] = "a\x80"
                          "b\xc3"
                          "c\xc0\xaf"
                          "d\xed\xa0\x80"
                          "e\xf4\x90\x80\x80"
                          "f\0g";
        size_t n = utf8_sanitize(in, sizeof in - 1, out, sizeof out);

        assert_string_equal(out, "a\xef\xbf\xbd"
                                 "b\xef\xbf\xbd"
                                 "c\xef\xbf\xbd\xef\xbf\xbd"
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

/* log_oom() writes what log_error("out of memory") wrote (no strerror after it) and yields -ENOMEM. */
static void test_log_oom(void **state) {
        char buf[128] = {};
        int p[2], saved = dup(STDERR_FILENO), r;

        assert_int_equal(pipe(p), 0);
        fflush(stderr);
        assert_int_equal(dup2(p[1], STDERR_FILENO), STDERR_FILENO);
        close(p[1]);
        r = log_oom();
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        assert_true(read(p[0], buf, sizeof buf - 1) > 0);
        close(p[0]);
        assert_int_equal(r, -ENOMEM);
        assert_string_equal(buf, "psidiag: error: out of memory\n");
}

static void test_format_us(void **state) {
        char b[32];

        assert_string_equal(text_format_us(120, b, sizeof b), "120us");
        assert_string_equal(text_format_us(5626, b, sizeof b), "5.6ms");
        assert_string_equal(text_format_us(983921, b, sizeof b), "984ms");
        assert_string_equal(text_format_us(1025349, b, sizeof b), "1.03s");
        assert_string_equal(text_format_us(42000000, b, sizeof b), "42s");
        assert_string_equal(text_format_us(-1, b, sizeof b), "-");
}

static void test_terminal_safe(void **state) {
        char b[32];

        /* ESC, BEL, newline, DEL and a C1 CSI (U+009B) never reach the terminal. */
        assert_string_equal(text_terminal_safe("\x1b[31mred\x07\n\x7f\xc2\x9b"
                                               "2J",
                                               b, sizeof b),
                            "?[31mred????2J");
        /* Multi-byte characters are kept whole, and cut only between characters. */
        assert_string_equal(text_terminal_safe("h\xc3\xa9llo \xe2\x82\xac", b, sizeof b), "h\xc3\xa9llo \xe2\x82\xac");
        assert_string_equal(text_terminal_safe("ab\xe2\x82\xac", b, 5), "ab");
        assert_string_equal(text_terminal_safe(NULL, b, sizeof b), "");
}

/* The C1 controls U+0080-U+009F (NEL, CSI, OSC) and the bidirectional controls that reorder a line
 * on the screen (U+202E RLO makes "txt.exe" of "exe.txt") are replaced, each by one '?'; their
 * neighbours (U+00A0, U+2010, U+2029, U+206A) are kept. */
static void test_terminal_safe_c1_and_bidi(void **state) {
        static const struct {
                const char *in, *want;
        } cases[] = {
                { "a\xc2\x80"
                  "b\xc2\x85"
                  "c\xc2\x9d"
                  "d\xc2\x9f",
                  "a?b?c?d?" },
                { "x\xe2\x80\xae"
                  "exe.txt",
                  "x?exe.txt" },                                                /* RLO */
                { "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad", "????" }, /* LRE RLE PDF LRO */
                { "\xe2\x81\xa6"
                  "a\xe2\x81\xa7"
                  "b\xe2\x81\xa8"
                  "c\xe2\x81\xa9",
                  "?a?b?c?" },                                 /* LRI RLI FSI PDI */
                { "\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c", "???" }, /* LRM RLM ALM */
                { "\xc2\xa0\xe2\x80\x90\xe2\x80\xa9\xe2\x81\xaa\xd8\x9b",
                  "\xc2\xa0\xe2\x80\x90\xe2\x80\xa9\xe2\x81\xaa\xd8\x9b" },
        };
        char b[64];
        unsigned cp = 0;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                assert_string_equal(text_terminal_safe(cases[i].in, b, sizeof b), cases[i].want);
        assert_int_equal(text_unsafe_char("\xe2\x80\xae", &cp), 3);
        assert_int_equal(cp, 0x202e);
        assert_int_equal(text_unsafe_char("\xc2\x9b", &cp), 2);
        assert_int_equal(cp, 0x9b);
        assert_int_equal(text_unsafe_char("\x1b", &cp), 1);
        assert_int_equal(cp, 0x1b);
        assert_int_equal(text_unsafe_char("a", &cp), 0);
        /* A sequence cut by the string's end is no control, and nothing past the NUL is read. */
        assert_int_equal(text_unsafe_char("\xe2\x80", &cp), 0);
        assert_int_equal(text_unsafe_char("\xc2", &cp), 0);
}

static void test_parse_u64_prefix_and_exact(void **state) {
        const char s[] = "1234 rest", big[] = "18446744073709551616";
        const char *rest = NULL;
        uint64_t v = 7;

        assert_int_equal(parse_u64_prefix(s, s + sizeof s - 1, &v, &rest), 0);
        assert_int_equal(v, 1234);
        assert_ptr_equal(rest, s + 4);
        assert_int_equal(parse_u64_prefix(s, s + 2, &v, NULL), 0); /* stops at the end given */
        assert_int_equal(v, 12);
        v = 7;
        assert_int_equal(parse_u64_prefix(s + 4, s + 6, &v, NULL), -EINVAL); /* " r": no leading space allowed */
        assert_int_equal(parse_u64_prefix(s, s, &v, NULL), -EINVAL);         /* empty */
        assert_int_equal(parse_u64_prefix(big, big + sizeof big - 1, &v, NULL), -ERANGE);
        assert_int_equal(v, 7); /* untouched on failure */

        assert_int_equal(parse_u64_exact("42", 2, &v), 0);
        assert_int_equal(v, 42);
        assert_int_equal(parse_u64_exact("42x", 3, &v), -EINVAL);
        assert_int_equal(parse_u64_exact("", 0, &v), -EINVAL);
        assert_int_equal(parse_u64_exact(big, sizeof big - 1, &v), -ERANGE);
}

static void test_line_find(void **state) {
        const char buf[] = "oom 1\noom_kill_disable 0\noom_kill 3\nlast no newline";
        const char *v, *e;

        assert_int_equal(line_find(buf, sizeof buf - 1, "oom_kill ", &v, &e), 0);
        assert_int_equal(e - v, 1);
        assert_memory_equal(v, "3", 1);
        assert_int_equal(line_find(buf, sizeof buf - 1, "oom ", &v, &e), 0); /* the first line */
        assert_memory_equal(v, "1", 1);
        assert_int_equal(line_find(buf, sizeof buf - 1, "last ", &v, &e), 0);
        assert_int_equal(e - v, 10);
        assert_int_equal(line_find(buf, sizeof buf - 1, "kill", &v, &e), -ENOENT); /* only at a line's start */
        assert_int_equal(line_find(buf, 3, "oom 1", &v, &e), -ENOENT);             /* not past len */
        assert_int_equal(line_find("", 0, "x", &v, &e), -ENOENT);
}

/* Lines one by one: an empty line is a line, the last one needs no '\n', nothing past end. */
static void test_line_next(void **state) {
        static const char buf[] = "8:0 rbytes=1\n\nlast";
        const char *p = buf, *end = buf + sizeof buf - 1, *l = NULL, *e = NULL;

        (void) state;
        assert_true(line_next(&p, end, &l, &e));
        assert_ptr_equal(l, buf);
        assert_int_equal(e - l, 12);
        assert_ptr_equal(p, buf + 13);
        assert_true(line_next(&p, end, &l, &e));
        assert_ptr_equal(l, buf + 13);
        assert_ptr_equal(e, buf + 13); /* the empty line */
        assert_true(line_next(&p, end, &l, &e));
        assert_ptr_equal(l, buf + 14);
        assert_ptr_equal(e, end);
        assert_ptr_equal(p, end);
        assert_false(line_next(&p, end, &l, &e));
        assert_ptr_equal(l, buf + 14); /* untouched at the end */

        p = buf;
        end = buf + 3; /* not past end, though the '\n' is further */
        assert_true(line_next(&p, end, &l, &e));
        assert_ptr_equal(e, buf + 3);
        assert_ptr_equal(p, buf + 3);
        assert_false(line_next(&p, end, &l, &e));

        p = end = buf + 13; /* "\n" alone: one empty line */
        end++;
        assert_true(line_next(&p, end, &l, &e));
        assert_ptr_equal(l, e);
        assert_ptr_equal(p, end);
        assert_false(line_next(&p, end, &l, &e));
}

static void test_log_ratelimit(void **state) {
        LogRateLimit rl = { .interval_us = 10 * USEC_PER_SEC };
        usec_t t = 1000 * USEC_PER_SEC;

        assert_true(log_ratelimit_pass(&rl, t));
        assert_false(log_ratelimit_pass(&rl, t + 1));
        assert_false(log_ratelimit_pass(&rl, t + 10 * USEC_PER_SEC - 1));
        assert_true(log_ratelimit_pass(&rl, t + 10 * USEC_PER_SEC));
        assert_false(log_ratelimit_pass(&rl, t + 11 * USEC_PER_SEC));
        log_ratelimit_reset(&rl);
        assert_true(log_ratelimit_pass(&rl, t + 12 * USEC_PER_SEC));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_utf8_valid_passes_through),
                cmocka_unit_test(test_utf8_invalid_replaced),
                cmocka_unit_test(test_utf8_never_overflows),
                cmocka_unit_test(test_parse_duration),
                cmocka_unit_test(test_parse_uint64),
                cmocka_unit_test(test_parse_u64_prefix_and_exact),
                cmocka_unit_test(test_line_find),
                cmocka_unit_test(test_line_next),
                cmocka_unit_test(test_log_ratelimit),
                cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_log_level),
                cmocka_unit_test(test_log_oom),
                cmocka_unit_test(test_format_us),
                cmocka_unit_test(test_terminal_safe),
                cmocka_unit_test(test_terminal_safe_c1_and_bidi),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
