/* SPDX-License-Identifier: MIT */
/* A cgroup's io per device: what it moved and the throttle rules it has, from cgroup2 io.stat and
 * io.max or, on hybrid hosts, cgroup-v1 blkio.throttle.io_service_bytes(_recursive),
 * io_serviced(_recursive) and {read,write}_{bps,iops}_device; device names from
 * /sys/dev/block/MAJ:MIN/uevent. Missing files are "absent", never failures. Parsers are pure;
 * readers read beneath directory fds. Never logs.
 *
 * Beware (block/blk-throttle.h, blk_should_throtl(), 6.x): cgroup-v1 blkio.throttle counters count
 * only bios of a queue on which some cgroup has a throttle rule; elsewhere they stay at "Total 0".
 * cgroup2 io.stat counts every bio. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/limits.h"

#define LIMITS_IO_DEVICES_MAX 16 /* devices kept per reading; more are counted in devices_dropped */
#define LIMITS_DEVNAME_MAX 32

typedef struct IoDeviceLimits {
        uint32_t major, minor;
        char name[LIMITS_DEVNAME_MAX];                     /* "" until limits_io_name_devices() found it */
        bool has_stat;                                     /* io.stat line, or v1 Read/Write lines */
        uint64_t rbytes, wbytes, rios, wios, dbytes, dios; /* v1 "Discard" lines give d* */
        bool has_max;                                      /* io.max line, or a v1 rule */
        uint64_t rbps, wbps, riops, wiops;                 /* LIMITS_UNLIMITED when not set */
} IoDeviceLimits;

typedef struct IoLimits {
        LimitsSource source;
        bool has_stat, has_max; /* the files were there (an empty io.max: no rule) */
        size_t n_devices;
        IoDeviceLimits devices[LIMITS_IO_DEVICES_MAX]; /* in the order the files list them */
        size_t devices_dropped;
} IoLimits;

/* Which v1 blkio file a buffer is. */
typedef enum IoV1File {
        IO_V1_SERVICE_BYTES, /* blkio.throttle.io_service_bytes(_recursive) */
        IO_V1_SERVICED,      /* blkio.throttle.io_serviced(_recursive) */
        IO_V1_READ_BPS,      /* blkio.throttle.read_bps_device */
        IO_V1_WRITE_BPS,
        IO_V1_READ_IOPS,
        IO_V1_WRITE_IOPS,
} IoV1File;

/* The parsers add what buf says to *io, device by device (a device not yet in io is appended, or
 * counted in devices_dropped when io is full). A line they cannot read leaves io as it was.
 *
 * cgroup2 io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N" and keys to skip
 * (iocost's "cost.vrate=100.00", ...). Sets has_stat. A line it cannot read (a device without a
 * name reads "(unknown) " on 6.12 and later: kernel-facts.md: unknown-lines) costs that line and
 * is noted (base/unparsed.h). 0. */
int limits_parse_io_stat(const char *buf, size_t len, IoLimits *io);

/* cgroup2 io.max: "MAJ:MIN rbps=max wbps=N riops=max wiops=N", one line per device with a rule.
 * Sets has_max. Lines it cannot read as io.stat's. 0. */
int limits_parse_io_max(const char *buf, size_t len, IoLimits *io);

/* A cgroup-v1 blkio file (which says which): rwstat files "MAJ:MIN Read|Write|Sync|Async|Discard|
 * Total N" and a closing "Total N" (only Read, Write and Discard are kept); rule files "MAJ:MIN
 * N", one line per device with that rule. Sets has_stat or has_max. Lines it cannot read as
 * io.stat's. 0. */
int limits_parse_blkio(const char *buf, size_t len, IoV1File which, IoLimits *io);

/* The DEVNAME= of a /sys/dev/block/MAJ:MIN/uevent buffer ("vda", "nvme0n1p2"), truncated to
 * size-1. 0, -ENOENT when there is no DEVNAME line, -EINVAL when it is empty. */
int limits_parse_uevent_devname(const char *buf, size_t len, char *out, size_t size);

/* Read the cgroup2 directory at fd / the cgroup-v1 blkio directory of the cgroup (the _recursive
 * counters, which count the subtree as io.stat does, else the cgroup's own). *ret is set to what
 * was read. 0, or -errno (-ENODEV: the cgroup went away; -EINVAL: a malformed file). */
int limits_read_io_v2(int cgroup_fd, IoLimits *ret);
int limits_read_io_v1(int blkio_fd, IoLimits *ret);

/* The kernel's name of block device MAJ:MIN from <root>/sys/dev/block/MAJ:MIN/uevent (root_fd:
 * the sysroot's root). 0, -ENOENT (no such device), or -errno. */
int limits_read_device_name(int root_fd, uint32_t major, uint32_t minor, char *out, size_t size);

/* Fills the name of every device of io that has none yet; devices without one keep "". 0, or the
 * first error other than -ENOENT. */
int limits_io_name_devices(int root_fd, IoLimits *io);

/* Whether some device has a throttle rule with a finite value. */
bool limits_io_is_limited(const IoLimits *io);

/* As limits_cpu_delta(): end's devices, their rules as at the end, their counters as growth since
 * start (a device missing at the start had not done io yet: its counters are all growth). Never
 * fails. */
void limits_io_delta(const IoLimits *start, const IoLimits *end, IoLimits *ret);
