/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "probes/cgtree.h"
#include "probes/cgwalk.h"
#include "probes/pressure.h"

void cgroup_totals_clear(CgroupTotals *t) {
        t->n = 0;
        t->names_len = 0;
}

void cgroup_totals_done(CgroupTotals *t) {
        free(t->items);
        free(t->names);
        *t = (CgroupTotals) {};
}

static int push(CgroupTotals *t, const char *path, size_t len, const PressureStats *ps) {
        if (array_grow((void **) &t->items, &t->cap, t->n, 64, sizeof *t->items) < 0)
                return -ENOMEM;
        if (array_reserve((void **) &t->names, &t->names_cap, t->names_len + len + 1 + 1024, 1) < 0)
                return -ENOMEM;
        CgroupTotal *c = &t->items[t->n++];
        *c = (CgroupTotal) { .path = t->names_len };
        for (int s = 0; s < _PSI_STALL_MAX; s++) {
                c->has[s] = ps->has[s];
                c->total_us[s] = ps->line[s].total_us;
        }
        memcpy(t->names + t->names_len, path, len);
        t->names[t->names_len + len] = '\0';
        t->names_len += len + 1;
        return 0;
}

typedef struct TotalsWalk {
        PsiResource resource;
        CgroupTotals *t;
} TotalsWalk;

static int visit_total(CgroupWalkNode *node, void *userdata) {
        TotalsWalk *tw = userdata;
        PressureStats ps;

        if (node->depth == 0)
                return 0; /* descendants only */
        /* No readable pressure file (PSI off for it): not listed; its children still are. */
        if (pressure_read_at(node->fd, pressure_file_name(tw->resource, true), &ps) < 0)
                return 0;
        return push(tw->t, node->path, node->path_len, &ps);
}

int cgroup_totals_read(int dirfd, PsiResource resource, CgroupTotals *t) {
        TotalsWalk tw = { .resource = resource, .t = t };

        return cgroup_walk(dirfd, &(CgroupWalk) { .visit = visit_total, .userdata = &tw });
}
