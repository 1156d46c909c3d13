/* SPDX-License-Identifier: MIT */
/* Starting a helper thread of the daemon: with a small stack, and with every signal blocked, so
 * that signals stay the event loop's. No dependencies beyond libc. */
#pragma once

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

/* 0 or -errno (EAGAIN: no thread can be made now). */
static inline int thread_start(pthread_t *ret, size_t stack_size, void *(*fn)(void *), void *userdata) {
        pthread_attr_t attr;
        sigset_t all, saved;
        int r;

        pthread_attr_init(&attr);
        (void) pthread_attr_setstacksize(&attr, stack_size);
        /* The new thread inherits the mask in force here. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = -pthread_create(ret, &attr, fn, userdata);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
        pthread_attr_destroy(&attr);
        return r;
}
