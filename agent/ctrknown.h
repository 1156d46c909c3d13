/* SPDX-License-Identifier: MIT */
/* Which container watches a container's cgroup matches, from its names read once: discovery's
 * walk asks here before the container cache, so a node with more containers than the cache holds
 * does not read every container's files again at every walk. Sorted by path; forgotten when the
 * cgroup goes, all of it at a reload (the watches change). Pure bookkeeping: no I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct CtrknownEntry {
        char *path;
        bool *matches; /* per config watch */
} CtrknownEntry;

typedef struct Ctrknown {
        CtrknownEntry *items;
        size_t n, cap;
} Ctrknown;

/* The entry of path, or NULL with where it would go in *ret_at. */
CtrknownEntry *ctrknown_find(Ctrknown *k, const char *path, size_t *ret_at);

/* Inserts path at (from ctrknown_find()), taking matches; frees matches when out of memory (the
 * container is judged again at the next walk). */
void ctrknown_insert(Ctrknown *k, size_t at, const char *path, bool *matches);

/* Forgets gone and what was below it. */
void ctrknown_forget(Ctrknown *k, const char *gone);

/* Forgets everything; ctrknown_done() frees the storage too. */
void ctrknown_clear(Ctrknown *k);
void ctrknown_done(Ctrknown *k);
