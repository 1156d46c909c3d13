/* SPDX-License-Identifier: MIT */
/* The directories of the cgroup tree that discovery watches with inotify: each by its path and by
 * its watch descriptor (both found in constant time, so a walk of a tree of tens of thousands of
 * cgroups is not quadratic), with who owns it, within a limit on how many. A directory owned by a
 * user (a delegated cgroup, which that user can fill with empty directories) takes a watch only
 * within a share: one user at most 1/DIRSET_USER_SHARE of the limit, all users together at most
 * half, so that no user takes the watches root's directories need, nor another user's. Pure
 * bookkeeping: no I/O, no inotify, no logging (discovery adds and removes the watches). An owner
 * of 0 is root, or whoever the agent runs as: its caller's to say. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/model.h"

typedef struct Dirset Dirset;

/* One user's share of the limit: 1/16 of it (what `psidiag check` tells too). */
#define DIRSET_USER_SHARE CONFIG_DIR_WATCHES_USER_SHARE

/* An empty set of at most max directories (at least 1). 0 or -ENOMEM. */
int dirset_new(unsigned max, Dirset **ret);
/* NULL-safe; returns NULL. */
Dirset *dirset_free(Dirset *s);

/* A new limit (a reload's): the directories watched stay; new ones are admitted under it. */
void dirset_set_max(Dirset *s, unsigned max);
unsigned dirset_max(const Dirset *s);
size_t dirset_count(const Dirset *s);

/* Whether one more directory owned by owner may be watched: 0; -ENOSPC at the limit; -EDQUOT when
 * owner is not root and it has its share, or the users together their half. */
int dirset_admit(const Dirset *s, uid_t owner);

/* The path of the directory watched as wd, or NULL; with the flags it was given (the caller's:
 * why it is watched), when ret_flags is not NULL. */
const char *dirset_path(const Dirset *s, int wd, unsigned *ret_flags);

/* Whether path is watched. */
bool dirset_has(const Dirset *s, const char *path);

/* Whether path is watched; if it is, flags are added to its own. */
bool dirset_mark(Dirset *s, const char *path, unsigned flags);

/* Takes note of a watch (path copied). 0; -EEXIST when wd or path is there already (nothing
 * changes); -ENOMEM. It does not judge the limit: dirset_admit() does, before the watch is added. */
int dirset_add(Dirset *s, int wd, const char *path, uid_t owner, unsigned flags);

/* Forgets the watch wd (its directory went: IN_IGNORED). Whether it was there. */
bool dirset_remove(Dirset *s, int wd);
