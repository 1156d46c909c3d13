/* SPDX-License-Identifier: MIT */
/* agent/oomwatch.h's decision: which counted cgroup's count already includes another's kills, so
 * that each kill is reported once, in the deepest counted cgroup that saw it. */
#include "agent/oomwatch.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

static void test_counter_parent(void **state) {
        const OomCounterView c[] = {
                { "kubepods", MEMCG_COUNTER_EVENTS },                 /* 0 */
                { "kubepods/burstable", MEMCG_COUNTER_EVENTS },       /* 1 */
                { "kubepods/burstable/pod1", MEMCG_COUNTER_EVENTS },  /* 2 */
                { "kubepods-x", MEMCG_COUNTER_EVENTS },               /* 3: a prefix, not a child */
                { "legacy", MEMCG_COUNTER_OOM_CONTROL },              /* 4 */
                { "legacy/child", MEMCG_COUNTER_OOM_CONTROL },        /* 5 */
                { "kubepods/besteffort", MEMCG_COUNTER_OOM_CONTROL }, /* 6 */
        };
        size_t n = ELEMENTSOF(c);

        assert_int_equal(oomwatch_counter_parent(c, n, 0), -1);
        assert_int_equal(oomwatch_counter_parent(c, n, 1), 0);
        assert_int_equal(oomwatch_counter_parent(c, n, 2), 1); /* the nearest, not the root-most */
        assert_int_equal(oomwatch_counter_parent(c, n, 3), -1);
        /* A v1 memcg counts its own kills only: neither a parent nor a child of another. */
        assert_int_equal(oomwatch_counter_parent(c, n, 5), -1);
        assert_int_equal(oomwatch_counter_parent(c, n, 4), -1);
        assert_int_equal(oomwatch_counter_parent(c, n, 6), -1);
        assert_int_equal(oomwatch_counter_parent(c, 1, 0), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counter_parent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
