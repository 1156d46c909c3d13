/* SPDX-License-Identifier: MIT */
/* The cgroup path questions of base/cgpath.h: covers (of strings, of ranges, of untrimmed paths),
 * parent, trim, the deepest cover. */
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
        assert_true(cgpath_covers("a/", "a/b")); /* the one rule of cgpath_covers_range() */
        assert_false(cgpath_covers("a/", "a"));
        assert_false(cgpath_covers("/a", "a/b")); /* no slash is trimmed */
}

static bool covers_range(const char *ancestor, const char *cgroup) {
        return cgpath_covers_range(ancestor, strlen(ancestor), cgroup, strlen(cgroup));
}

/* Both paths as written: the kill marks' own, cut out of a log line. */
static void test_covers_range(void **state) {
        assert_true(covers_range("", "a/b")); /* the root */
        assert_true(covers_range("", ""));
        assert_true(covers_range("a/b", "a/b"));
        assert_true(covers_range("a", "a/b"));
        assert_false(covers_range("a/b", "a"));
        assert_false(covers_range("a/b", "a/bc")); /* a sibling that shares a prefix */
        assert_false(covers_range("x", "a/b"));
        /* A trailing slash ends a component itself. */
        assert_true(covers_range("a/", "a/b"));
        assert_true(covers_range("a/", "a/bc"));
        assert_true(covers_range("a/", "a/"));
        assert_false(covers_range("a/", "a")); /* the cgroup is shorter */
        assert_true(covers_range("a", "a/"));
        assert_true(covers_range("/", "/a"));
        assert_false(covers_range("/", "")); /* "/" is not trimmed to the root */
        /* Leading slashes are compared as they are. */
        assert_true(covers_range("/a", "/a/b"));
        assert_false(covers_range("/a", "a/b"));
        assert_false(covers_range("a", "/a/b"));
        assert_false(covers_range("/", "a"));

        /* Ranges inside a longer text: nothing past their ends is read. */
        const char *line = "/a/bc due to /a/b being";
        assert_false(cgpath_covers_range(line + 13, 4, line, 5)); /* "/a/b" and "/a/bc" */
        assert_true(cgpath_covers_range(line + 13, 4, line, 4));  /* "/a/b" and "/a/b" */
        assert_true(cgpath_covers_range(line + 13, 2, line, 5));  /* "/a" and "/a/bc" */
        assert_true(cgpath_covers_range(line + 13, 3, line, 5));  /* "/a/" and "/a/bc" */
}

/* Paths as killers write them ("/a/b", "a/b/", oomd's relative ones): leading slashes on both and
 * trailing ones on the ancestor ignored; unknown is under nothing. */
static void test_covers_untrimmed(void **state) {
        assert_true(cgpath_covers_untrimmed("/system.slice/x.service", "system.slice/x.service"));
        assert_true(cgpath_covers_untrimmed("a/b", "/a/b/c"));
        assert_true(cgpath_covers_untrimmed("//a", "a/b"));
        assert_true(cgpath_covers_untrimmed("a/", "a"));
        assert_true(cgpath_covers_untrimmed("a//", "/a/b"));
        assert_true(cgpath_covers_untrimmed("a", "a/"));
        assert_false(cgpath_covers_untrimmed("a/b", "a/bc")); /* a sibling that shares a prefix */
        assert_false(cgpath_covers_untrimmed("a/b/", "a/bc"));
        assert_false(cgpath_covers_untrimmed("a/b", "a"));
        assert_false(cgpath_covers_untrimmed("a", ""));
        /* Empty, or slashes alone: the root covers every cgroup. */
        assert_true(cgpath_covers_untrimmed("", "a"));
        assert_true(cgpath_covers_untrimmed("/", "a/b"));
        assert_true(cgpath_covers_untrimmed("//", ""));
        assert_true(cgpath_covers_untrimmed("", "/"));
        /* NULL is unknown, not node-wide as for cgpath_covers(). */
        assert_false(cgpath_covers_untrimmed(NULL, "a"));
        assert_false(cgpath_covers_untrimmed("a", NULL));
        assert_false(cgpath_covers_untrimmed("", NULL));
        assert_false(cgpath_covers_untrimmed(NULL, NULL));
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

/* Components of a path, slashes never one. */
static void test_next(void **state) {
        const char *p = "//a/bc//d/", *seg;
        size_t len;

        assert_true(cgpath_next(&p, &seg, &len));
        assert_int_equal(len, 1);
        assert_memory_equal(seg, "a", 1);
        assert_true(cgpath_next(&p, &seg, &len));
        assert_int_equal(len, 2);
        assert_memory_equal(seg, "bc", 2);
        assert_true(cgpath_next(&p, &seg, &len));
        assert_memory_equal(seg, "d", 1);
        assert_false(cgpath_next(&p, &seg, &len));
        assert_false(cgpath_next(&p, &seg, &len));
        p = "";
        assert_false(cgpath_next(&p, &seg, &len));
        p = "///";
        assert_false(cgpath_next(&p, &seg, &len));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_next),         cmocka_unit_test(test_covers),
                cmocka_unit_test(test_covers_range), cmocka_unit_test(test_covers_untrimmed),
                cmocka_unit_test(test_parent),       cmocka_unit_test(test_trim),
                cmocka_unit_test(test_deepest),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
