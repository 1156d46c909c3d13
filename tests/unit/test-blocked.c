/* SPDX-License-Identifier: MIT */
/* D-state threads of a few looks grouped by wchan (sampling/blocked.h): counting, deduplication,
 * ordering and the bounds. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sampling/blocked.h"
#include "tests/unit/test-util.h"

static BlockedThreadLook t(pid_t pid, pid_t tid, const char *comm, char state, const char *wchan) {
        BlockedThreadLook l = { .pid = pid, .tid = tid, .state = state };

        snprintf(l.comm, sizeof l.comm, "%s", comm);
        snprintf(l.wchan, sizeof l.wchan, "%s", wchan);
        return l;
}

static void test_group(void **state) {
        const BlockedThreadLook a[] = {
                t(10, 10, "postgres", 'D', "folio_wait_bit_common"),
                t(10, 11, "postgres", 'D', "folio_wait_bit_common"),
                t(20, 20, "rsync", 'D', "blk_mq_get_tag"),
                t(30, 30, "idle", 'S', "do_epoll_wait"), /* sleeping, not blocked */
                t(40, 40, "spin", 'R', ""),
        };
        const BlockedThreadLook b[] = {
                t(10, 11, "postgres: wal", 'D', "folio_wait_bit_common"), /* renamed since */
                t(20, 20, "rsync", 'D', "folio_wait_bit_common"),
                t(50, 50, "hidden", 'D', ""), /* wchan read "0": no ptrace access */
        };
        const BlockedThreadLook c[] = {
                t(10, 11, "postgres: wal", 'D', "folio_wait_bit_common"),
                t(20, 20, "rsync", 'D', "blk_mq_get_tag"),
        };
        const BlockedLook looks[] = { { a, 5 }, { b, 3 }, { c, 2 } };
        BlockedSummary s;

        assert_int_equal(blocked_group(looks, 3, &s), 0);
        assert_int_equal(s.n_looks, 3);
        assert_int_equal(s.seen, 8);
        assert_int_equal(s.n_groups_total, 3);
        assert_int_equal(s.n_groups, 3);
        assert_int_equal(s.other_seen, 0);

        const BlockedGroup *g = &s.groups[0];
        assert_string_equal(g->wchan, "folio_wait_bit_common");
        assert_int_equal(g->seen, 5);
        assert_int_equal(g->n_threads_total, 3);
        assert_int_equal(g->n_threads, 3);
        /* Most seen first: tid 11 three times, then 10 and 20 once each, by pid. */
        assert_int_equal(g->threads[0].tid, 11);
        assert_int_equal(g->threads[0].seen, 3);
        assert_string_equal(g->threads[0].comm, "postgres: wal"); /* the last look's */
        assert_int_equal(g->threads[1].tid, 10);
        assert_int_equal(g->threads[2].pid, 20);

        g = &s.groups[1];
        assert_string_equal(g->wchan, "blk_mq_get_tag");
        assert_int_equal(g->seen, 2);
        assert_int_equal(g->n_threads_total, 1); /* the same thread twice */
        assert_int_equal(g->threads[0].seen, 2);
        assert_string_equal(g->threads[0].comm, "rsync");

        g = &s.groups[2];
        assert_string_equal(g->wchan, "");
        assert_int_equal(g->seen, 1);
        assert_int_equal(g->threads[0].pid, 50);
}

/* How long each was blocked: the longest any look told (psidiag 0.9), -1 when none could. */
static BlockedThreadLook tb(pid_t pid, const char *wchan, int64_t ms) {
        BlockedThreadLook l = t(pid, pid, "dd", 'D', wchan);

        l.blocked_ns = ms < 0 ? -1 : ms * 1000000;
        return l;
}

static void test_blocked_for(void **state) {
        const BlockedThreadLook a[] = { tb(10, "blk_mq_get_tag", 1000), tb(20, "blk_mq_get_tag", -1),
                                        tb(30, "blk_mq_get_tag", -1) };
        const BlockedThreadLook b[] = { tb(10, "blk_mq_get_tag", 1500), tb(20, "blk_mq_get_tag", 700),
                                        tb(30, "blk_mq_get_tag", -1) };
        const BlockedLook looks[] = { { a, 3 }, { b, 3 } };
        BlockedSummary s;

        assert_int_equal(blocked_group(looks, 2, &s), 0);
        assert_int_equal(s.n_groups, 1);
        assert_int_equal(s.groups[0].n_threads, 3);
        assert_int_equal(s.groups[0].threads[0].pid, 10);
        assert_int_equal(s.groups[0].threads[0].blocked_ns, 1500000000);
        assert_int_equal(s.groups[0].threads[1].blocked_ns, 700000000);
        assert_int_equal(s.groups[0].threads[2].blocked_ns, -1);
}

