/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "base/closer.h"
#include "tests/unit/test-util.h"

#define DEADLINE_MS 10000

static bool fd_open(int fd) {
        return fcntl(fd, F_GETFD) >= 0;
}

static void pause_ms(long ms) {
        struct timespec t = { ms / 1000, (ms % 1000) * 1000 * 1000 };
        nanosleep(&t, NULL);
}

static unsigned threads_now(void) {
        DIR *d = opendir("/proc/self/task");
        unsigned n = 0;
        struct dirent *e;

        assert_non_null(d);
        while ((e = readdir(d)))
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

/* Helpers end once the queue is empty: waits for that with a generous deadline. */
static unsigned threads_settle(unsigned want) {
        unsigned n = threads_now();

        for (int i = 0; i < DEADLINE_MS / 10 && n != want; i++) {
                pause_ms(10);
                n = threads_now();
        }
        return n;
}

/* A close that blocks until released, as a trigger's close waits for a grace period, and counts
 * how many are blocked at once. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;
static unsigned gate_inside, gate_most, gate_closed;

static int gated_close(int fd) {
        pthread_mutex_lock(&gate_lock);
        gate_inside++;
        if (gate_inside > gate_most)
                gate_most = gate_inside;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open)
                pthread_cond_wait(&gate_cond, &gate_lock);
        gate_inside--;
        gate_closed++;
        pthread_mutex_unlock(&gate_lock);
        return close(fd);
}

static void gate_reset(void) {
        gate_open = false;
        gate_inside = gate_most = gate_closed = 0;
}

static void gate_release(void) {
        pthread_mutex_lock(&gate_lock);
        gate_open = true;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
}

/* Hands n fresh pipes' read ends to c, all opened before any is handed over. */
static void push_pipes(Closer *c, int p[][2], int n) {
        for (int i = 0; i < n; i++)
                assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
        for (int i = 0; i < n; i++)
                closer_push(c, p[i][0]);
}

static unsigned gate_wait_inside(unsigned want) {
        struct timespec until;
        unsigned n;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += DEADLINE_MS / 1000;
        pthread_mutex_lock(&gate_lock);
        while (gate_inside < want && pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == 0)
                ;
        n = gate_inside;
        pthread_mutex_unlock(&gate_lock);
        return n;
}

/* Closes overlap, up to the maximum of helpers and no further, and what is blocked counts as
 * pending until it is closed. */
static void test_closes_overlap_up_to_max(void **state) {
        int p[8][2];
        Closer *c;

        gate_reset();
        assert_int_equal(closer_new(4, gated_close, &c), 0);
        push_pipes(c, p, 8);
        assert_int_equal(gate_wait_inside(4), 4);
        pause_ms(50); /* a fifth helper, if there were one, would be inside by now */
        assert_int_equal(closer_pending(c), 8);

        gate_release();
        closer_wait(c);
        assert_int_equal(closer_pending(c), 0);
        assert_int_equal(gate_closed, 8);
        assert_int_equal(gate_most, 4);
        for (int i = 0; i < 8; i++) {
                assert_false(fd_open(p[i][0]));
                close(p[i][1]);
        }
        assert_null(closer_free(c));
}

/* closer_wait_pending() returns once enough are closed, not only when all are. */
static void test_wait_pending(void **state) {
        int p[6][2];
        Closer *c;

        gate_reset();
        assert_int_equal(closer_new(6, gated_close, &c), 0);
        push_pipes(c, p, 6);
        assert_int_equal(gate_wait_inside(6), 6);
        closer_wait_pending(c, 6); /* already true: returns at once */
        gate_release();
        closer_wait_pending(c, 2);
        assert_true(closer_pending(c) <= 2);
        closer_free(c);
        assert_int_equal(gate_closed, 6);
        for (int i = 0; i < 6; i++)
                close(p[i][1]);
}

/* Everything handed over is closed by the time closer_wait() returns, and nothing else is; an
 * idle closer keeps no thread. */
#define N_PIPES 300
static void test_closes_all(void **state) {
        static int p[N_PIPES][2];
        unsigned before = threads_now();
        Closer *c;

        assert_int_equal(closer_new(64, NULL, &c), 0);
        assert_int_equal(closer_pending(c), 0);
        /* All open before any is handed over: a number closed early could be reused. */
        push_pipes(c, p, N_PIPES);
        closer_wait(c);
        assert_int_equal(closer_pending(c), 0);
        for (int i = 0; i < N_PIPES; i++) {
                assert_false(fd_open(p[i][0]));
                assert_true(fd_open(p[i][1]));
                close(p[i][1]);
        }
        assert_int_equal(threads_settle(before), before);

        /* And it starts again for the next batch. */
        int q[2];
        assert_int_equal(pipe2(q, O_CLOEXEC), 0);
        closer_push(c, q[0]);
        closer_push(c, q[1]);
        closer_push(c, -1); /* ignored */
        closer_wait(c);
        assert_false(fd_open(q[0]));
        assert_false(fd_open(q[1]));
        assert_null(closer_free(c));
        assert_int_equal(threads_settle(before), before);
}

/* closer_free() closes what is still queued before it returns. */
static void test_free_waits(void **state) {
        int p[64][2];
        Closer *c;

        assert_int_equal(closer_new(2, NULL, &c), 0);
        for (int i = 0; i < 64; i++)
                assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
        for (int i = 0; i < 64; i++) {
                closer_push(c, p[i][0]);
                closer_push(c, p[i][1]);
        }
        closer_free(c);
        for (int i = 0; i < 64; i++) {
                assert_false(fd_open(p[i][0]));
                assert_false(fd_open(p[i][1]));
        }
}

static void test_new_and_free_edges(void **state) {
        Closer *c = NULL;

        assert_int_equal(closer_new(0, NULL, &c), -EINVAL);
        assert_null(c);
        assert_null(closer_free(NULL));
        assert_int_equal(closer_new(1, NULL, &c), 0);
        assert_null(closer_free(c)); /* nothing was ever pushed: no thread to join */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_closes_overlap_up_to_max),
                cmocka_unit_test(test_wait_pending),
                cmocka_unit_test(test_closes_all),
                cmocka_unit_test(test_free_waits),
                cmocka_unit_test(test_new_and_free_edges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
