/* SPDX-License-Identifier: MIT */
/* One resource's pressure totals for every cgroup below a cgroup2 directory, so an incident can
 * say which descendant's stall grew. Buffers are reused between samples. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/pressure.h"

typedef struct CgroupTotal {
        size_t path; /* offset of its NUL-terminated path (relative, "a/b") in names */
        uint64_t total_us[_PSI_STALL_MAX];
        bool has[_PSI_STALL_MAX];
} CgroupTotal;

typedef struct CgroupTotals {
        CgroupTotal *items;
        size_t n, cap;
        char *names;
        size_t names_len, names_cap;
} CgroupTotals;

static inline const char *cgroup_total_path(const CgroupTotals *t, const CgroupTotal *c) {
        return t->names + c->path;
}

void cgroup_totals_clear(CgroupTotals *t);
void cgroup_totals_done(CgroupTotals *t);

/* Appends every descendant of the cgroup at dirfd (not dirfd itself), depth-first, to t with its
 * resource's some and full totals, by cgroup_walk() and its error policy (probes/cgwalk.h). A
 * cgroup without a readable pressure file (PSI off for it) is left out, its children are not.
 * Returns the number of cgroups that could not be read (0: all were), or -errno (-ENOMEM, or
 * dirfd's own error). */
int cgroup_totals_read(int dirfd, PsiResource resource, CgroupTotals *t);
