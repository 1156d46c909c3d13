/* SPDX-License-Identifier: MIT */
/* The hottest cgroups of a sample: the descendants of the fired cgroup (node-wide: of the cgroup2
 * root) whose stall total grew most between snapshots A and B. A cgroup's pressure counts its
 * whole subtree, so a parent always grew at least as much as any child; a parent whose own child
 * grew by 90% of what the parent did is left out, so the list names the deepest cgroup that
 * explains the stall (a busy leaf under quiet parents is listed, its parents are not). Pure; the
 * buffers are reused. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "probes/cgtree.h"

#define HOT_CGROUPS_MAX 10

typedef struct HotCgroup {
        const char *path;  /* relative to the sampled cgroup; points into b's names */
        uint64_t stall_us; /* growth of the fired stall (some or full) */
        uint64_t some_us, full_us;
        bool has_full;
} HotCgroup;

typedef struct HotCgroups {
        HotCgroup *items; /* hottest first */
        size_t n, cap;
        size_t *order_a, *order_b; /* scratch */
        size_t cap_a, cap_b;
} HotCgroups;

/* Builds the list from a and b (a NULL: b's totals since each cgroup began, for 0 ms samples).
 * Keeps at most max entries with growth. 0 or -ENOMEM. */
int hot_cgroups_build(HotCgroups *h, const CgroupTotals *a, const CgroupTotals *b, PsiStall stall, size_t max);
void hot_cgroups_done(HotCgroups *h);
