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
        DirwatchHandler handler;
        void *userdata;
};

static void on_io(struct ev_loop *loop, ev_io *io, int revents) {
        dirwatch_dispatch(ASSERT_PTR(io->data));
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
        *ret = d;
        return 0;
}

Dirwatch *dirwatch_free(Dirwatch *d) {
        if (!d)
                return NULL;
        ev_io_stop(d->loop, &d->io);
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
