/* SPDX-License-Identifier: MIT */
/* The container matches discovery keeps by cgroup path (agent/ctrknown.h): found after inserts in
 * any order (kept sorted, looked up by halving), each entry's matches its own; a gone cgroup
 * forgets itself and what was below it, never a sibling whose name merely starts the same; clear
 * and done forget everything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ctrknown.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

/* A matches array of one watch, set to m: ctrknown_insert() takes it. */
static bool *one(bool m) {
        bool *b = malloc(sizeof *b);

        assert_non_null(b);
        *b = m;
        return b;
}

static void insert(Ctrknown *k, const char *path, bool m) {
        size_t at = SIZE_MAX;

        assert_null(ctrknown_find(k, path, &at));
        assert_true(at <= k->n);
        ctrknown_insert(k, at, path, one(m));
}

static bool known(Ctrknown *k, const char *path) {
        size_t at;

        return ctrknown_find(k, path, &at) != NULL;
}

static void test_find_after_inserts(void **state) {
        static const char *const paths[] = { "m/x", "a", "z/q/r", "m", "b/c", "a/b", "m/x/y", "c" };
        Ctrknown k = {};

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                insert(&k, paths[i], i % 2 == 0);
        assert_int_equal(k.n, ELEMENTSOF(paths));
        for (size_t i = 1; i < k.n; i++)
                assert_true(strcmp(k.items[i - 1].path, k.items[i].path) < 0);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                size_t at;
                CtrknownEntry *e = ctrknown_find(&k, paths[i], &at);
                assert_non_null(e);
                assert_string_equal(e->path, paths[i]);
                assert_int_equal(e->matches[0], i % 2 == 0);
        }
        assert_false(known(&k, "m/"));
        assert_false(known(&k, "b"));
        assert_false(known(&k, ""));
        ctrknown_done(&k);
        assert_null(k.items);
        assert_int_equal(k.n, 0);
}

/* Enough paths to grow the array more than once, inserted from last to first. */
static void test_grows(void **state) {
        char path[32];
        Ctrknown k = {};

        for (int i = 499; i >= 0; i--) {
                snprintf(path, sizeof path, "kubepods/pod%03d", i);
                insert(&k, path, i == 250);
        }
        assert_int_equal(k.n, 500);
        for (int i = 0; i < 500; i++) {
                size_t at;
                snprintf(path, sizeof path, "kubepods/pod%03d", i);
                CtrknownEntry *e = ctrknown_find(&k, path, &at);
                assert_non_null(e);
                assert_int_equal(e->matches[0], i == 250);
        }
        ctrknown_done(&k);
}

static void test_forget_subtree(void **state) {
        Ctrknown k = {};

        insert(&k, "pod1", true);
        insert(&k, "pod1/ctr-a", true);
        insert(&k, "pod1/ctr-b/inner", false);
        insert(&k, "pod10", true); /* starts like pod1: not below it */
        insert(&k, "pod1-x/ctr", true);
        insert(&k, "pod2/ctr", false);

        ctrknown_forget(&k, "pod1");
        assert_int_equal(k.n, 3);
        assert_false(known(&k, "pod1"));
        assert_false(known(&k, "pod1/ctr-a"));
        assert_false(known(&k, "pod1/ctr-b/inner"));
        assert_true(known(&k, "pod10"));
        assert_true(known(&k, "pod1-x/ctr"));
        assert_true(known(&k, "pod2/ctr"));
        for (size_t i = 1; i < k.n; i++) /* still sorted: finds still halve */
                assert_true(strcmp(k.items[i - 1].path, k.items[i].path) < 0);

        ctrknown_forget(&k, "pod2/ctr/deeper"); /* below an entry: the entry stays */
        assert_int_equal(k.n, 3);
        ctrknown_forget(&k, "nothing");
        assert_int_equal(k.n, 3);

        ctrknown_clear(&k);
        assert_int_equal(k.n, 0);
        assert_false(known(&k, "pod10"));
        insert(&k, "pod3", true); /* usable after a clear (a reload) */
        assert_true(known(&k, "pod3"));
        ctrknown_done(&k);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find_after_inserts),
                cmocka_unit_test(test_grows),
                cmocka_unit_test(test_forget_subtree),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
