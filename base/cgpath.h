/* SPDX-License-Identifier: MIT */
/* The questions about cgroup paths that the agent asks in many places, answered once: whether one
 * cgroup covers another (one rule, whatever form the paths come in), its parent, the deepest of
 * several that cover one. A path is relative to the cgroup2 mount ("a/b", "" the root); NULL means
 * node-wide (an ancestor) or unknown (a cgroup). Pure string functions: no I/O, no allocation, no
 * logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The one rule of "covers" (the functions below add what NULL and slashes mean): true when the path
 * ancestor[0..ancestor_len) covers cgroup[0..cgroup_len), both as written (not NUL-terminated, no
 * slash trimmed): the ancestor is empty (the root), the cgroup itself, or a prefix of it that ends a
 * component, at a '/' of the cgroup ("a" covers "a/b", not "a/bc") or at its own trailing '/' ("a/"
 * covers "a/bc", not "a"; "/" covers "/a", not "a"). Reads nothing past either range. */
bool cgpath_covers_range(const char *ancestor, size_t ancestor_len, const char *cgroup, size_t cgroup_len);

/* The next component of the path at *p ("a//b/" gives "a", then "b"): false at the end; else
 * [*ret_seg, *ret_seg + *ret_len) and *p past it. Slashes are separators, never components. */
bool cgpath_next(const char **p, const char **ret_seg, size_t *ret_len);

/* True when `ancestor` covers `cgroup`: it is node-wide (NULL), the root (""), the cgroup itself,
 * or one of its ancestors ("a" covers "a/b", not "ab"): cgpath_covers_range(). An unknown cgroup
 * (NULL) is covered only by node-wide and root ancestors. */
bool cgpath_covers(const char *ancestor, const char *cgroup);

/* The same of paths as others write them (a killer's mark, /proc/<pid>/cgroup): leading slashes
 * on both and trailing ones on the ancestor are ignored ("/a/" covers "a/b"; "", "/" cover every
 * cgroup), then cgpath_covers_range(). NULL on either side is unknown and covers nothing, nor is
 * covered: false (not node-wide as for cgpath_covers()). */
bool cgpath_covers_untrimmed(const char *ancestor, const char *cgroup);

/* Cuts path to its parent in place ("a/b" -> "a", "a" -> ""). False, and path unchanged, when it is
 * the root (""). */
bool cgpath_parent(char *path);

/* path without its leading slashes ("/a/b" -> "a/b", "/" -> ""): /proc/<pid>/cgroup and the
 * kernel's task_memcg name cgroups from the mount with a leading "/". */
const char *cgpath_trim(const char *path);

/* The index of the deepest of ancestors[0..n) that covers cgroup (cgpath_covers()): a cgroup path
 * beats node-wide (NULL), a longer path a shorter one, the first one a tie. -1 when none covers. */
ssize_t cgpath_deepest(const char *const *ancestors, size_t n, const char *cgroup);
