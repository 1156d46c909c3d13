/* SPDX-License-Identifier: MIT */
/* The directories discovery watches (agent/dirset.c): found by path and by watch descriptor after
 * adds and removals in any order (a removed entry's place taken by the last), the limit, one
 * user's share and the users' half, and a set of 20,000 directories built and emptied in time
 * linear in its size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "agent/dirset.h"
#include "tests/unit/test-util.h"

static void test_find_and_remove(void **state) {
        Dirset *s = NULL;
        char p[64];

        assert_int_equal(dirset_new(1000, &s), 0);
        assert_false(dirset_has(s, ""));
        assert_null(dirset_path(s, 1, NULL));
        assert_false(dirset_remove(s, 1));
        for (int i = 0; i < 300; i++) {
                snprintf(p, sizeof p, "a/%d", i);
                assert_int_equal(dirset_add(s, i + 1, p, 0, 0), 0);
        }
        assert_int_equal(dirset_add(s, 5, "other", 0, 0), -EEXIST);  /* the same descriptor */
        assert_int_equal(dirset_add(s, 1000, "a/7", 0, 0), -EEXIST); /* the same path */
        assert_int_equal(dirset_count(s), 300);
        /* Every third removed, first and last ones included: the rest still found both ways. */
        for (int i = 0; i < 300; i += 3)
                assert_true(dirset_remove(s, i + 1));
        assert_false(dirset_remove(s, 1));
        assert_int_equal(dirset_count(s), 200);
        for (int i = 0; i < 300; i++) {
                snprintf(p, sizeof p, "a/%d", i);
                assert_int_equal(dirset_has(s, p), i % 3 != 0);
                if (i % 3 != 0)
                        assert_string_equal(dirset_path(s, i + 1, NULL), p);
                else
                        assert_null(dirset_path(s, i + 1, NULL));
        }
        /* Removed, a path may come back under a new descriptor; its flags are its own. */
        assert_int_equal(dirset_add(s, 5000, "a/0", 0, 1), 0);
        assert_string_equal(dirset_path(s, 5000, NULL), "a/0");
        assert_true(dirset_mark(s, "a/0", 2));
        assert_false(dirset_mark(s, "a/3", 2));
        unsigned flags = 0;
        assert_non_null(dirset_path(s, 5000, &flags));
        assert_int_equal(flags, 3);
        assert_null(dirset_free(s));
        assert_null(dirset_free(NULL));
}

static void test_limit_and_shares(void **state) {
        Dirset *s = NULL;
        char p[64];
        int wd = 1;

        assert_int_equal(dirset_new(64, &s), 0);
        /* uid 1000 may take 64 / 16 = 4 watches; then only root and other users. */
        for (int i = 0; i < 4; i++) {
                assert_int_equal(dirset_admit(s, 1000), 0);
                snprintf(p, sizeof p, "user/%d", i);
                assert_int_equal(dirset_add(s, wd++, p, 1000, 0), 0);
        }
        assert_int_equal(dirset_admit(s, 1000), -EDQUOT);
        assert_int_equal(dirset_admit(s, 1001), 0);
        assert_int_equal(dirset_admit(s, 0), 0);
        /* One of its directories goes: it may take one again. */
        assert_true(dirset_remove(s, 2));
        assert_int_equal(dirset_admit(s, 1000), 0);
        assert_int_equal(dirset_add(s, wd++, "user/again", 1000, 0), 0);
        /* Users together take at most half (32): seven more users of four each reach it. */
        for (uid_t u = 2000; u < 2007; u++)
                for (int i = 0; i < 4; i++) {
                        snprintf(p, sizeof p, "u%u/%d", (unsigned) u, i);
                        assert_int_equal(dirset_admit(s, u), 0);
                        assert_int_equal(dirset_add(s, wd++, p, u, 0), 0);
                }
        assert_int_equal(dirset_count(s), 32);
        assert_int_equal(dirset_admit(s, 3000), -EDQUOT);
        /* Root's directories fill the rest, up to the limit. */
        for (int i = 0; i < 32; i++) {
                snprintf(p, sizeof p, "root/%d", i);
                assert_int_equal(dirset_admit(s, 0), 0);
                assert_int_equal(dirset_add(s, wd++, p, 0, 0), 0);
        }
        assert_int_equal(dirset_admit(s, 0), -ENOSPC);
        assert_int_equal(dirset_admit(s, 3000), -ENOSPC);
        /* A higher limit (a reload's) admits again; a lower one keeps what is watched. */
        dirset_set_max(s, 128);
        assert_int_equal(dirset_max(s), 128);
        assert_int_equal(dirset_admit(s, 0), 0);
        dirset_set_max(s, 16);
        assert_int_equal(dirset_count(s), 64);
        assert_int_equal(dirset_admit(s, 0), -ENOSPC);
        dirset_free(s);
}

static double seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* What a walk of a tree with 20,000 directories asks (each directory: is it watched? then add),
 * twice over, then each removed: under a second even under valgrind, where a linear search per
 * directory (2 x 10^8 comparisons) is not. */
static void test_large(void **state) {
        Dirset *s = NULL;
        char p[64];
        double t0 = seconds();

        assert_int_equal(dirset_new(65536, &s), 0);
        for (int pass = 0; pass < 2; pass++)
                for (int i = 0; i < 20000; i++) {
                        snprintf(p, sizeof p, "user.slice/user-1000.slice/user@1000.service/d%d.slice", i);
                        if (!dirset_has(s, p))
                                assert_int_equal(dirset_add(s, i + 1, p, 0, 0), 0);
                        assert_non_null(dirset_path(s, i + 1, NULL));
                }
        assert_int_equal(dirset_count(s), 20000);
        for (int i = 20000; i > 0; i--)
                assert_true(dirset_remove(s, i));
        assert_int_equal(dirset_count(s), 0);
        double took = seconds() - t0;
        print_message("20,000 directories added, looked up twice and removed in %.1f ms\n", took * 1000);
        assert_true(took < 1.0);
        dirset_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find_and_remove),
                cmocka_unit_test(test_limit_and_shares),
                cmocka_unit_test(test_large),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
