/* SPDX-License-Identifier: MIT */
/* Closes file descriptors on short-lived helper threads, so that closes which sleep in the
 * kernel overlap instead of queueing up on the caller. A PSI trigger's close() destroys the
 * trigger and waits for an RCU grace period (psi_trigger_destroy() calls synchronize_rcu()):
 * about 8 ms each, 25 s for 3,000 in a row, while concurrent closes share grace periods
 * (kernel-facts.md: trigger-close). Threads are started as work arrives, up to a maximum,
 * and end when the queue is empty: an idle closer has no thread. Never logs.
 *
 * One owner thread calls these functions; the helpers only close. */
#pragma once

#include <stddef.h>

typedef struct Closer Closer;

/* What closes a descriptor: close(2), or a stand-in that tests can watch. */
typedef int (*CloserCloseFn)(int fd);

/* max_threads >= 1; close_fn NULL for close(2). Returns 0, -EINVAL or -ENOMEM. */
int closer_new(unsigned max_threads, CloserCloseFn close_fn, Closer **ret);

/* Takes fd (a negative one is ignored) and closes it soon. Never fails: when the fd cannot be
 * queued or no helper can be started, it is closed here and now. */
void closer_push(Closer *c, int fd);

/* Descriptors handed over and not yet closed: they still count against RLIMIT_NOFILE. */
size_t closer_pending(Closer *c);

/* Blocks until at most max_pending descriptors handed over are still open. */
void closer_wait_pending(Closer *c, size_t max_pending);

/* Blocks until every descriptor handed over is closed. */
void closer_wait(Closer *c);

/* Waits (closer_wait()), joins the helpers and frees. NULL-safe; returns NULL. */
Closer *closer_free(Closer *c);
