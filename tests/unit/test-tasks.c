/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/tasks.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static int cmp_pid(const void *a, const void *b) {
        return *(const pid_t *) a - *(const pid_t *) b;
}

static void assert_tids(TidList *l, const pid_t *want, size_t n) {
        qsort(l->tids, l->n, sizeof *l->tids, cmp_pid);
        assert_int_equal(l->n, n);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(l->tids[i], want[i]);
}

static void test_cgroup_subtree(void **state) {
        static const pid_t all[] = { 1, 100, 101, 102, 200, 201 }, web[] = { 100, 101, 102 };
        TidList l = {};
        int fd;

        fd = open(fixture("hybrid/sys/fs/cgroup/unified"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgroup_list_threads(fd, &l), 0);
        assert_tids(&l, all, 6);
        close(fd);

        tid_list_clear(&l);
        fd = open(fixture("hybrid/sys/fs/cgroup/unified/app/web"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_int_equal(cgroup_list_threads(fd, &l), 0);
        assert_tids(&l, web, 3);
        close(fd);
        tid_list_done(&l);
}

/* One id per process: web's three threads are one process. */
static void test_cgroup_processes(void **state) {
        static const pid_t all[] = { 1, 100, 200 }, web[] = { 100 };
        TidList l = {};
        int fd;

        fd = open(fixture("hybrid/sys/fs/cgroup/unified"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgroup_list_processes(fd, &l), 0);
        assert_tids(&l, all, 3);
        close(fd);

        tid_list_clear(&l);
        fd = open(fixture("hybrid/sys/fs/cgroup/unified/app/web"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_int_equal(cgroup_list_processes(fd, &l), 0);
        assert_tids(&l, web, 1);
        close(fd);
        tid_list_done(&l);
}

/* /proc's numeric entries (the fixture has one per thread; real procfs lists processes only). */
static void test_proc_processes(void **state) {
        static const pid_t all[] = { 1, 100, 101, 102, 200, 201 };
        TidList l = {};
        int fd = open(fixture("hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);

        assert_int_equal(proc_list_processes(fd, &l), 0);
        assert_tids(&l, all, 6);
        close(fd);
        tid_list_done(&l);
}

static void test_proc_threads(void **state) {
        static const pid_t all[] = { 1, 100, 101, 102, 200, 201 };
        TidList l = {};
        int fd = open(fixture("hybrid/proc"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);

        assert_int_equal(proc_list_threads(fd, &l), 0);
        assert_tids(&l, all, 6);
        close(fd);
        tid_list_done(&l);
}

static void test_parse_buf(void **state) {
        TidList l = {};
        const char *ok = "5\n7\n\n9";

        assert_int_equal(tid_list_parse_buf(&l, ok, strlen(ok)), 0);
        assert_int_equal(l.n, 3);
        assert_int_equal(l.tids[2], 9);
        tid_list_clear(&l);
        assert_int_equal(tid_list_parse_buf(&l, "", 0), 0);
        assert_int_equal(l.n, 0);
        assert_int_equal(tid_list_parse_buf(&l, "12\nab\n", 6), -EINVAL);
        assert_int_equal(tid_list_parse_buf(&l, "0\n", 2), -EINVAL);
        assert_int_equal(tid_list_parse_buf(&l, "-3\n", 3), -EINVAL);
        assert_int_equal(tid_list_parse_buf(&l, "99999999999\n", 12), -EINVAL);
        tid_list_done(&l);
}

/* The walk's policy (probes/cgwalk.h): a child whose cgroup.threads is malformed is left out and
 * counted, a child without one (removed meanwhile) is skipped, the rest is listed; the root's own
 * file is the listing's error. */
static void test_subtree_unreadable(void **state) {
        static const pid_t want[] = { 1, 3 };
        char dir[] = "/tmp/test-tasks-XXXXXX";
        TidList l = {};
        int fd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "cgroup.threads", "1\n"), 0);
        assert_int_equal(fake_tree_write(dir, "bad/cgroup.threads", "2\nnot-a-tid\n"), 0);
        assert_int_equal(fake_tree_write(dir, "bad/below/cgroup.threads", "4\n"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "gone"), 0);
        assert_int_equal(fake_tree_write(dir, "ok/cgroup.threads", "3\n"), 0);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgroup_list_threads(fd, &l), 1);
        assert_tids(&l, want, 2);
        tid_list_clear(&l);
        assert_int_equal(cgroup_list_processes(fd, &l), -ENOENT); /* the root has no cgroup.procs */
        close(fd);
        tid_list_done(&l);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void test_growth(void **state) {
        TidList l = {};

        for (pid_t i = 1; i <= 10000; i++)
                assert_int_equal(tid_list_push(&l, i), 0);
        assert_int_equal(l.n, 10000);
        assert_int_equal(l.tids[9999], 10000);
        tid_list_done(&l);
        assert_null(l.tids);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_subtree),     cmocka_unit_test(test_cgroup_processes),
                cmocka_unit_test(test_proc_threads),       cmocka_unit_test(test_proc_processes),
                cmocka_unit_test(test_parse_buf),          cmocka_unit_test(test_growth),
                cmocka_unit_test(test_subtree_unreadable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
