/* SPDX-License-Identifier: MIT */
/* Which cgroup limits a resource, the one answer for the culprit scope and the incident's
 * "limits": which hierarchy holds each controller (cgroup2, or the cgroup-v1 mount the Sysroot
 * found on hybrid hosts), the cgroup the trigger cgroup's tasks are in there (on v1 learnt from
 * /proc/<pid>/cgroup of a process of the cgroup: the v1 path can differ from the v2 one), the
 * nearest cgroup from there up to the root that sets a limit and what it sets (cgroup2 cpu.max,
 * memory.max, memory.high, io.max; v1 cpu.cfs_quota_us, memory.limit_in_bytes,
 * blkio.throttle.*_device), and the cgroup2 cgroup whose processes compete for it. Resources are
 * PsiResource's cpu, memory and io (irq has no limits). Reads through a Sysroot (never
 * /proc/self/mountinfo itself); never logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/limits-io.h"
#include "probes/limits.h"
#include "probes/pressure.h"
#include "probes/sysroot.h"

/* Which hierarchy holds each controller. Borrows the Sysroot, which must outlive it. */
typedef struct LimitsHierarchy {
        const Sysroot *sysroot;
        LimitsSource source[_PSI_RESOURCE_MAX]; /* NONE for irq */
        int v1_fd[_PSI_RESOURCE_MAX];           /* the v1 mount's directory, -EBADF unless source is V1 */
} LimitsHierarchy;

/* A controller is on cgroup2 when the cgroup2 root's cgroup.controllers lists it, else on the v1
 * mount the Sysroot found for it (sysroot_open_v1_mount(): cpu, memory, blkio), else nowhere
 * (LIMITS_SOURCE_NONE). Reads no mountinfo. 0 or -ENOMEM. */
int limits_hierarchy_open(const Sysroot *s, LimitsHierarchy **ret);
LimitsHierarchy *limits_hierarchy_free(LimitsHierarchy *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(LimitsHierarchy *, limits_hierarchy_free);

/* The path of the controller's v1 cgroup from a /proc/<pid>/cgroup buffer: the line
 * "ID:CONTROLLERS:PATH" whose comma-separated CONTROLLERS include controller ("cpu" matches
 * "cpu,cpuacct", not "cpuset"). Writes PATH as printed ("/a/b"), truncated never: 0, -ENOENT (no
 * such line), -ENOBUFS (longer than size-1), -EBADMSG when two lines list it (a cgroup name with
 * a newline forged one). */
int limits_parse_proc_cgroup_v1(const char *buf, size_t len, const char *controller, char *out, size_t size);

#define LIMITS_PATH_MAX 1024

/* What the limiting cgroup sets, by the file that sets it. */
typedef enum LimitsKind {
        LIMITS_KIND_NONE,
        LIMITS_KIND_CPU_MAX,               /* cgroup2 cpu.max */
        LIMITS_KIND_CPU_CFS_QUOTA,         /* v1 cpu.cfs_quota_us */
        LIMITS_KIND_MEMORY_MAX,            /* cgroup2 memory.max */
        LIMITS_KIND_MEMORY_HIGH,           /* cgroup2 memory.high (when memory.max is not finite) */
        LIMITS_KIND_MEMORY_LIMIT_IN_BYTES, /* v1 memory.limit_in_bytes */
        LIMITS_KIND_IO_MAX,                /* cgroup2 io.max */
        LIMITS_KIND_BLKIO_THROTTLE,        /* v1 blkio.throttle.{read,write}_{bps,iops}_device */
        _LIMITS_KIND_MAX,
} LimitsKind;

typedef struct LimitsSetting {
        LimitsKind kind;
        uint64_t value;     /* memory: bytes; cpu: the quota in us; io: 0 (per-device rules) */
        uint64_t period_us; /* cpu */
} LimitsSetting;

/* The file that sets it ("memory.max", "blkio.throttle"), NULL for NONE. */
const char *limits_kind_file(LimitsKind k);

typedef struct LimitsLocation {
        PsiResource resource;
        LimitsSource source;                /* the hierarchy of path and limited_path; NONE: no controller */
        char path[LIMITS_PATH_MAX];         /* the cgroup there, relative to its mount ("" for the root) */
        bool limited;                       /* path or an ancestor sets a limit: */
        char limited_path[LIMITS_PATH_MAX]; /* the nearest such, path itself included */
        LimitsSetting limit;                /* what limited_path sets; kind NONE unless limited */
        pid_t via_pid;                      /* v1: the process whose /proc/<pid>/cgroup gave path; 0 on cgroup2 */
} LimitsLocation;

/* Finds where the tasks of the cgroup2 cgroup v2_path ("a/b" or "/a/b", "" for the root) are
 * limited for resource (cpu, memory or io; -EOPNOTSUPP for irq). On cgroup2 path is v2_path. On v1 it is the v1 cgroup
 * of a process of the cgroup, or else of its first descendant that has one in cgroup_walk() order (at most 64 cgroups,
 * 8 deep; one that cannot be read is passed over), with the descendant's part of the path taken off when the v1
 * path ends with it, as when both hierarchies mirror each other. Limits: cpu a quota (cpu.max, cpu.cfs_quota_us !=
 * -1); memory a finite memory.max or memory.high (v1 limit_in_bytes); io a finite io.max or v1 throttle rule;
 * ret->limit says which (memory: memory.max when finite, else memory.high). Returns 0 (also with source NONE, or
 * limited false); -ENOENT (-ENODEV) when the cgroup is gone; -ESRCH when on v1 no process of the subtree could tell its
 * v1 cgroup (an empty cgroup); other -errno. */
int limits_locate(const LimitsHierarchy *h, const char *v2_path, PsiResource resource, LimitsLocation *ret);

/* The cgroup2 cgroup whose processes compete for loc's limit, as the first *ret_len bytes of
 * v2_path (the path loc was located for; its leading '/' counted as given): on cgroup2 the
 * limited cgroup itself. On v1 the limited cgroup when v2_path or one of its ancestors has its
 * path (hosts whose hierarchies agree), else the ancestor of v2_path as many levels up as the
 * limited cgroup is above loc->path. -ENOENT when loc is not limited or that is the root (the
 * node is the scope). Pure. */
int limits_location_scope(const LimitsLocation *loc, const char *v2_path, size_t *ret_len);

/* Opens the directory of cgroup path ("" root) in source's hierarchy of resource. 0 or -errno. */
int limits_open_cgroup(const LimitsHierarchy *h, PsiResource resource, LimitsSource source, const char *path,
                       int *ret_fd);

/* Read the resource's limits of cgroup path in source's hierarchy (typically a LimitsLocation's
 * path and limited_path): limits_read_{cpu,memory,io}_{v2,v1}() on limits_open_cgroup(); io's
 * devices named from /sys. 0 or -errno as those. */
int limits_read_cpu_at(const LimitsHierarchy *h, LimitsSource source, const char *path, CpuLimits *ret);
int limits_read_memory_at(const LimitsHierarchy *h, LimitsSource source, const char *path, MemoryLimits *ret);
int limits_read_io_at(const LimitsHierarchy *h, LimitsSource source, const char *path, IoLimits *ret);
