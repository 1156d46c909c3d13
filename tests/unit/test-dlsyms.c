/* SPDX-License-Identifier: MIT */
/* base/dlsyms.h on the real loader: libc's functions found and callable, a missing function or
 * a missing library NULL. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/dlsyms.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

static void test_found(void **state) {
        pid_t (*get_pid)(void) = NULL;
        size_t (*str_len)(const char *) = NULL;
        const DlSym syms[] = { { "getpid", (void **) &get_pid }, { "strlen", (void **) &str_len } };

        assert_non_null(dlsyms_open("libc.so.6", syms, ELEMENTSOF(syms)));
        assert_int_equal(get_pid(), getpid());
        assert_int_equal(str_len("four"), 4);
}

static void test_missing(void **state) {
        void *fn = NULL;
        const DlSym bad[] = { { "getpid", &fn }, { "psidiag_no_such_function", &fn } };

        assert_null(dlsyms_open("libc.so.6", bad, ELEMENTSOF(bad)));
        assert_null(dlsyms_open("libpsidiag-no-such-library.so.0", bad, 1));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_found),
                cmocka_unit_test(test_missing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
