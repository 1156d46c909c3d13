/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/dirwatch.h"
#include "base/macro.h"

struct Dirwatch {
        struct ev_loop *loop;
        int fd;
        ev_io io;
        ev_timer gap; /* reading paused until it fires */
        double gap_s;
        DirwatchHandler handler;
        void *userdata;
};

static void on_io(struct ev_loop *loop, ev_io *io, int revents) {
        Dirwatch *d = ASSERT_PTR(io->data);

        dirwatch_dispatch(d);
        if (d->gap_s > 0) { /* what comes meanwhile waits in the kernel's queue, read at once */
                ev_io_stop(loop, &d->io);
                ev_timer_set(&d->gap, d->gap_s, 0.);
                ev_timer_start(loop, &d->gap);
        }
}

static void on_gap(struct ev_loop *loop, ev_timer *t, int revents) {
        Dirwatch *d = ASSERT_PTR(t->data);

        ev_io_start(loop, &d->io);
}

void dirwatch_set_gap(Dirwatch *d, double seconds) {
        d->gap_s = seconds;
}

int dirwatch_new(struct ev_loop *loop, DirwatchHandler handler, void *userdata, Dirwatch **ret) {
        Dirwatch *d = calloc(1, sizeof *d);

        if (!d)
                return -ENOMEM;
        *d = (Dirwatch) { .loop = loop, .handler = handler, .userdata = userdata };
        d->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (d->fd < 0) {
                int r = negative_errno();
                free(d);
                return r;
        }
        ev_io_init(&d->io, on_io, d->fd, EV_READ);
        d->io.data = d;
        ev_io_start(loop, &d->io);
        ev_timer_init(&d->gap, on_gap, 0., 0.);
        d->gap.data = d;
        *ret = d;
        return 0;
}

Dirwatch *dirwatch_free(Dirwatch *d) {
        if (!d)
                return NULL;
        ev_io_stop(d->loop, &d->io);
        ev_timer_stop(d->loop, &d->gap);
        safe_close(d->fd);
        free(d);
        return NULL;
}

int dirwatch_add(Dirwatch *d, const char *path, uint32_t mask) {
        int wd = inotify_add_watch(d->fd, path, mask);

        return wd < 0 ? negative_errno() : wd;
}

void dirwatch_remove(Dirwatch *d, int wd) {
        /* EINVAL: the kernel dropped it already (the directory went, IN_IGNORED). */
        (void) inotify_rm_watch(d->fd, wd);
}

int dirwatch_fd(const Dirwatch *d) {
        return d->fd;
}

void dirwatch_dispatch(Dirwatch *d) {
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t k;

        while ((k = read(d->fd, buf, sizeof buf)) > 0)
                for (char *p = buf; p < buf + k;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;

                        p += sizeof *e + e->len;
                        d->handler(d, e, d->userdata);
                }
        d->handler(d, NULL, d->userdata);
}