/* One wchan, waits for different things: a group each (sampling/waitfor.h), the larger first. */
static void test_wait_for(void **state) {
        BlockedThreadLook a[] = {
                t(10, 10, "fsync", 'D', "folio_wait_bit_common"),
                t(20, 20, "reclaim", 'D', "folio_wait_bit_common"),
                t(30, 30, "swapin", 'D', "folio_wait_bit_common"),
        };
        BlockedSummary s;

        a[0].wait_for = WAIT_FOR_IO;
        a[1].wait_for = a[2].wait_for = WAIT_FOR_MEMORY;
        const BlockedLook looks[] = { { a, 3 } };
        assert_int_equal(blocked_group(looks, 1, &s), 0);
        assert_int_equal(s.n_groups, 2);
        assert_int_equal(s.groups[0].wait_for, WAIT_FOR_MEMORY);
        assert_int_equal(s.groups[0].n_threads, 2);
        assert_int_equal(s.groups[1].wait_for, WAIT_FOR_IO);
        assert_int_equal(s.groups[1].threads[0].pid, 10);
}

static void test_empty(void **state) {
        const BlockedThreadLook a[] = { t(1, 1, "init", 'S', "do_epoll_wait") };
        const BlockedLook looks[] = { { a, 1 }, { NULL, 0 } };
        BlockedSummary s;

        assert_int_equal(blocked_group(looks, 2, &s), 0);
        assert_int_equal(s.n_looks, 2);
        assert_int_equal(s.seen, 0);
        assert_int_equal(s.n_groups, 0);
        assert_int_equal(blocked_group(NULL, 0, &s), 0);
        assert_int_equal(s.n_looks, 0);
}

/* More wchans than listed: the rest summed; more threads than listed: all counted; equal counts
 * ordered by name. */
static void test_bounds(void **state) {
        enum { N_WCHANS = BLOCKED_GROUPS_MAX + 3, N_THREADS = BLOCKED_THREADS_PER_GROUP_MAX + 5 };
        BlockedThreadLook look[N_WCHANS + N_THREADS];
        const BlockedLook looks[] = { { look, N_WCHANS + N_THREADS } };
        BlockedSummary s;
        size_t n = 0;

        for (int i = 0; i < N_WCHANS; i++) {
                char w[32];

                snprintf(w, sizeof w, "wait_%02d", N_WCHANS - i); /* listed in reverse name order */
                look[n++] = t(100 + i, 100 + i, "one", 'D', w);
        }
        for (int i = 0; i < N_THREADS; i++)
                look[n++] = t(500, 500 + N_THREADS - i, "pool", 'D', "wait_many");
        assert_int_equal(blocked_group(looks, 1, &s), 0);
        assert_int_equal(s.seen, N_WCHANS + N_THREADS);
        assert_int_equal(s.n_groups_total, N_WCHANS + 1);
        assert_int_equal(s.n_groups, BLOCKED_GROUPS_MAX);
        assert_int_equal(s.other_seen, N_WCHANS + 1 - BLOCKED_GROUPS_MAX);
        assert_string_equal(s.groups[0].wchan, "wait_many");
        assert_int_equal(s.groups[0].seen, N_THREADS);
        assert_int_equal(s.groups[0].n_threads_total, N_THREADS);
        assert_int_equal(s.groups[0].n_threads, BLOCKED_THREADS_PER_GROUP_MAX);
        assert_int_equal(s.groups[0].threads[0].tid, 501); /* equal counts: by tid */
        assert_string_equal(s.groups[1].wchan, "wait_01");
        assert_string_equal(s.groups[BLOCKED_GROUPS_MAX - 1].wchan, "wait_07");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_group), cmocka_unit_test(test_blocked_for), cmocka_unit_test(test_wait_for),
                cmocka_unit_test(test_empty), cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
