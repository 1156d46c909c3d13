/* SPDX-License-Identifier: MIT */
#include "base/macro.h"
#include "sampling/exitwatch.h"

static void on_io(struct ev_loop *loop, ev_io *io, int revents) {
        exit_watch_drain(ASSERT_PTR(io->data));
}

int exit_watch_start(ExitWatch *x, struct ev_loop *loop, const char *cpus, ExitRecords *into) {
        int r;

        *x = (ExitWatch) { .loop = loop, .into = into };
        r = taskstats_exit_listener_new(cpus, &x->listener);
        if (r < 0) {
                x->listener = NULL;
                return r;
        }
        ev_io_init(&x->io, on_io, taskstats_exit_listener_fd(x->listener), EV_READ);
        x->io.data = x;
        ev_io_start(loop, &x->io);
        return 0;
}

void exit_watch_drain(ExitWatch *x) {
        if (x->listener &&
            taskstats_exit_listener_drain(x->listener, 0, exit_records_collect, x->into, &x->into->lost) < 0)
                exit_watch_stop(x); /* the listener broke */
}

void exit_watch_stop(ExitWatch *x) {
        if (!x->listener)
                return;
        ev_io_stop(x->loop, &x->io);
        x->listener = taskstats_exit_listener_free(x->listener);
}
