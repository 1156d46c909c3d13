/* SPDX-License-Identifier: MIT */
/* How long a sleeping thread has slept (probes/schedclock.h): se.exec_start parsed as 6.18 prints
 * it, read from a fake /proc, and against "this cpu's clock" read on a cpu the test may run on. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/schedclock.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define S(x) x, strlen(x)

/* The head of /proc/<tid>/sched as 6.18 prints it (kernel/sched/debug.c). */
#define SCHED(start)                                                                                                   \
        "cat (4401, #threads: 1)\n"                                                                                    \
        "-------------------------------------------------------------------\n"                                        \
        "se.exec_start                                :      " start "\n"                                              \
        "se.vruntime                                  :          1525.760580\n"                                        \
        "se.sum_exec_runtime                          :             0.000000\n"

static void test_parse(void **state) {
        uint64_t ns = 7;

        assert_int_equal(schedclock_parse_exec_start(S(SCHED("12216084.115060")), &ns), 0);
        assert_int_equal(ns, 12216084115060ULL);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("0.000000")), &ns), 0);
        assert_int_equal(ns, 0);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("42.5")), &ns), 0); /* fewer decimals */
        assert_int_equal(ns, 42500000ULL);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("42")), &ns), 0);
        assert_int_equal(ns, 42000000ULL);
        /* No trailing newline: the last line still counts. */
        assert_int_equal(schedclock_parse_exec_start(S("se.exec_start : 1.000001"), &ns), 0);
        assert_int_equal(ns, 1000001ULL);

        ns = 7;
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("-5.000000")), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("5.0000001")), &ns), -EINVAL); /* 7 decimals */
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("5.000000 ms")), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("")), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S(SCHED("99999999999999999999.0")), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S("se.exec_start_x : 1.0\n"), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S("se.exec_start 1.0\n"), &ns), -EINVAL); /* no ':' */
        assert_int_equal(schedclock_parse_exec_start(S("se.vruntime : 1.0\n"), &ns), -EINVAL);
        assert_int_equal(schedclock_parse_exec_start(S(""), &ns), -EINVAL);
        assert_int_equal(ns, 7);
}

/* The first cpu this test may run on. */
static int our_cpu(void) {
        cpu_set_t set;

        assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                        return c;
        fail();
        return -1;
}

static void test_idle(void **state) {
        char dir[] = "/tmp/psidiag-schedclock-XXXXXX";
        cpu_set_t before, after;
        SchedClockCache c;
        uint64_t ns = 7;
        int fd, cpu = our_cpu();

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "thread-self/sched", SCHED("5000.000000")), 0);
        assert_int_equal(fake_tree_write(dir, "812/sched", SCHED("1800.250000")), 0);
        assert_int_equal(fake_tree_write(dir, "813/sched", SCHED("0.000000")), 0);    /* reset */
        assert_int_equal(fake_tree_write(dir, "814/sched", SCHED("5000.000001")), 0); /* ran since */
        assert_int_equal(fake_tree_write(dir, "815/sched", "garbage\n"), 0);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);

        assert_int_equal(schedclock_read_exec_start(fd, 812, &ns), 0);
        assert_int_equal(ns, 1800250000ULL);
        assert_int_equal(schedclock_read_exec_start(fd, 999, &ns), -ESRCH);

        assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
        schedclock_cache_init(&c, fd);
        assert_int_equal(schedclock_idle_ns(&c, 812, cpu, &ns), 0);
        assert_int_equal(ns, 3199750000ULL);
        assert_int_equal(c.n, 1); /* the cpu's clock read once for the look */
        assert_int_equal(schedclock_idle_ns(&c, 813, cpu, &ns), -ENODATA);
        assert_int_equal(schedclock_idle_ns(&c, 814, cpu, &ns), -ENODATA);
        assert_int_equal(schedclock_idle_ns(&c, 815, cpu, &ns), -EINVAL);
        assert_int_equal(schedclock_idle_ns(&c, 999, cpu, &ns), -ESRCH);
        assert_int_equal(c.n, 1);
        /* A cpu the caller may not run on: not visited, said once. */
        assert_int_equal(schedclock_idle_ns(&c, 812, CPU_SETSIZE - 1, &ns), -EINVAL);
        assert_int_equal(schedclock_idle_ns(&c, 812, -1, &ns), -EINVAL);
        assert_int_equal(c.n, 3);
        /* The caller's cpus are given back. */
        assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
        assert_true(CPU_EQUAL(&before, &after));

        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* On the real /proc: this thread, just run, has not run for (almost) no time on its own cpu. */
static void test_real(void **state) {
        int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), cpu = our_cpu();
        uint64_t now = 0;
        int r;

        assert_true(fd >= 0);
        r = schedclock_now_on(fd, cpu, &now);
        if (r == -ENOENT) { /* a kernel without CONFIG_SCHED_DEBUG */
                close(fd);
                skip();
        }
        assert_int_equal(r, 0);
        assert_true(now > 0);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_idle),
                cmocka_unit_test(test_real),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
