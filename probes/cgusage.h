/* SPDX-License-Identifier: MIT */
/* A cgroup's own use of cpu, io and memory, from its counters (groundwork for naming the cgroups
 * that cause pressure): cgroup2 cpu.stat usage_usec (the core file, there even without the cpu
 * controller), io.stat rbytes/wbytes summed over devices and memory.current, or their cgroup-v1
 * equivalents on hybrid hosts (cpuacct.usage, blkio.throttle.io_service_bytes_recursive,
 * memory.usage_in_bytes). All of them count the whole subtree, and tasks that ended inside a
 * sample included. Parsers are pure; readers read beneath a directory fd. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct CgroupUsage {
        bool has_cpu, has_io, has_memory;
        uint64_t cpu_us;                  /* cpu time used since the cgroup was made */
        uint64_t read_bytes, write_bytes; /* storage bytes, every device */
        uint64_t memory_bytes;            /* charged now */
} CgroupUsage;

/* cpu.stat's "usage_usec N". 0, -ENOENT when the line is missing, -EINVAL when malformed. */
int cgroup_usage_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_us);

/* io.stat: lines "MAJ:MIN rbytes=N wbytes=N rios=N ..." summed over devices. An empty file is 0
 * bytes (no io yet). 0, or -EINVAL for a line without a device or with a malformed number. */
int cgroup_usage_parse_io_stat(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write);

/* cgroup-v1 blkio.throttle.io_service_bytes(_recursive): lines "MAJ:MIN Read N", "MAJ:MIN Write N"
 * (and Sync, Async, Discard, Total) summed over devices; the closing "Total N" is skipped. 0 or
 * -EINVAL. */
int cgroup_usage_parse_blkio_bytes(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write);

/* Reads the cgroup2 directory at fd: every counter that is there (cpu.stat always, io.stat and
 * memory.current only with their controllers enabled). Missing files leave has_* false. 0, or
 * -errno when the cgroup is gone (-ENOENT/-ENODEV) or a file is malformed. */
int cgroup_usage_read_v2(int cgroup_fd, CgroupUsage *ret);

/* Adds what the cgroup-v1 directories give to ret, for the counters ret does not have yet: each
 * fd is a v1 controller's directory of the cgroup (cpuacct, blkio, memory), or -1 when that
 * controller is not mounted. 0, or -errno as above. */
int cgroup_usage_read_v1(int cpuacct_fd, int blkio_fd, int memory_fd, CgroupUsage *ret);
