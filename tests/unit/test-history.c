/* SPDX-License-Identifier: MIT */
/* The incident history behind an oom incident's `related`: ancestry, newest first, the lookback,
 * and the three bounds that keep a long-lived agent's memory flat. */
#include <stdio.h>
#include <string.h>

#include "incident/history.h"
#include "tests/unit/test-util.h"

static void test_related_newest_first(void **state) {
        History h;
        const char *ids[8];

        assert_int_equal(history_init(&h, 300 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "kubepods/pod1", "p1-old", 10 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, NULL, "node", 20 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "kubepods/pod2", "p2", 30 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "kubepods", "kp", 40 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "kubepods/pod1/ctr", "ctr", 50 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "kubepods/pod1", "p1-new", 60 * USEC_PER_SEC), 0);

        /* A kill in kubepods/pod1/ctr: its own, its parents', node-wide; not pod2's. */
        size_t n = history_related(&h, "kubepods/pod1/ctr", 70 * USEC_PER_SEC, ids, 8);
        assert_int_equal(n, 5);
        assert_string_equal(ids[0], "p1-new");
        assert_string_equal(ids[1], "ctr");
        assert_string_equal(ids[2], "kp");
        assert_string_equal(ids[3], "node");
        assert_string_equal(ids[4], "p1-old");

        /* max caps the newest. */
        assert_int_equal(history_related(&h, "kubepods/pod1/ctr", 70 * USEC_PER_SEC, ids, 2), 2);
        assert_string_equal(ids[1], "ctr");

        /* The lookback: at 325 s only what is at most 300 s old counts. */
        n = history_related(&h, "kubepods/pod1/ctr", 325 * USEC_PER_SEC, ids, 8);
        assert_int_equal(n, 3);
        assert_string_equal(ids[2], "kp");
        history_done(&h);
}

/* An incident is added when its sample starts: a kill while it samples names it; a sample that
 * ends without an incident takes its id back, and only that one. */
static void test_forget_in_flight(void **state) {
        History h;
        const char *ids[8];

        assert_int_equal(history_init(&h, 300 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "db", "done", 10 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "db", "in-flight", 20 * USEC_PER_SEC), 0);
        assert_int_equal(history_related(&h, "db", 20 * USEC_PER_SEC + USEC_PER_SEC / 2, ids, 8), 2);
        assert_string_equal(ids[0], "in-flight");
        history_forget(&h, "in-flight");
        assert_int_equal(history_related(&h, "db", 21 * USEC_PER_SEC, ids, 8), 1);
        assert_string_equal(ids[0], "done");
        history_forget(&h, "in-flight"); /* not kept: nothing happens */
        history_forget(&h, "never");
        assert_int_equal(h.n, 1);
        /* Forgetting one in the middle keeps the order of the rest. */
        assert_int_equal(history_add(&h, "db", "b", 30 * USEC_PER_SEC), 0);
        assert_int_equal(history_add(&h, "db", "c", 40 * USEC_PER_SEC), 0);
        history_forget(&h, "b");
        assert_int_equal(history_related(&h, "db", 41 * USEC_PER_SEC, ids, 8), 2);
        assert_string_equal(ids[0], "c");
        assert_string_equal(ids[1], "done");
        history_done(&h);
}

static void test_bounds(void **state) {
        History h;
        const char *ids[HISTORY_PER_CGROUP + 8];
        char id[32];

        assert_int_equal(history_init(&h, 3600 * USEC_PER_SEC), 0);
        /* One noisy cgroup keeps only its newest HISTORY_PER_CGROUP, and does not push out others. */
        assert_int_equal(history_add(&h, "quiet", "q", 1), 0);
        for (int i = 0; i < 1000; i++) {
                snprintf(id, sizeof id, "n%d", i);
                assert_int_equal(history_add(&h, "noisy", id, 2 + (usec_t) i), 0);
        }
        assert_int_equal(h.n, HISTORY_PER_CGROUP + 1);
        size_t n = history_related(&h, "noisy", 2000, ids, HISTORY_PER_CGROUP + 8);
        assert_int_equal(n, HISTORY_PER_CGROUP);
        assert_string_equal(ids[0], "n999");
        snprintf(id, sizeof id, "n%d", 1000 - HISTORY_PER_CGROUP);
        assert_string_equal(ids[HISTORY_PER_CGROUP - 1], id);
        assert_int_equal(history_related(&h, "quiet", 2000, ids, 8), 1);

        /* Many cgroups: the whole history keeps its newest HISTORY_MAX. */
        for (int i = 0; i < 3 * HISTORY_MAX; i++) {
                char cg[32];
                snprintf(cg, sizeof cg, "c%d", i);
                assert_int_equal(history_add(&h, cg, cg, 3000 + (usec_t) i), 0);
        }
        assert_int_equal(h.n, HISTORY_MAX);
        assert_int_equal(history_related(&h, "c0", 10000, ids, 8), 0);
        assert_int_equal(history_related(&h, "c3071", 10000, ids, 8), 1);

        /* Entries past the lookback are dropped when the next one comes. */
        assert_int_equal(history_add(&h, "late", "late", 3600 * USEC_PER_SEC + 3000 + 3 * HISTORY_MAX), 0);
        assert_int_equal(h.n, 1);
        history_done(&h);

        /* Lookback 0: nothing kept, nothing related. */
        assert_int_equal(history_init(&h, 0), 0);
        assert_int_equal(history_add(&h, "a", "x", 5 * USEC_PER_SEC), 0);
        assert_int_equal(h.n, 0);
        assert_int_equal(history_related(&h, "a", 5 * USEC_PER_SEC, ids, 8), 0);
        history_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_related_newest_first),
                cmocka_unit_test(test_forget_in_flight),
                cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
