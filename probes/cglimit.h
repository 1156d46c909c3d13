/* SPDX-License-Identifier: MIT */
/* Which cgroup limits a resource: whether a cgroup sets a cpu, memory or io limit of its own
 * (cgroup2 cpu.max, memory.max, memory.high, io.max; on hybrid hosts their cgroup-v1 twins at the
 * same path: cpu.cfs_quota_us, memory.limit_in_bytes, blkio.throttle.*_device, read with the
 * readers of probes/limits*.h), and the nearest ancestor that does. It decides where a culprit
 * pass looks: the processes that compete for a limited resource are those under the limit.
 * Missing files mean "no limit", never an error. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/pressure.h"
#include "probes/sysroot.h"

typedef enum CgroupLimitKind {
        CGROUP_LIMIT_NONE,
        CGROUP_LIMIT_CPU_MAX,               /* cgroup2 cpu.max */
        CGROUP_LIMIT_CPU_CFS_QUOTA,         /* v1 cpu.cfs_quota_us */
        CGROUP_LIMIT_MEMORY_MAX,            /* cgroup2 memory.max */
        CGROUP_LIMIT_MEMORY_HIGH,           /* cgroup2 memory.high */
        CGROUP_LIMIT_MEMORY_LIMIT_IN_BYTES, /* v1 memory.limit_in_bytes */
        CGROUP_LIMIT_IO_MAX,                /* cgroup2 io.max */
        CGROUP_LIMIT_BLKIO_THROTTLE,        /* v1 blkio.throttle.{read,write}_{bps,iops}_device */
        _CGROUP_LIMIT_MAX,
} CgroupLimitKind;

typedef struct CgroupLimit {
        CgroupLimitKind kind;
        uint64_t value;     /* memory: bytes; cpu: the quota in us; io: 0 (per-device rules) */
        uint64_t period_us; /* cpu */
} CgroupLimit;

/* The file that sets it ("memory.max"), NULL for NONE. */
const char *cgroup_limit_file(CgroupLimitKind k);

/* The limit on res that the cgroup at path ("a/b" relative to the cgroup2 mount) sets itself:
 * cgroup2's files, else its v1 twin's. memory: memory.max when finite, else memory.high. ret->kind
 * NONE when it sets none (or the files are not there). 0, or -errno when a file is malformed. */
int cgroup_limit_read(const Sysroot *s, const char *path, PsiResource res, CgroupLimit *ret);

/* The nearest of path and its ancestors, the root excluded, that limits res: its path is the first
 * *ret_len bytes of path (leading '/' included as given). -ENOENT when none does (the node is the
 * scope), or -errno. */
int cgroup_limit_find(const Sysroot *s, const char *path, PsiResource res, size_t *ret_len, CgroupLimit *ret);
