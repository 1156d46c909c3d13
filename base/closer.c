/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/array.h"
#include "base/closer.h"
#include "base/macro.h"
#include "base/thread.h"

/* A helper closes nothing but file descriptors: a small stack is plenty. */
#define HELPER_STACK (64 * 1024)

typedef struct Helper {
        Closer *closer;
        pthread_t thread;
        bool started; /* not yet joined */
        bool running; /* not yet past its last use of the closer's state */
} Helper;

struct Closer {
        pthread_mutex_t lock;
        pthread_cond_t progress; /* a close finished */
        int *fds;                /* queued, not yet taken by a helper */
        size_t n_fds, cap_fds;
        size_t in_flight; /* taken by a helper, being closed */
        unsigned running;
        unsigned max_threads;
        CloserCloseFn close_fn;
        Helper *helpers;
};

static void *helper_main(void *userdata) {
        Helper *h = userdata;
        Closer *c = h->closer;

        pthread_mutex_lock(&c->lock);
        while (c->n_fds > 0) {
                int fd = c->fds[--c->n_fds];
                c->in_flight++;
                pthread_mutex_unlock(&c->lock);
                (void) c->close_fn(fd);
                pthread_mutex_lock(&c->lock);
                c->in_flight--;
                pthread_cond_broadcast(&c->progress);
        }
        h->running = false;
        c->running--;
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

int closer_new(unsigned max_threads, CloserCloseFn close_fn, Closer **ret) {
        Closer *c = calloc(1, sizeof *c);

        if (!c || max_threads == 0) {
                free(c);
                return max_threads == 0 ? -EINVAL : -ENOMEM;
        }
        c->helpers = calloc(max_threads, sizeof *c->helpers);
        if (!c->helpers) {
                free(c);
                return -ENOMEM;
        }
        c->max_threads = max_threads;
        c->close_fn = close_fn ? close_fn : close;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->progress, NULL);
        *ret = c;
        return 0;
}

/* Under lock. Starts one helper in a free slot (joining one that has finished). */
static int helper_start(Closer *c) {
        Helper *h = NULL;
        int r;

        for (unsigned i = 0; i < c->max_threads && !h; i++)
                if (!c->helpers[i].running)
                        h = &c->helpers[i];
        if (!h)
                return -EAGAIN;
        if (h->started) {
                /* It has left the lock for good and only has to return. */
                pthread_join(h->thread, NULL);
                h->started = false;
        }
        *h = (Helper) { .closer = c, .running = true };
        r = thread_start(&h->thread, HELPER_STACK, helper_main, h);
        if (r < 0) {
                h->running = false;
                return r;
        }
        h->started = true;
        c->running++;
        return 0;
}

void closer_push(Closer *c, int fd) {
        if (fd < 0)
                return;
        pthread_mutex_lock(&c->lock);
        if (array_grow((void **) &c->fds, &c->cap_fds, c->n_fds, 64, sizeof *c->fds) < 0) {
                pthread_mutex_unlock(&c->lock);
                (void) c->close_fn(fd);
                return;
        }
        c->fds[c->n_fds++] = fd;
        /* A helper for every queued descriptor that no idle helper will take, up to the maximum:
         * every close waits for a grace period, so more closes at once means more share one. */
        while (c->running < c->max_threads && c->running - c->in_flight < c->n_fds && helper_start(c) >= 0)
                ;
        if (c->running == 0) {
                /* No helper could start (thread limit, memory): close here rather than never. */
                c->n_fds--;
                pthread_mutex_unlock(&c->lock);
                (void) c->close_fn(fd);
                return;
        }
        pthread_mutex_unlock(&c->lock);
}

size_t closer_pending(Closer *c) {
        size_t n;

        pthread_mutex_lock(&c->lock);
        n = c->n_fds + c->in_flight;
        pthread_mutex_unlock(&c->lock);
        return n;
}

void closer_wait_pending(Closer *c, size_t max_pending) {
        pthread_mutex_lock(&c->lock);
        while (c->n_fds + c->in_flight > max_pending)
                pthread_cond_wait(&c->progress, &c->lock);
        pthread_mutex_unlock(&c->lock);
}

void closer_wait(Closer *c) {
        closer_wait_pending(c, 0);
}

Closer *closer_free(Closer *c) {
        if (!c)
                return NULL;
        closer_wait(c);
        /* With the queue empty every helper is returning or about to find it empty: join them
         * before the lock goes. */
        for (unsigned i = 0; i < c->max_threads; i++)
                if (c->helpers[i].started)
                        pthread_join(c->helpers[i].thread, NULL);
        pthread_cond_destroy(&c->progress);
        pthread_mutex_destroy(&c->lock);
        free(c->fds);
        free(c->helpers);
        free(c);
        return NULL;
}
