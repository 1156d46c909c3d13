/* SPDX-License-Identifier: MIT */
/* The agent's cgroup namespace on the host. From a cgroup namespace of its own (a container's,
 * without hostCgroupns) the kernel shows every process's cgroup relative to the namespace's root,
 * and those outside it as "/../..", while a cgroup2 mount of the host's tree (a hostPath mount of
 * /sys/fs/cgroup) shows the whole tree (kernel-facts.md: cgroupns-paths). This module finds where
 * the namespace's root lies in that tree, with no privilege beyond reading it, so that every path
 * from /proc/<pid>/cgroup can be resolved to the host path the watches and incidents use. Reads
 * the cgroup tree; logs nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "probes/sysroot.h"

/* How many levels the cgroup2 mount's root lies above our namespace's root, from its mountinfo
 * root field: "/" 0 (the mount is the namespace's own, or there is no namespace), "/../.." 2.
 * -EOPNOTSUPP for a root with names ("/../x": the mount does not hold our namespace's root),
 * -EINVAL for one that is not a path. */
int cgns_parse_mount_root(const char *root, unsigned *ret_up);

/* The namespace's root as a path relative to the cgroup2 mount ("a/b"): the directory exactly up
 * levels below the mount whose self_cgroup (our own cgroup as /proc/self/cgroup shows it, "/" or
 * "/x") lists pid in its cgroup.procs. Looks at most at max_dirs directories. 0; -ENOENT when none
 * does; -E2BIG when max_dirs were looked at first; -ENOBUFS; or -errno of the mount's root. */
int cgns_find_root(int cgroup2_fd, unsigned up, const char *self_cgroup, pid_t pid, unsigned max_dirs, char *ret,
                   size_t size);

/* Resolves path, from /proc/<pid>/cgroup (relative to the namespace's root; "/../x" outside it),
 * against root (the namespace's root relative to the mount, "" the mount's root): the host path
 * with a leading "/", ".." taken out. 0; -EINVAL when it climbs above the mount's root or is not
 * absolute; -ENOBUFS. */
int cgns_resolve(const char *root, const char *path, char *out, size_t size);

typedef struct CgroupNamespace {
        bool private_root; /* our namespace's root is not the mount's root */
        bool resolved;     /* and root was found: paths resolve */
        int error;         /* why not (-errno), when private_root && !resolved */
        unsigned up;       /* levels from the mount's root down to ours */
        char root[1024];   /* relative to the mount, "" when !private_root */
} CgroupNamespace;

/* Where our namespace's root lies under s's cgroup2 mount (s->cgroup2_root; self: our own cgroup
 * as /proc/self/cgroup shows it; getpid()): private_root false when there is nothing to resolve. */
void cgns_locate(const Sysroot *s, const char *self, CgroupNamespace *ret);
