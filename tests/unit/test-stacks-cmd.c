/* SPDX-License-Identifier: MIT */
/* `psidiag stacks` (cmd/stacks-cmd.h) on incident lines written by hand: each stack one folded
 * line, outermost frame first after the comm, its count last; kernel frames marked _[k]; a frame
 * without a function named by its module's file and address, or [unknown]; a hostile comm and
 * function name (control characters, the ';' separator) kept to one line of the right fields; an
 * incident without stacks writes nothing; a line that is not an incident is refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/stacks-cmd.h"
#include "tests/unit/test-util.h"

static const char INCIDENT[] =
        "{\"type\":\"pressure\",\"time\":\"2026-12-04T20:00:00Z\",\"stacks\":{\"hz\":99,"
        "\"modules\":[{\"path\":\"/usr/bin/xz\"},{\"path\":\"[kernel]\",\"kernel\":true},"
        "{\"path\":\"/usr/lib/x86_64-linux-gnu/liblzma.so.5.4.1\"}],"
        "\"processes\":[{\"pid\":7,\"comm\":\"xz\",\"stacks\":["
        "{\"count\":12,\"end\":\"outermost\",\"frames\":["
        "{\"function\":\"clear_page_erms\",\"offset\":7,\"module\":1,\"address\":null,\"kernel\":true},"
        "{\"function\":null,\"offset\":null,\"module\":2,\"address\":\"0x5d10\",\"kernel\":false},"
        "{\"function\":\"lzma_code\",\"offset\":66,\"module\":2,\"address\":\"0x6000\",\"kernel\":false},"
        "{\"function\":\"main\",\"offset\":1,\"module\":0,\"address\":\"0x1000\",\"kernel\":false}]},"
        "{\"count\":3,\"end\":\"not_unwound\",\"frames\":["
        "{\"function\":null,\"offset\":null,\"module\":null,\"address\":null,\"kernel\":false}]}]},"
        "{\"pid\":8,\"comm\":\"a;b\\n\\u001b[31m\",\"stacks\":[{\"count\":1,\"end\":\"outermost\",\"frames\":["
        "{\"function\":\"f;g\\n\",\"offset\":0,\"module\":0,\"address\":\"0x1\",\"kernel\":false}]}]}]}}";

static char *fold(const char *line, int *ret) {
        char *buf = NULL, error[256] = "";
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);

        assert_non_null(out);
        *ret = stacks_of_line(line, strlen(line), NULL, stacks_print_folded, out, error, sizeof error);
        fclose(out);
        return buf;
}

static void test_folded(void **state) {
        int r;
        char *text = fold(INCIDENT, &r);

        assert_int_equal(r, 1);
        assert_string_equal(text, "xz;main;lzma_code;liblzma.so.5.4.1+0x5d10;clear_page_erms_[k] 12\n"
                                  "xz;[unknown] 3\n"
                                  "a:b??[31m;f:g? 1\n");
        free(text);
}

static void test_no_stacks(void **state) {
        int r;
        char *text = fold("{\"type\":\"pressure\",\"time\":\"x\",\"most_delayed\":[]}", &r);

        assert_int_equal(r, 0);
        assert_string_equal(text, "");
        free(text);
        text = fold("[1,2]", &r);
        assert_int_equal(r, -EINVAL);
        free(text);
        text = fold("{\"type\":", &r);
        assert_int_equal(r, -EINVAL);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_folded),
                cmocka_unit_test(test_no_stacks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
