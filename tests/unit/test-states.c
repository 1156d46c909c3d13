/* SPDX-License-Identifier: MIT */
/* Task state counts (probes/states.c) from /proc's state letters, and their scaling from a sample of
 * the threads to all of them. Read through a snapshot, they are tested in test-snapshot.c. */
#include "probes/states.h"
#include "tests/unit/test-util.h"

static void test_scale(void **state) {
        TaskStateCounts c;

        task_state_counts_init_procfs(&c);
        for (int i = 0; i < 256; i++)
                task_state_counts_add(&c, i < 10 ? 'R' : i < 16 ? 'D' : i < 17 ? 'Z' : 'S');
        assert_int_equal(c.read, 256);
        task_state_counts_scale(&c, 256); /* everything read: unchanged */
        assert_false(c.scaled);
        task_state_counts_scale(&c, 1024);
        assert_true(c.scaled);
        assert_int_equal(c.running, 40);
        assert_int_equal(c.uninterruptible, 24);
        assert_int_equal(c.sleeping, 956);
        assert_int_equal(c.stopped, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_scale),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
