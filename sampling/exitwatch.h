/* SPDX-License-Identifier: MIT */
/* The kernel's exit records heard on the event loop, for a sample or a recording: a taskstats exit
 * listener (probes/taskstats.h) registered at the start, drained into the owner's ExitRecords as
 * records arrive and when asked, deregistered at the stop, so an idle owner listens to nothing. A
 * listener that breaks is stopped: the rest of the owner's time goes without exits. Logs nothing. */
#pragma once

#include <ev.h>
#include <stdbool.h>

#include "probes/taskstats.h"
#include "sampling/exits.h"

typedef struct ExitWatch {
        struct ev_loop *loop;
        TaskstatsExitListener *listener; /* NULL: not listening */
        ev_io io;
        ExitRecords *into;
} ExitWatch;

/* Listens on cpus ("0-3") into `into` (the owner's, kept alive by it). 0, or -errno (nothing
 * listens: no initial PID namespace, no memory; the owner goes without exits). */
int exit_watch_start(ExitWatch *x, struct ev_loop *loop, const char *cpus, ExitRecords *into);
/* The records arrived so far, into the owner's ExitRecords (the dropped ones counted in its lost). */
void exit_watch_drain(ExitWatch *x);
/* Deregisters; NULL-safe on a zeroed or stopped ExitWatch. */
void exit_watch_stop(ExitWatch *x);

static inline bool exit_watch_listening(const ExitWatch *x) {
        return x->listener != NULL;
}
