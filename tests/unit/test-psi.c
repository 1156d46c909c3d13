/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"
#include "triggers/psi.h"

/* Waits for the set to have events, up to a generous deadline; false if it never does. */
static bool wait_events(PsiSet *s, int timeout_ms) {
        struct pollfd p = { .fd = psi_set_notify_fd(s), .events = POLLIN };
        int r;

        do
                r = poll(&p, 1, timeout_ms);
        while (r < 0 && errno == EINTR);
        return r > 0;
}

#define DEADLINE_MS 10000

/* Each write to a member's pipe is one event with the member's userdata; nothing spins between. */
static void test_set_fires_once_per_event(void **state) {
        PsiSet *s;
        PsiEvent ev[4];
        int p[2], tag;

        assert_int_equal(psi_set_new(&s), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_true(psi_set_add(s, p[0], EPOLLIN, &tag) >= 0);
        assert_int_equal(psi_set_size(s), 1);
        assert_false(wait_events(s, 0));
        assert_int_equal(psi_set_take(s, ev, 4), 0);

        for (int round = 0; round < 3; round++) {
                char buf[8];
                assert_int_equal(write(p[1], "x", 1), 1);
                assert_true(wait_events(s, DEADLINE_MS));
                /* A trigger's event is consumed by the waiter's poll; a pipe's data must be read. */
                assert_int_equal(read(p[0], buf, sizeof buf), 1);
                assert_int_equal(psi_set_take(s, ev, 4), 1);
                assert_ptr_equal(ev[0].userdata, &tag);
                assert_false(ev[0].gone);
                assert_int_equal(psi_set_take(s, ev, 4), 0);
        }

        psi_set_free(s);
        close(p[0]);
        close(p[1]);
}

/* HUP with the fire event is reported as gone, once: the member is not re-enabled, so the waiter
 * does not spin on a state that never clears. */
static void test_set_gone_wins_once(void **state) {
        PsiSet *s;
        PsiEvent ev[4];
        int p[2], tag;

        assert_int_equal(psi_set_new(&s), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        /* Both before the member is added, so the waiter cannot see the write alone. */
        assert_int_equal(write(p[1], "x", 1), 1);
        close(p[1]); /* the read end now reports IN|HUP */
        int64_t h = psi_set_add(s, p[0], EPOLLIN, &tag);
        assert_true(h >= 0);
        assert_true(wait_events(s, DEADLINE_MS));
        assert_int_equal(psi_set_take(s, ev, 4), 1);
        assert_true(ev[0].gone);
        assert_ptr_equal(ev[0].userdata, &tag);
        assert_false(wait_events(s, 200));
        assert_int_equal(psi_set_take(s, ev, 4), 0);
        assert_int_equal(psi_set_remove(s, h), 0);
        assert_int_equal(psi_set_remove(s, h), -ENOENT);
        assert_int_equal(psi_set_size(s), 0);

        psi_set_free(s);
        close(p[0]);
}

/* EPOLLERR on a write end whose reader went away, with a fire mask that never fires. */
static void test_set_err_on_write_end(void **state) {
        PsiSet *s;
        PsiEvent ev[4];
        int p[2], tag;

        assert_int_equal(psi_set_new(&s), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_true(psi_set_add(s, p[1], EPOLLPRI, &tag) >= 0);
        assert_false(wait_events(s, 0));
        close(p[0]);
        assert_true(wait_events(s, DEADLINE_MS));
        assert_int_equal(psi_set_take(s, ev, 4), 1);
        assert_true(ev[0].gone);
        psi_set_free(s);
        close(p[1]);
}

/* An event queued for a member that was removed is dropped, also when a new member took its
 * slot: the new member's userdata never receives the old member's event. */
static void test_set_removed_member_dropped(void **state) {
        PsiSet *s;
        PsiEvent ev[4];
        int a[2], b[2], tag_a, tag_b;
        char buf[8];

        assert_int_equal(psi_set_new(&s), 0);
        assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
        int64_t ha = psi_set_add(s, a[0], EPOLLIN, &tag_a);
        assert_true(ha >= 0);
        assert_int_equal(write(a[1], "x", 1), 1);
        assert_true(wait_events(s, DEADLINE_MS));
        assert_int_equal(psi_set_remove(s, ha), 0);
        int64_t hb = psi_set_add(s, b[0], EPOLLIN, &tag_b);
        assert_true(hb >= 0);
        assert_int_not_equal(hb, ha);
        assert_int_equal(psi_set_take(s, ev, 4), 0);

        assert_int_equal(write(b[1], "y", 1), 1);
        assert_true(wait_events(s, DEADLINE_MS));
        assert_int_equal(read(b[0], buf, sizeof buf), 1);
        assert_int_equal(psi_set_take(s, ev, 4), 1);
        assert_ptr_equal(ev[0].userdata, &tag_b);
        assert_int_equal(psi_set_remove(s, ha), -ENOENT); /* a stale handle removes nothing */
        assert_int_equal(psi_set_size(s), 1);

        psi_set_free(s);
        close(a[0]);
        close(a[1]);
        close(b[0]);
        close(b[1]);
}

/* Many members firing at once: every member's event arrives, with its own userdata, also when
 * take() is given less room than there are events. (A pipe stays readable until it is read, and
 * take() re-enables a member before the test reads it, so a member may report twice here; a
 * trigger's event is consumed by the waiter's own poll.) */
#define MANY 400 /* 800 pipe fds: under the usual soft limit of 1,024 */
static void test_set_many(void **state) {
        static int p[MANY][2];
        static bool seen[MANY];
        PsiSet *s;
        PsiEvent ev[7];
        unsigned distinct = 0;

        assert_int_equal(psi_set_new(&s), 0);
        for (int i = 0; i < MANY; i++) {
                assert_int_equal(pipe2(p[i], O_CLOEXEC | O_NONBLOCK), 0);
                assert_true(psi_set_add(s, p[i][0], EPOLLIN, &p[i]) >= 0);
                seen[i] = false;
        }
        assert_int_equal(psi_set_size(s), MANY);
        for (int i = 0; i < MANY; i++)
                assert_int_equal(write(p[i][1], "x", 1), 1);
        while (distinct < MANY && wait_events(s, DEADLINE_MS)) {
                size_t n = psi_set_take(s, ev, ELEMENTSOF(ev));
                assert_true(n <= ELEMENTSOF(ev));
                for (size_t k = 0; k < n; k++) {
                        int i = (int) ((int(*)[2]) ev[k].userdata - p);
                        char buf[8];
                        assert_true(i >= 0 && i < MANY);
                        assert_false(ev[k].gone);
                        distinct += !seen[i];
                        seen[i] = true;
                        (void) !read(p[i][0], buf, sizeof buf);
                }
        }
        assert_int_equal(distinct, MANY);
        psi_set_free(s);
        for (int i = 0; i < MANY; i++) {
                close(p[i][0]);
                close(p[i][1]);
        }
}

static void test_set_bad_fd(void **state) {
        PsiSet *s;
        int tag;

        assert_int_equal(psi_set_new(&s), 0);
        assert_int_equal(psi_set_add(s, -1, EPOLLIN, &tag), -EBADF);
        assert_int_equal(psi_set_add(s, 999999, EPOLLIN, &tag), -EBADF);
        assert_int_equal(psi_set_size(s), 0);
        assert_int_equal(psi_set_remove(s, 0), -ENOENT);
        assert_int_equal(psi_set_remove(s, -5), -ENOENT);
        assert_null(psi_set_free(s));
        assert_null(psi_set_free(NULL));
}

/* The trigger is written with its NUL (the kernel overwrites the buffer's last byte). */
static void test_trigger_written_with_nul(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", buf[64];
        PsiTriggerSpec spec = { PSI_RESOURCE_MEMORY, PSI_STALL_SOME, 150000, 2000000 };
        int dfd, fd;
        ssize_t n;

        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(dfd >= 0);
        fd = openat(dfd, "memory.pressure", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);

        assert_int_equal(psi_trigger_open(dfd, "memory.pressure", &spec, &fd), 0);
        assert_true(fd >= 0);
        close(fd);
        n = read_file_at(dfd, "memory.pressure", buf, sizeof buf);
        assert_int_equal(n, 20);
        assert_memory_equal(buf, "some 150000 2000000\0", 20);

        assert_int_equal(psi_trigger_open(dfd, "cpu.pressure", &spec, &fd), -ENOENT);

        unlinkat(dfd, "memory.pressure", 0);
        close(dfd);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_fires_once_per_event),
                cmocka_unit_test(test_set_gone_wins_once),
                cmocka_unit_test(test_set_err_on_write_end),
                cmocka_unit_test(test_set_removed_member_dropped),
                cmocka_unit_test(test_set_many),
                cmocka_unit_test(test_set_bad_fd),
                cmocka_unit_test(test_trigger_written_with_nul),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
