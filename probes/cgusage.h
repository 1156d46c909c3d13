/* SPDX-License-Identifier: MIT */
/* A cgroup's own use of cpu, io and memory, from its counters (the culprit cgroups of
 * sampling/culprits.h): cgroup2 cpu.stat usage_usec (the core file, there even without the cpu
 * controller), io.stat rbytes/wbytes summed over devices and memory.current, or their cgroup-v1
 * equivalents on hybrid hosts (cpuacct.usage, blkio.throttle.io_service_bytes_recursive,
 * memory.usage_in_bytes). All of them count the whole subtree, and tasks that ended inside a
 * sample included. Parsers are pure; readers read beneath a directory fd. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/pressure.h"
#include "probes/tasks.h"

typedef struct CgroupUsage {
        bool has_cpu, has_io, has_memory;
        uint64_t cpu_us;                  /* cpu time used since the cgroup was made */
        uint64_t read_bytes, write_bytes; /* storage bytes, every device */
        uint64_t memory_bytes;            /* charged now */
        bool has_dirty;                   /* io, cgroup2 with the memory controller: */
        uint64_t dirty_bytes;             /* its subtree's page cache dirty or under writeback now
                                           * (memory.stat file_dirty + file_writeback) */
} CgroupUsage;

/* cpu.stat's "usage_usec N". 0, or -ENOENT when no such line could be read (a line that is not
 * "key N" costs that line: base/parse.h, parse_keyed()). */
int cgroup_usage_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_us);

/* io.stat: lines "MAJ:MIN rbytes=N wbytes=N rios=N ..." summed over devices. An empty file is 0
 * bytes (no io yet). A line without a device or with a malformed number costs that line and is
 * noted (base/unparsed.h; "(unknown) " on 6.12 and later: kernel-facts.md: unknown-lines). 0. */
int cgroup_usage_parse_io_stat(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write);

/* cgroup-v1 blkio.throttle.io_service_bytes(_recursive): lines "MAJ:MIN Read N", "MAJ:MIN Write N"
 * (and Sync, Async, Discard, Total) summed over devices; the closing "Total N" is skipped. A line
 * it cannot read costs that line, as io.stat's. 0. */
int cgroup_usage_parse_blkio_bytes(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write);

/* memory.stat's file_dirty + file_writeback (cgroup2; both lines needed). 0, or -ENOENT without
 * them. */
int cgroup_usage_parse_dirty(const char *buf, size_t len, uint64_t *ret);

/* Whether u has the counter of resource (cpu, io, memory). */
bool cgroup_usage_has(const CgroupUsage *u, PsiResource resource);

/* Reads the cgroup2 directory at fd: every counter that is there (cpu.stat always, io.stat and
 * memory.current only with their controllers enabled). Missing files leave has_* false. 0, or
 * -errno when the cgroup is gone (-ENOENT/-ENODEV) or a file is malformed. */
int cgroup_usage_read_v2(int cgroup_fd, CgroupUsage *ret);

/* Adds what the cgroup-v1 directories give to ret, for the counters ret does not have yet: each
 * fd is a v1 controller's directory of the cgroup (cpuacct, blkio, memory), or -1 when that
 * controller is not mounted. 0, or -errno as above. */
int cgroup_usage_read_v1(int cpuacct_fd, int blkio_fd, int memory_fd, CgroupUsage *ret);

/* One cgroup of a walk: its counter of one resource (hierarchical: the subtree's) and its own
 * processes. */
typedef struct CgroupUsageEntry {
        size_t path;              /* offset of its path in names: relative to the walked cgroup ("" itself) */
        size_t parent;            /* index of its parent; CGROUP_USAGE_NO_PARENT for the walked cgroup */
        size_t first_pid, n_pids; /* its own processes: pids.tids[first_pid .. +n_pids) */
        bool children_missing;    /* a child could not be read (not: it vanished): its use hides in ours */
        CgroupUsage usage;
} CgroupUsageEntry;

#define CGROUP_USAGE_NO_PARENT SIZE_MAX

typedef struct CgroupUsages {
        CgroupUsageEntry *items;
        size_t n, cap;
        char *names;
        size_t names_len, names_cap;
        TidList pids;
        /* The cpu time (us) of the process whose reader leaves it out of its culprits (the agent,
         * SampleScope.exclude_tgid), read just before and just after the walk; its own cgroup's
         * counter holds it (sampling/culprits.c takes it off). has_self false: not read. */
        pid_t self;
        bool has_self;
        uint64_t self_before_us, self_after_us;
} CgroupUsages;

static inline const char *cgroup_usage_path(const CgroupUsages *t, const CgroupUsageEntry *c) {
        return t->names + c->path;
}

void cgroup_usages_clear(CgroupUsages *t);
/* Whether the walk read every cgroup below its first (no child missing): then its processes are
 * all of the subtree's. */
bool cgroup_usages_complete(const CgroupUsages *t);
void cgroup_usages_done(CgroupUsages *t);

/* Walks the cgroup2 directory dirfd and its descendants, depth-first, parents before children, by
 * cgroup_walk() and its error policy (probes/cgwalk.h), reading each one's counter of resource
 * (cpu: cpu.stat; io: io.stat; memory: memory.current) and, where cgroup2 lacks it, its cgroup-v1
 * twin's under v1_fd, the v1 directory at the same path as dirfd (cpuacct, blkio or memory; -1 for
 * none), and each one's own processes (cgroup.procs). A cgroup removed while walking is skipped;
 * one that cannot be read (a malformed counter, deeper than the walk goes, past the 8,192th
 * cgroup) marks its parent's children_missing. 0 or -errno (-ENOMEM; dirfd's own error,
 * -ENOENT/-ENODEV when it is gone). */
int cgroup_usages_read(int dirfd, int v1_fd, PsiResource resource, CgroupUsages *t);
