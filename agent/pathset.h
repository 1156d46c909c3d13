/* SPDX-License-Identifier: MIT */
/* A bounded set of paths, in the order they came: the cgroups a burst of inotify events made, to
 * be walked once each however often they were made again (a user making and removing the same
 * directory as fast as they can), and dropped when they go before their walk. Pure bookkeeping:
 * no I/O, no logging. */
#pragma once

#include <stddef.h>

typedef struct Pathset {
        char **items;
        size_t n, cap, max;
} Pathset;

/* Adds "dir/name" ("name" when dir is ""), once. 0 (added, or there already), -E2BIG (max paths
 * there already), -ENOMEM. */
int pathset_add(Pathset *s, const char *dir, const char *name);

/* Removes path, if there. */
void pathset_remove(Pathset *s, const char *path);

/* Removes everything; pathset_done() frees the storage too. */
void pathset_clear(Pathset *s);
void pathset_done(Pathset *s);
