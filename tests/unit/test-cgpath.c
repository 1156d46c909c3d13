/* SPDX-License-Identifier: MIT */
/* The cgroup path questions of base/cgpath.h: covers, parent, trim, the deepest cover. */
#include <string.h>

#include "base/cgpath.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

static void test_covers(void **state) {
        assert_true(cgpath_covers(NULL, "a/b")); /* node-wide */
        assert_true(cgpath_covers("", "a/b"));   /* the root cgroup */
        assert_true(cgpath_covers("a", "a/b"));
        assert_true(cgpath_covers("a/b", "a/b"));
        assert_false(cgpath_covers("a/b", "a"));    /* a child does not explain its parent's kill */
        assert_false(cgpath_covers("a/b", "a/bc")); /* a sibling that shares a prefix */
        assert_false(cgpath_covers("x", "a/b"));
        assert_true(cgpath_covers(NULL, NULL)); /* unknown cgroup: only node-wide and root */
        assert_true(cgpath_covers("", NULL));
        assert_false(cgpath_covers("a", NULL));
}

static void test_parent(void **state) {
        char p[] = "a/b/c";

        assert_true(cgpath_parent(p));
        assert_string_equal(p, "a/b");
        assert_true(cgpath_parent(p));
        assert_string_equal(p, "a");
        assert_true(cgpath_parent(p));
        assert_string_equal(p, "");
        assert_false(cgpath_parent(p)); /* the root has none */
        assert_string_equal(p, "");
}

static void test_trim(void **state) {
        assert_string_equal(cgpath_trim("/a/b"), "a/b");
        assert_string_equal(cgpath_trim("//a"), "a");
        assert_string_equal(cgpath_trim("/"), "");
        assert_string_equal(cgpath_trim("a"), "a");
}

/* Which watch an oom kill belongs to: the deepest that covers the victim's cgroup. */
static void test_deepest(void **state) {
        const char *const watches[] = { NULL, "kubepods", "kubepods/burstable", "system.slice", "", "kubepods" };

        assert_int_equal(cgpath_deepest(watches, ELEMENTSOF(watches), "kubepods/burstable/pod1"), 2);
        assert_int_equal(cgpath_deepest(watches, ELEMENTSOF(watches), "kubepods/besteffort/pod2"),
                         1); /* first of a tie */
        assert_int_equal(cgpath_deepest(watches, ELEMENTSOF(watches), "system.slice"), 3);
        assert_int_equal(cgpath_deepest(watches, ELEMENTSOF(watches), "user.slice"), 4); /* root beats node-wide */
        assert_int_equal(cgpath_deepest(watches, 1, "user.slice"), 0);                   /* node-wide alone */
        assert_int_equal(cgpath_deepest(watches, ELEMENTSOF(watches), NULL), 4);         /* unknown: root */
        assert_int_equal(cgpath_deepest(watches + 1, 3, NULL), -1);
        assert_int_equal(cgpath_deepest(watches + 1, 2, "user.slice"), -1);
        assert_int_equal(cgpath_deepest(watches, 0, "a"), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_covers),
                cmocka_unit_test(test_parent),
                cmocka_unit_test(test_trim),
                cmocka_unit_test(test_deepest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
