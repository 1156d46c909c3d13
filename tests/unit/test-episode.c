/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "agent/episode.h"
#include "tests/unit/test-util.h"

/* A node-wide stall wakes 100 watches ("some 100ms 2s", 1 s samples) within a second, then keeps
 * firing each of them once a window: one episode, however many wakeups. */
static void test_storm_is_one_episode(void **state) {
        Episode e = {};
        uint64_t seq = 0;
        usec_t t0 = 1000 * USEC_PER_SEC;

        assert_true(episode_note(&e, &seq, t0, 5555, 2 * USEC_PER_SEC, t0 + 1 * USEC_PER_SEC));
        assert_int_equal(e.seq, 1);
        for (unsigned i = 1; i < 100; i++)
                assert_false(episode_note(&e, &seq, t0 + i * 10 * US_PER_MS, 0, 2 * USEC_PER_SEC,
                                          i % 2 ? t0 + i * 10 * US_PER_MS + USEC_PER_SEC : 0));
        /* The triggers fire again a window later, for 20 s. */
        for (usec_t t = t0 + 2 * USEC_PER_SEC; t < t0 + 20 * USEC_PER_SEC; t += 2 * USEC_PER_SEC + 5 * US_PER_MS)
                assert_false(episode_note(&e, &seq, t, 0, 2 * USEC_PER_SEC, 0));
        assert_int_equal(e.seq, 1);
        assert_int_equal(seq, 1);
        assert_int_equal(e.start_real_us, 5555);
}

/* Two quiet windows after the last wakeup (or the end of its sample) end the episode. */
static void test_quiet_window_ends_it(void **state) {
        Episode e = {};
        uint64_t seq = 0;

        assert_true(episode_note(&e, &seq, 10 * USEC_PER_SEC, 1, 2 * USEC_PER_SEC, 11 * USEC_PER_SEC));
        /* Up to the sample's end plus two windows: 15 s. */
        assert_int_equal(e.until_mono_us, 15 * USEC_PER_SEC);
        assert_false(episode_note(&e, &seq, 15 * USEC_PER_SEC, 2, 2 * USEC_PER_SEC, 0));
        assert_int_equal(e.until_mono_us, 19 * USEC_PER_SEC);
        assert_true(episode_note(&e, &seq, 19 * USEC_PER_SEC + 1, 3, 2 * USEC_PER_SEC, 0));
        assert_int_equal(e.seq, 2);
        assert_int_equal(e.start_real_us, 3);
}

/* A long trigger window keeps a slower stall in one episode; the window that counts is the firing
 * trigger's, and an episode never shrinks. */
static void test_window_is_the_firing_triggers(void **state) {
        Episode e = {};
        uint64_t seq = 0;

        assert_true(episode_note(&e, &seq, 0, 0, 10 * USEC_PER_SEC, 0));
        assert_false(episode_note(&e, &seq, 19 * USEC_PER_SEC, 0, 2 * USEC_PER_SEC, 0));
        assert_int_equal(e.until_mono_us, 23 * USEC_PER_SEC);
        assert_false(episode_note(&e, &seq, 20 * USEC_PER_SEC, 0, 500 * US_PER_MS, 0));
        assert_int_equal(e.until_mono_us, 23 * USEC_PER_SEC);
}

/* Episodes of different resources are numbered from one counter: their ids never collide. */
static void test_ids(void **state) {
        Episode cpu = {}, io = {};
        uint64_t seq = 0;
        char a[EPISODE_ID_MAX], b[EPISODE_ID_MAX];

        assert_true(episode_note(&cpu, &seq, 1 * USEC_PER_SEC, 0x10, 2 * USEC_PER_SEC, 0));
        assert_true(episode_note(&io, &seq, 1 * USEC_PER_SEC, 0x10, 2 * USEC_PER_SEC, 0));
        episode_format_id('e', cpu.start_real_us, cpu.seq, "0a1b2c3d-4e5f-6789-abcd-ef0123456789", 0x2a, a, sizeof a);
        episode_format_id('e', io.start_real_us, io.seq, "0a1b2c3d-4e5f-6789-abcd-ef0123456789", 0x2a, b, sizeof b);
        assert_string_equal(a, "0a1b2c3d-10-2a-e1");
        assert_string_equal(b, "0a1b2c3d-10-2a-e2");
        episode_format_id('p', cpu.start_real_us, 7, "ab-c", 1, a, sizeof a);
        assert_string_equal(a, "abc00000-10-1-p7");
        episode_format_id('e', cpu.start_real_us, cpu.seq, NULL, 1, a, 8);
        assert_int_equal(strlen(a), 7);
}

static void test_pass_joinable(void **state) {
        assert_true(episode_pass_joinable(true, false, 1000));
        assert_false(episode_pass_joinable(true, true, 1000)); /* its end is taken: no overlap left */
        assert_false(episode_pass_joinable(false, false, 1000));
        assert_false(episode_pass_joinable(true, false, 0)); /* a lifetime sample has no window */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_storm_is_one_episode),
                cmocka_unit_test(test_quiet_window_ends_it),
                cmocka_unit_test(test_window_is_the_firing_triggers),
                cmocka_unit_test(test_ids),
                cmocka_unit_test(test_pass_joinable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
