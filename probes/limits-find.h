/* SPDX-License-Identifier: MIT */
/* Where a cgroup's cpu, memory and io limits are: which hierarchy holds each controller (cgroup2,
 * or a cgroup-v1 mount on hybrid hosts), the cgroup the trigger cgroup's tasks are in there (on v1
 * learnt from /proc/<pid>/cgroup of a process of the cgroup: the v1 path can differ from the v2
 * one), and the nearest cgroup from there up to the root that sets a limit. Reads through a
 * Sysroot; never logs. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "probes/limits-io.h"
#include "probes/limits.h"
#include "probes/sysroot.h"

typedef enum LimitsResource {
        LIMITS_RESOURCE_CPU,    /* cgroup2 "cpu", v1 "cpu" (often mounted with cpuacct) */
        LIMITS_RESOURCE_MEMORY, /* "memory" in both */
        LIMITS_RESOURCE_IO,     /* cgroup2 "io", v1 "blkio" */
        _LIMITS_RESOURCE_MAX,
} LimitsResource;

const char *limits_resource_to_string(LimitsResource r);

/* Which hierarchy holds each controller. Borrows the Sysroot, which must outlive it. */
typedef struct LimitsHierarchy {
        const Sysroot *sysroot;
        LimitsSource source[_LIMITS_RESOURCE_MAX];
        int v1_fd[_LIMITS_RESOURCE_MAX]; /* the v1 mount's directory, -EBADF unless source is V1 */
} LimitsHierarchy;

/* A controller is on cgroup2 when the cgroup2 root's cgroup.controllers lists it, else on the v1
 * mount that has it (in /proc/self/mountinfo), else nowhere (LIMITS_SOURCE_NONE). 0, or -ENOMEM /
 * -errno from reading mountinfo. */
int limits_hierarchy_open(const Sysroot *s, LimitsHierarchy **ret);
LimitsHierarchy *limits_hierarchy_free(LimitsHierarchy *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(LimitsHierarchy *, limits_hierarchy_free);

/* The path of the controller's v1 cgroup from a /proc/<pid>/cgroup buffer: the line
 * "ID:CONTROLLERS:PATH" whose comma-separated CONTROLLERS include controller ("cpu" matches
 * "cpu,cpuacct", not "cpuset"). Writes PATH as printed ("/a/b"), truncated never: 0, -ENOENT (no
 * such line), -ENOBUFS (longer than size-1). */
int limits_parse_proc_cgroup_v1(const char *buf, size_t len, const char *controller, char *out, size_t size);

#define LIMITS_PATH_MAX 1024

typedef struct LimitsLocation {
        LimitsResource resource;
        LimitsSource source;                /* the hierarchy of path and limited_path; NONE: no controller */
        char path[LIMITS_PATH_MAX];         /* the cgroup there, relative to its mount ("" for the root) */
        bool limited;                       /* path or an ancestor sets a limit: */
        char limited_path[LIMITS_PATH_MAX]; /* the nearest such, path itself included */
        pid_t via_pid;                      /* v1: the process whose /proc/<pid>/cgroup gave path; 0 on cgroup2 */
} LimitsLocation;

/* Finds where the tasks of the cgroup2 cgroup v2_path ("a/b" or "/a/b", "" for the root) are
 * limited for resource. On cgroup2 path is v2_path. On v1 it is the v1 cgroup of a process of
 * the cgroup, or else of its first descendant that has one (with the descendant's part of the
 * path taken off when the v1 path ends with it, as when both hierarchies mirror each other).
 * Limits: cpu a quota (cpu.max, cpu.cfs_quota_us != -1); memory a finite memory.max or
 * memory.high (v1 limit_in_bytes); io a finite io.max or v1 throttle rule. Returns 0 (also with
 * source NONE, or limited false); -ENOENT (-ENODEV) when the cgroup is gone; -ESRCH when on v1 no
 * process of the subtree could tell its v1 cgroup (an empty cgroup); other -errno. */
int limits_locate(const LimitsHierarchy *h, const char *v2_path, LimitsResource resource, LimitsLocation *ret);

/* Opens the directory of cgroup path ("" root) in source's hierarchy of resource. 0 or -errno. */
int limits_open_cgroup(const LimitsHierarchy *h, LimitsResource resource, LimitsSource source, const char *path,
                       int *ret_fd);

/* Read the resource's limits of cgroup path in source's hierarchy (typically a LimitsLocation's
 * path and limited_path): limits_read_{cpu,memory,io}_{v2,v1}() on limits_open_cgroup(); io's
 * devices named from /sys. 0 or -errno as those. */
int limits_read_cpu_at(const LimitsHierarchy *h, LimitsSource source, const char *path, CpuLimits *ret);
int limits_read_memory_at(const LimitsHierarchy *h, LimitsSource source, const char *path, MemoryLimits *ret);
int limits_read_io_at(const LimitsHierarchy *h, LimitsSource source, const char *path, IoLimits *ret);
