/* SPDX-License-Identifier: MIT */
/* The one walk of a cgroup subtree (cgroup2, or a cgroup-v1 hierarchy) through directory fds: each
 * cgroup is handed to a visitor, parents before children, depth-first. This module owns what an
 * unreadable cgroup means for every subtree walk; what is read in each cgroup is the visitor's.
 * It does not know any cgroup file. Never logs; allocates only the DIR of each directory listed.
 *
 * The error policy:
 * - The root: an error of the visitor on it, or failing to list it, fails the walk (-errno): there
 *   is no result without it. A root that is gone is -ENOENT/-ENODEV (cgroup_is_gone()).
 * - A child that vanished: -ENOENT or -ENODEV from opening it, listing it, or from the visitor on
 *   it (a cgroup removed while we walk, an expected race) skips it and its subtree, silently.
 * - Any other error on a child (-EMFILE, -EACCES, a path longer than CGROUP_WALK_PATH_MAX
 *   (-ENAMETOOLONG), a child deeper than the walk's max_depth (-ELOOP), the visitor's -errno for a
 *   malformed file of it) skips it and its subtree and is counted: the walk returns how many, and
 *   hands each to unreadable() with its parent, so the caller marks its result partial, and where.
 * - -ENOMEM, from the visitor or the walk, ends the walk and fails it.
 * - Entries that are not directories (files, symlinks such as a fixture's escape) are not cgroups:
 *   neither walked nor counted. */
#pragma once

#include <stddef.h>

/* Depth of the deepest cgroup a walk visits by default (the root is 0). */
#define CGROUP_WALK_MAX_DEPTH 64
/* Longest relative path ("a/b/c", without its NUL) of a cgroup a walk visits. */
#define CGROUP_WALK_PATH_MAX 4095

/* A visitor's return to end the walk there (what it looked for is found, its budget spent). */
#define CGROUP_WALK_STOP 1
/* A visitor's return to go on without the cgroup's children (what it looks for is never below). */
#define CGROUP_WALK_PRUNE 2

typedef struct CgroupWalkNode CgroupWalkNode;
struct CgroupWalkNode {
        int fd;                       /* the cgroup's directory: the walk's, open during the visit */
        const char *path;             /* relative to the root: "" the root itself, "a/b" */
        size_t path_len;              /* strlen(path); a parent's path is only its first path_len bytes */
        unsigned depth;               /* 0 the root, 1 its children */
        const CgroupWalkNode *parent; /* NULL for the root */
        size_t tag;                   /* the visitor's to set (its entry's index): children see it in parent */
};

typedef struct CgroupWalk {
        /* Called once per cgroup. 0 to go on (into its children too), CGROUP_WALK_PRUNE to go on
         * past its children, CGROUP_WALK_STOP to end the walk, or -errno (see the policy above).
         * Must not close node->fd. */
        int (*visit)(CgroupWalkNode *node, void *userdata);
        /* Optional: called for each child of parent that could not be read (not: one that
         * vanished), with its directory name and the error; the walk goes on. */
        void (*unreadable)(const CgroupWalkNode *parent, const char *name, int error, void *userdata);
        unsigned max_depth; /* 0: CGROUP_WALK_MAX_DEPTH */
        /* Optional: the root's own path and depth in a larger tree ("a/b", 2), when the walk is of
         * a subtree: every node's path and depth are then the larger tree's (NULL: "" and 0). */
        const char *root_path;
        unsigned root_depth;
        void *userdata;
} CgroupWalk;

/* Walks the cgroup at root_fd (the caller's, left open) and its descendants with w, under the
 * policy above. Returns the number of cgroups below the root that could not be read (0: the walk
 * saw the whole subtree, or as much as it was let see before CGROUP_WALK_STOP), or -errno: the
 * root's error, or -ENOMEM. */
int cgroup_walk(int root_fd, const CgroupWalk *w);
