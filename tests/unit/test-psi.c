/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent/base/fileio.h"
#include "tests/unit/test-util.h"
#include "triggers/psi.h"

typedef struct Counts {
        int efd, drain_fd;
        unsigned callbacks, fired, gone;
} Counts;

static void on_io(struct ev_loop *loop, ev_io *io, int revents) {
        Counts *c = io->data;
        int r = psi_watch_check(c->efd);

        c->callbacks++;
        assert_true(r >= 0);
        if (r == PSI_WATCH_GONE) {
                c->gone++;
                ev_io_stop(loop, io);
        } else {
                char buf[64];
                c->fired++;
                /* A real trigger's event is consumed by the poll; a pipe's data must be read. */
                if (c->drain_fd >= 0)
                        (void) !read(c->drain_fd, buf, sizeof buf);
        }
}

/* A pipe's read end in a private epoll instance (EPOLLIN standing in for EPOLLPRI), watched by an
 * ev_io on that instance exactly as the agent watches a trigger. */
static void bridge_open(struct ev_loop *loop, Counts *c, ev_io *io, int p[2], bool drain) {
        *c = (Counts) { .drain_fd = -1 };
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(psi_watch_new(p[0], EPOLLIN, &c->efd), 0);
        if (drain)
                c->drain_fd = p[0];
        ev_io_init(io, on_io, c->efd, EV_READ);
        io->data = c;
        ev_io_start(loop, io);
}

/* The loop only wakes for the fire mask, once per event, and does not spin while idle. */
static void test_bridge_fires_once_per_event(void **state) {
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Counts c;
        ev_io io;
        int p[2];

        bridge_open(loop, &c, &io, p, true);

        ev_run(loop, EVRUN_NOWAIT);
        assert_int_equal(c.callbacks, 0);

        assert_int_equal(write(p[1], "x", 1), 1);
        ev_run(loop, EVRUN_ONCE);
        assert_int_equal(c.fired, 1);

        for (int i = 0; i < 100; i++)
                ev_run(loop, EVRUN_NOWAIT);
        assert_int_equal(c.callbacks, 1);

        assert_int_equal(write(p[1], "yy", 2), 2);
        ev_run(loop, EVRUN_ONCE);
        assert_int_equal(c.fired, 2);
        assert_int_equal(c.gone, 0);

        ev_io_stop(loop, &io);
        close(c.efd);
        close(p[0]);
        close(p[1]);
        ev_loop_destroy(loop);
}

/* HUP/ERR together with the fire event is reported as GONE, and only once: the handler stops the
 * watcher, as the agent does, instead of looping on a state that never clears. */
static void test_bridge_err_wins(void **state) {
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Counts c;
        ev_io io;
        int p[2];

        bridge_open(loop, &c, &io, p, false);

        assert_int_equal(write(p[1], "x", 1), 1);
        close(p[1]); /* the read end now reports IN|HUP */
        ev_run(loop, EVRUN_ONCE);
        for (int i = 0; i < 10; i++)
                ev_run(loop, EVRUN_NOWAIT);
        assert_int_equal(c.gone, 1);
        assert_int_equal(c.fired, 0);
        assert_int_equal(c.callbacks, 1);

        close(c.efd);
        close(p[0]);
        ev_loop_destroy(loop);
}

/* EPOLLERR on a write end whose reader went away. */
static void test_bridge_err_on_write_end(void **state) {
        int p[2], efd;

        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(psi_watch_new(p[1], EPOLLPRI, &efd), 0);
        assert_int_equal(psi_watch_check(efd), PSI_WATCH_FIRED); /* nothing pending: the caller was woken */
        close(p[0]);
        assert_int_equal(psi_watch_check(efd), PSI_WATCH_GONE);
        close(efd);
        close(p[1]);
}

static void test_watch_new_bad_fd(void **state) {
        int efd = -1;

        assert_int_equal(psi_watch_new(-1, EPOLLPRI, &efd), -EBADF);
        assert_int_equal(efd, -1);
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
                cmocka_unit_test(test_bridge_fires_once_per_event),
                cmocka_unit_test(test_bridge_err_wins),
                cmocka_unit_test(test_bridge_err_on_write_end),
                cmocka_unit_test(test_watch_new_bad_fd),
                cmocka_unit_test(test_trigger_written_with_nul),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
