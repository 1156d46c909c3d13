/* SPDX-License-Identifier: MIT */
/* One inotify instance on the event loop: watches added and removed by path, and every event
 * read handed to a handler, then one call with no event when a read burst is done (the place to
 * act once on what the burst said). Logs nothing; the handler decides what is news. */
#pragma once

#include <ev.h>
#include <stdint.h>
#include <sys/inotify.h>

typedef struct Dirwatch Dirwatch;

/* e is one event, or NULL once after the events of one wakeup. */
typedef void (*DirwatchHandler)(Dirwatch *d, const struct inotify_event *e, void *userdata);

/* Creates the instance (non-blocking, close-on-exec) and starts watching it on loop. 0 or -errno
 * (EMFILE: the per-user limit of inotify instances). */
int dirwatch_new(struct ev_loop *loop, DirwatchHandler handler, void *userdata, Dirwatch **ret);

/* After each wakeup's events, the loop reads none for seconds (0, the default: reads at once):
 * however fast directories are made, at most one wakeup per gap, its events read together. */
void dirwatch_set_gap(Dirwatch *d, double seconds);

/* Stops the watcher before closing the instance. NULL-safe; returns NULL. */
Dirwatch *dirwatch_free(Dirwatch *d);

/* inotify_add_watch(): the watch descriptor, or -errno (ENOSPC: fs.inotify.max_user_watches). */
int dirwatch_add(Dirwatch *d, const char *path, uint32_t mask);

/* inotify_rm_watch(), ignoring a watch the kernel already dropped. */
void dirwatch_remove(Dirwatch *d, int wd);

/* Reads what is pending and hands it to the handler (the loop calls it when the fd is readable;
 * tests call it directly). */
void dirwatch_dispatch(Dirwatch *d);

int dirwatch_fd(const Dirwatch *d);
