/* SPDX-License-Identifier: MIT */
/* What a culprit uses of a resource over a sample, and the arithmetic of it: one process's use from
 * two snapshots, sums, shares, and the bytes a parent took in from the children it reaped. Pure: no
 * I/O, no logging. sampling/culprits.h ranks with it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampling/snapshot.h"
#include "triggers/trigger.h"

typedef struct CulpritUsage {
        uint64_t cpu_us;
        uint64_t read_bytes, write_bytes;
        uint64_t rss_bytes;       /* memory: resident now (processes; one that ended: its high-water mark, an
                                   * aggregate: their sum) or charged now (cgroups) */
        int64_t rss_growth_bytes; /* memory: its change over the sample */
        bool has_growth;          /* false for a lifetime pass or a process new in the sample */
        uint64_t majflt;          /* memory, processes: major faults in the sample */
} CulpritUsage;

/* What an entry is ranked on for res: cpu time, bytes read and written, or memory growth (then
 * size, culprits_compare()). */
uint64_t culprit_score(const CulpritUsage *u, PsiResource res);

/* The order of a list of culprits: memory ranks on growth, then size (key2); the others on their
 * score. culprit_cmp_key() of two entries' keys sorts the most first. */
void culprit_set_key(PsiResource res, const CulpritUsage *u, int64_t *key, uint64_t *key2);
int culprit_cmp_key(int64_t ka, uint64_t ka2, int64_t kb, uint64_t kb2);

/* b - a, or 0 when the counter went backwards. */
uint64_t culprit_sub_sat(uint64_t b, uint64_t a);
/* b - a, signed, clamped to int64_t. */
int64_t culprit_growth(uint64_t b, uint64_t a);

void culprit_usage_add(CulpritUsage *t, const CulpritUsage *u);

/* u's share of total: cpu time and bytes over the sample; memory: resident size now. In [0, 1]. */
double culprit_share(PsiResource res, const CulpritUsage *u, const CulpritUsage *total);

/* One process's use over the sample (a NULL: its lifetime's); false when it has none to report
 * (it moved in, or used nothing of res). */
bool culprit_process_usage(PsiResource res, const Snapshot *a, const ProcessDelays *pb, CulpritUsage *ret);

/* A parent that reaps a child takes the child's storage bytes into its own /proc/<pid>/io
 * (kernel-facts.md: reaped-io), so a make or a shell would read as writing what its compilers
 * wrote, and the bytes would count twice, once as the children's aggregate. Each process of b that
 * ended in the sample gives its bytes (its whole life's: its exit records') back from its nearest
 * ancestor measured at the end, up the exit records' parents, as that one reaped them: pu[i] is
 * b->procs[i]'s use, valid[i] whether it has one to report (cleared for one left with no io when
 * res is io). A child not yet reaped at the end takes them off anyway, which can only understate
 * the parent. */
void culprit_return_reaped_io(const Snapshot *b, PsiResource res, CulpritUsage *pu, bool *valid);

/* Use summed by cgroup path (the processes that ended in a sample, by the cgroup each is known in). */
typedef struct CulpritEnded {
        const char *path;
        CulpritUsage usage;
} CulpritEnded;

/* Sorts e[0..n) by path and sums the entries of one path into one; returns how many are left. */
size_t culprit_ended_merge(CulpritEnded *e, size_t n);
/* The entry of path in a merged e[0..n), or NULL. */
const CulpritEnded *culprit_ended_find(const CulpritEnded *e, size_t n, const char *path);
