/* SPDX-License-Identifier: MIT */
/* The wchan and kernel stack of a thread (probes/wchan.h): "0" told apart from a symbol, stack
 * frames as 6.18 prints them, and the readers on tests/fixtures/limits-hybrid/proc. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "probes/wchan.h"
#include "tests/unit/test-util.h"

#define S(x) x, strlen(x)

static void test_wchan_parse(void **state) {
        char out[WCHAN_SYMBOL_MAX] = "untouched", small[5];

        assert_int_equal(wchan_parse_buf(S("0"), out, sizeof out), 0);
        assert_string_equal(out, "untouched");
        assert_int_equal(wchan_parse_buf(S("do_nanosleep"), out, sizeof out), 1);
        assert_string_equal(out, "do_nanosleep");
        assert_int_equal(wchan_parse_buf(S("poll_schedule_timeout.constprop.0\n"), out, sizeof out), 1);
        assert_string_equal(out, "poll_schedule_timeout.constprop.0");
        assert_int_equal(wchan_parse_buf(S("folio_wait_bit_common"), small, sizeof small), 1);
        assert_string_equal(small, "foli");                             /* truncated */
        assert_int_equal(wchan_parse_buf(S("00"), out, sizeof out), 1); /* only a lone "0" means none */
        assert_int_equal(wchan_parse_buf(S(""), out, sizeof out), -EINVAL);
        assert_int_equal(wchan_parse_buf(S("do nanosleep"), out, sizeof out), -EINVAL);
        assert_int_equal(wchan_parse_buf("a\0b", 3, out, sizeof out), -EINVAL);
}

static void test_stack_parse(void **state) {
        static const char st[] = "[<0>] poll_schedule_timeout.constprop.0+0x37/0x90\n"
                                 "[<0>] fuse_wait_answer+0x1a/0x40 [fuse]\n"
                                 "[<0>] 0xffffffffc0a01234\n"
                                 "[<0>] entry_SYSCALL_64_after_hwframe+0x76/0x7e\n";
        WchanStack s;

        assert_int_equal(wchan_parse_stack_buf(S(st), &s), 0);
        assert_int_equal(s.n_frames, 4);
        assert_false(s.truncated);
        assert_string_equal(s.frames[0], "poll_schedule_timeout.constprop.0");
        assert_string_equal(s.frames[1], "fuse_wait_answer [fuse]");
        assert_string_equal(s.frames[2], "0xffffffffc0a01234");
        assert_string_equal(s.frames[3], "entry_SYSCALL_64_after_hwframe");
        assert_int_equal(wchan_parse_stack_buf(S(""), &s), 0); /* a running task */
        assert_int_equal(s.n_frames, 0);
        assert_int_equal(wchan_parse_stack_buf(S("do_nanosleep+0x6d/0x1a0\n"), &s), -EINVAL);
        assert_int_equal(wchan_parse_stack_buf(S("[<0>]\n"), &s), -EINVAL);
        assert_int_equal(wchan_parse_stack_buf(S("[<0>] \n"), &s), -EINVAL);

        char many[4096];
        size_t n = 0;
        for (int i = 0; i < WCHAN_STACK_FRAMES_MAX + 2; i++)
                n += (size_t) snprintf(many + n, sizeof many - n, "[<0>] f%d+0x1/0x2\n", i);
        assert_int_equal(wchan_parse_stack_buf(many, n, &s), 0);
        assert_int_equal(s.n_frames, WCHAN_STACK_FRAMES_MAX);
        assert_true(s.truncated);
        assert_string_equal(s.frames[WCHAN_STACK_FRAMES_MAX - 1], "f31");
}

static void test_readers(void **state) {
        int proc = open(fixture("limits-hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        char w[WCHAN_SYMBOL_MAX];
        WchanStack s;

        assert_true(proc >= 0);
        assert_int_equal(wchan_read(proc, 100, 100, w, sizeof w), 1);
        assert_string_equal(w, "do_nanosleep");
        assert_int_equal(wchan_read(proc, 100, 101, w, sizeof w), 0);
        assert_int_equal(wchan_read(proc, 100, 102, w, sizeof w), -ESRCH);
        assert_int_equal(wchan_read_stack(proc, 100, 100, &s), 0);
        assert_int_equal(s.n_frames, 5);
        assert_string_equal(s.frames[1], "hrtimer_nanosleep");
        /* The thread is there, its stack file is not: no CONFIG_STACKTRACE. */
        assert_int_equal(wchan_read_stack(proc, 100, 101, &s), -ENOENT);
        assert_int_equal(wchan_read_stack(proc, 100, 102, &s), -ESRCH);
        close(proc);

        assert_string_equal(wchan_stack_error_reason(-EACCES), "needs CAP_SYS_ADMIN");
        assert_string_equal(wchan_stack_error_reason(-EPERM), "ptrace access refused");
        assert_string_equal(wchan_stack_error_reason(-EIO), "EIO");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wchan_parse),
                cmocka_unit_test(test_stack_parse),
                cmocka_unit_test(test_readers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
