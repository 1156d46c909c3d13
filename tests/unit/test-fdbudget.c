/* SPDX-License-Identifier: MIT */
/* The descriptors the triggers may take (agent/fdbudget.h): the reserve for samples and
 * recordings, the budget measured from the open-file limit less what is open and the reserve, takes
 * refused with -EMFILE past it and nothing taken, gives, a take that waits for the closer's pending
 * closes only when they are what is missing, and the starved count of triggers not armed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "agent/fdbudget.h"
#include "base/closer.h"
#include "tests/unit/test-util.h"

static void test_reserve(void **state) {
        long none = fd_budget_reserve(0, 0);

        assert_true(none > 0); /* /proc files, outputs, a moment's directory */
        assert_int_equal(fd_budget_reserve(1, 0), none + 2);
        assert_int_equal(fd_budget_reserve(3, 0), none + 6);
        assert_int_equal(fd_budget_reserve(0, 1), none + FD_BUDGET_PER_RECORDING);
        assert_int_equal(fd_budget_reserve(3, 2), none + 6 + 2 * FD_BUDGET_PER_RECORDING);
}

static long open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        long n = 0;

        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n - 2; /* "." and ".."; the listing's own descriptor counts, as in fd_budget_init() */
}

/* The limit, less what is open, less the reserve; under a lower limit, that much less. */
static void test_init_from_limit(void **state) {
        struct rlimit saved, low;
        FdBudget b;

        assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
        low = saved;
        low.rlim_cur = saved.rlim_max == RLIM_INFINITY || saved.rlim_max > 300 ? 300 : saved.rlim_max;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);

        fd_budget_init(&b, 30, NULL);
        assert_int_equal(b.left, (long) low.rlim_cur - open_fds() - 30);
        assert_int_equal(b.starved, 0);
        assert_null(b.closer);

        int extra = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(extra >= 0);
        fd_budget_init(&b, 30, NULL);
        assert_int_equal(b.left, (long) low.rlim_cur - open_fds() - 30); /* one fewer than before */
        close(extra);

        assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

static void test_take_give(void **state) {
        FdBudget b = { .left = 10 };

        assert_int_equal(fd_budget_take(&b, 4), 0);
        assert_int_equal(b.left, 6);
        assert_int_equal(fd_budget_take(&b, 7), -EMFILE);
        assert_int_equal(b.left, 6); /* nothing taken */
        assert_int_equal(fd_budget_take(&b, 6), 0);
        assert_int_equal(b.left, 0);
        assert_int_equal(fd_budget_take(&b, 1), -EMFILE);
        assert_int_equal(fd_budget_take(&b, 0), 0);
        fd_budget_give(&b, 10);
        assert_int_equal(b.left, 10);

        FdBudget unlimited = { .left = LONG_MAX };
        assert_int_equal(fd_budget_take(&unlimited, 100000), 0);
        assert_int_equal(unlimited.left, LONG_MAX - 100000);
}

/* A close that blocks until the gate opens, as a trigger's close waits for a grace period. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open, taking;
static unsigned gate_inside;

static int gated_close(int fd) {
        pthread_mutex_lock(&gate_lock);
        gate_inside++;
        pthread_cond_broadcast(&gate_cond);
        while (!gate_open)
                pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        return close(fd);
}

static void wait_inside(unsigned want) {
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&gate_lock);
        while (gate_inside < want && pthread_cond_timedwait(&gate_cond, &gate_lock, &until) == 0)
                ;
        assert_int_equal(gate_inside, want);
        pthread_mutex_unlock(&gate_lock);
}

/* Opens the gate a while after the test says it is taking: a take that does not wait for the
 * closes returns before that, with the three still pending. */
static void *opener(void *arg) {
        struct timespec t = { 0, 200 * 1000 * 1000 };

        pthread_mutex_lock(&gate_lock);
        while (!taking)
                pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        nanosleep(&t, NULL);
        pthread_mutex_lock(&gate_lock);
        gate_open = true;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
        return NULL;
}

/* Given-back trigger fds still count until the closer has closed them: a take that needs them
 * waits for just enough of them; one that does not need them never waits. */
static void test_take_waits_for_pending_closes(void **state) {
        int p[3][2];
        Closer *c;
        pthread_t t;

        assert_int_equal(closer_new(4, gated_close, &c), 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(pipe2(p[i], O_CLOEXEC), 0);
                closer_push(c, p[i][0]);
        }
        wait_inside(3);
        assert_int_equal(closer_pending(c), 3);

        FdBudget b = { .left = 10, .closer = c };
        assert_int_equal(fd_budget_take(&b, 7), 0); /* 10 - 3 pending = 7: enough, no wait */
        assert_int_equal(closer_pending(c), 3);
        assert_int_equal(b.left, 3);
        fd_budget_give(&b, 7);

        assert_int_equal(pthread_create(&t, NULL, opener, NULL), 0);
        pthread_mutex_lock(&gate_lock);
        taking = true;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
        assert_int_equal(fd_budget_take(&b, 9), 0); /* 10 - 3 = 7 < 9: two closes must end first */
        assert_true(closer_pending(c) <= 1);
        assert_int_equal(b.left, 1);
        assert_int_equal(pthread_join(t, NULL), 0);

        assert_null(closer_free(c));
        for (int i = 0; i < 3; i++) {
                assert_true(fcntl(p[i][0], F_GETFD) < 0);
                close(p[i][1]);
        }
}

/* Only running out of descriptors starves: EMFILE (the process's limit) and ENFILE (the system's
 * table), each counting the triggers not armed; any other error is not the budget's. */
static void test_starved(void **state) {
        FdBudget b = { .left = 0 };

        assert_false(fd_budget_starved(&b, 0, 3));
        assert_false(fd_budget_starved(&b, -ENOENT, 3));
        assert_false(fd_budget_starved(&b, -EACCES, 3));
        assert_int_equal(b.starved, 0);
        assert_true(fd_budget_starved(&b, -EMFILE, 5));
        assert_int_equal(b.starved, 5);
        assert_true(fd_budget_starved(&b, -ENFILE, 2));
        assert_int_equal(b.starved, 7);
        assert_false(fd_budget_starved(&b, -EBUSY, 9));
        assert_int_equal(b.starved, 7);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reserve),   cmocka_unit_test(test_init_from_limit),
                cmocka_unit_test(test_take_give), cmocka_unit_test(test_take_waits_for_pending_closes),
                cmocka_unit_test(test_starved),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
