/* SPDX-License-Identifier: MIT */
/* The descriptors the triggers may take: the open-file limit, less what is open at start, less a
 * reserve for what is opened for a moment or for a sample (a cgroup directory and an exit
 * listener per sample that may run at once, /proc files, outputs). Trigger fds given back are
 * still open until the closer has closed them. Logs the one "out of file descriptors" error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/closer.h"

typedef struct FdBudget {
        long left;        /* LONG_MAX: no limit */
        unsigned starved; /* triggers not armed for lack of descriptors */
        Closer *closer;   /* where given-back trigger fds wait to be closed; may be NULL */
} FdBudget;

/* What one recording watch holds while it records (agent/recording.h): its cgroup's directory, an
 * exit listener, its culprit scope's cgroup directory and, on cgroup v1, the v1 one. */
#define FD_BUDGET_PER_RECORDING 4

/* The reserve for samples that may run at once (watches' and oom incidents') and for recordings
 * that may run at once. */
long fd_budget_reserve(unsigned samples, unsigned recordings);

/* Measures the limit and what is open now. */
void fd_budget_init(FdBudget *b, long reserve, Closer *closer);

/* Takes n, or -EMFILE when there are not n left. When closes still pending are what is missing,
 * waits for as many of them as are missing (a reload that swaps triggers at the limit; otherwise
 * closes never hold up the loop). */
int fd_budget_take(FdBudget *b, long n);

void fd_budget_give(FdBudget *b, long n);

/* When r is EMFILE or ENFILE: counts n_triggers as not armed, logs one clear error the first
 * time, and returns true. False (and nothing counted) for any other r. */
bool fd_budget_starved(FdBudget *b, int r, size_t n_triggers);
