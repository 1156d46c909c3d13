/* SPDX-License-Identifier: MIT */
/* The names of the containers cgroups belong to, read from their runtimes' files (containers/ctrmeta.h
 * says which) through the sysroot's root directory, once per container and cgroup (a cgroup that
 * only claims a container's id by its name is named nothing: containers/ctrverify.h), and kept in a bounded cache:
 * at most max containers, the least recently used one evicted first, counted. A container stays
 * cached after it ends (its runtime may delete its files first), so an OOM-killed container is
 * still named. One whose files named nothing is asked again after CONTAINER_CACHE_RETRY_US (a
 * container is named by its runtime before its first process runs, but a lookup may race its
 * creation). Owned by whoever opened the sysroot, lent to samples (SampleScope.containers); not
 * thread-safe. Never logs above debug. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/macro.h"
#include "base/timeutil.h"
#include "containers/ctrmeta.h"

#define CONTAINER_CACHE_MAX 256
#define CONTAINER_CACHE_RETRY_US (30 * USEC_PER_SEC)
/* A podman container's pod, when podman's state was busy (a commit) or torn, is asked again after
 * this, once; what was named is kept. Should a torn state fail again, it is asked again once per
 * CONTAINER_CACHE_FAILED_RETRY_US: a file that fails is not read again more often than that. A
 * busy one is asked again after twice as long each time (podman commits for seconds on end while a
 * node starts containers), up to that, and is taken for a failing file after
 * CONTAINER_CACHE_BUSY_TRIES in a row. */
#define CONTAINER_CACHE_POD_RETRY_US (1 * USEC_PER_SEC)
#define CONTAINER_CACHE_FAILED_RETRY_US (60 * USEC_PER_SEC)
#define CONTAINER_CACHE_BUSY_TRIES 6

typedef struct ContainerCache ContainerCache;

typedef struct ContainerCacheStats {
        uint64_t lookups;    /* of a path that names a container */
        uint64_t reads;      /* lookups that read the runtime's files (the cache's misses) */
        uint64_t evictions;  /* containers forgotten to make room */
        uint64_t unknown;    /* lookups answered without a name */
        uint64_t unverified; /* of those, of a cgroup not verified as its runtime's (containers/ctrverify.h) */
        size_t cached;
} ContainerCacheStats;

/* A cache of at most max (1..CONTAINER_CACHE_MAX) containers, reading the runtimes' files beneath
 * root_fd, checking each container's cgroup beneath cgroup2_fd (the cgroup2 mount) and its init
 * process beneath proc_fd (containers/ctrverify.h; -1: none, so no cgroup is verified, resp. no process
 * checked). All borrowed: they must outlive the cache. 0 or -ENOMEM, -EINVAL. */
int container_cache_new(int root_fd, int proc_fd, int cgroup2_fd, size_t max, ContainerCache **ret);
ContainerCache *container_cache_free(ContainerCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(ContainerCache *, container_cache_free);

/* The container the cgroup path ("/a/b" or "a/b") is in, by containers/cgmeta.h's conventions; NULL
 * when it names none (or c is NULL). The first lookup of a container in a cgroup verifies the
 * cgroup as its runtime's (containers/ctrverify.h) and reads the runtime's files; the answer is never
 * NULL for a path that names a container: a cgroup not verified is said in ->unverified (and
 * ->unnamed), what could not be read in ->unnamed. The pointer is valid until the next lookup. */
const ContainerInfo *container_cache_lookup(ContainerCache *c, const char *cgroup_path);

/* The same from what is cached alone: reads nothing and does not change which is evicted next.
 * NULL when the path names no container or it was not looked up. */
const ContainerInfo *container_cache_peek(const ContainerCache *c, const char *cgroup_path);

/* The end of one sample's lookups: forgets the containers.json parsed for them (kept meanwhile so
 * that a file naming many containers is parsed once per sample, not once per container). */
void container_cache_done(ContainerCache *c);

void container_cache_stats(const ContainerCache *c, ContainerCacheStats *ret);
