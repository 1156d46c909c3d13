/* SPDX-License-Identifier: MIT */
/* Discovery's bookkeeping of what bursts made and of its walks' pace: the same cgroup made again
 * and again is one path (agent/pathset.c), one made and gone before its walk none, beyond max
 * -E2BIG; a job done is ready again only after nine times what it took, at least its minimum, and
 * asked for too early its timer runs it then (agent/pace.c). */
#include <errno.h>
#include <string.h>

#include "agent/pace.h"
#include "agent/pathset.h"
#include "tests/unit/test-util.h"

static void test_pathset(void **state) {
        Pathset s = { .max = 3 };

        for (int i = 0; i < 1000; i++) /* a user's churn: one name, made again and again */
                assert_int_equal(pathset_add(&s, "u/delegated", "churn"), 0);
        assert_int_equal(s.n, 1);
        assert_string_equal(s.items[0], "u/delegated/churn");
        assert_int_equal(pathset_add(&s, "", "top"), 0);
        assert_int_equal(pathset_add(&s, "", "top"), 0);
        assert_int_equal(pathset_add(&s, "u", "delegated/churn"), 0); /* the same path, split elsewhere */
        assert_int_equal(s.n, 2);
        assert_int_equal(pathset_add(&s, "u/delegated", "b"), 0);
        assert_int_equal(pathset_add(&s, "u/delegated", "c"), -E2BIG);
        pathset_remove(&s, "u/delegated/churn"); /* made and gone: nothing to walk */
        pathset_remove(&s, "not/there");
        assert_int_equal(s.n, 2);
        assert_string_equal(s.items[0], "top");
        assert_string_equal(s.items[1], "u/delegated/b");
        assert_int_equal(pathset_add(&s, "u/delegated", "c"), 0);
        pathset_clear(&s);
        assert_int_equal(s.n, 0);
        pathset_done(&s);
        assert_null(s.items);
}

static unsigned fired;

static void on_fire(struct ev_loop *loop, ev_timer *t, int revents) {
        fired++;
}

static void test_pace(void **state) {
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Pace p;
        usec_t now;

        pace_init(&p, on_fire, NULL);
        assert_true(pace_ready(loop, &p)); /* never ran */
        now = now_usec(CLOCK_MONOTONIC);
        pace_done(loop, &p, now - 20 * USEC_PER_MSEC, 0); /* took 20 ms: ready 180 ms after */
        assert_true(p.next_us >= now + 180 * USEC_PER_MSEC);
        assert_true(p.next_us < now + 10 * USEC_PER_SEC);
        assert_false(pace_ready(loop, &p));
        assert_false(pace_ready(loop, &p)); /* asked again: one timer */
        assert_true(ev_is_active(&p.timer));
        ev_run(loop, EVRUN_ONCE);
        assert_int_equal(fired, 1);
        assert_true(now_usec(CLOCK_MONOTONIC) >= p.next_us);
        assert_true(pace_ready(loop, &p));
        /* Took nothing: the minimum; took an hour: at most PACE_MAX_US. */
        now = now_usec(CLOCK_MONOTONIC);
        pace_done(loop, &p, now, 50 * USEC_PER_MSEC);
        assert_true(p.next_us >= now + 50 * USEC_PER_MSEC);
        assert_true(p.next_us < now + 50 * USEC_PER_MSEC + USEC_PER_SEC);
        pace_done(loop, &p, now - 3600 * USEC_PER_SEC, 0);
        assert_true(p.next_us <= now_usec(CLOCK_MONOTONIC) + PACE_MAX_US);
        assert_false(pace_ready(loop, &p));
        pace_stop(loop, &p);
        assert_false(ev_is_active(&p.timer));
        ev_loop_destroy(loop);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pathset),
                cmocka_unit_test(test_pace),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
