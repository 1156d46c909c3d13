/* SPDX-License-Identifier: MIT */
/* The agent's memory of its recent pressure incidents, so an oom incident can name the ones that
 * led to it (`related`), those whose sample still runs included: an incident is added when its
 * sample starts, and forgotten if it ends without one. Bounded three ways, so a long-lived node never grows it: entries
 * older than the lookback are dropped, each cgroup keeps its newest HISTORY_PER_CGROUP, and the whole history its
 * newest HISTORY_MAX. Pure: no I/O, no logging; times are passed in. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/timeutil.h"

#define HISTORY_MAX 1024
#define HISTORY_PER_CGROUP 32
#define HISTORY_ID_MAX 96

typedef struct HistoryEntry {
        char *cgroup; /* "a/b" relative to the cgroup2 mount, "" the root; NULL node-wide */
        char id[HISTORY_ID_MAX];
        usec_t mono_us;
} HistoryEntry;

typedef struct History {
        HistoryEntry *items; /* HISTORY_MAX of them, oldest first */
        size_t n;
        usec_t lookback_us;
} History;

/* 0 or -ENOMEM. */
int history_init(History *h, usec_t lookback_us);

/* Remembers incident id of cgroup at now (times must not go backwards). With a lookback of 0
 * nothing is kept. 0 or -ENOMEM (the entry is not kept). */
int history_add(History *h, const char *cgroup, const char *id, usec_t now_us);

/* Forgets incident id (added at its sample's start, its incident then not written); a no-op when
 * it is not (or no longer) kept. */
void history_forget(History *h, const char *id);

/* The ids of the incidents that concern cgroup (their cgroup covers it: base/cgpath.h) from the lookback before now,
 * newest first, at most max of them. Returns how many were put in ret (pointers into h, valid until the next add). */
size_t history_related(const History *h, const char *cgroup, usec_t now_us, const char **ret, size_t max);

void history_done(History *h);
