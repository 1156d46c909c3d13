/* SPDX-License-Identifier: MIT */
/* The cgroups of a culprit pass ranked (culprits_build_cgroups(), sampling/culprits.h): on their
 * own counters less their children's where every counter is there, else on the sum of their own
 * processes, the agent's own use left out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/culprits.h"

static int cmp_cgroup(const void *a, const void *b) {
        const CulpritCgroup *x = a, *y = b;
        int c = culprit_cmp_key(x->key, x->key2, y->key, y->key2);

        return c ? c : strcmp(x->path, y->path);
}

/* Each cgroup's own use: its counter less its children's. Complete only when it and every child
 * have the counter (the node's root never is: its counters are the whole node's). */
static int own_usage(const CgroupUsages *w, PsiResource res, bool root_is_node, CulpritOwn **own, size_t *cap) {
        if (array_reserve((void **) own, cap, w->n, sizeof **own) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < w->n; i++) {
                const CgroupUsage *u = &w->items[i].usage;
                (*own)[i] = (CulpritOwn) {
                        .complete =
                                cgroup_usage_has(u, res) && !(root_is_node && i == 0) && !w->items[i].children_missing,
                        .cpu_us = u->cpu_us,
                        .read_bytes = u->read_bytes,
                        .write_bytes = u->write_bytes,
                        .memory_bytes = u->memory_bytes,
                };
        }
        for (size_t i = 0; i < w->n; i++) {
                size_t p = w->items[i].parent;
                const CgroupUsage *u = &w->items[i].usage;
                if (p == CGROUP_USAGE_NO_PARENT || p >= w->n)
                        continue;
                CulpritOwn *o = &(*own)[p];
                if (!cgroup_usage_has(u, res)) {
                        o->complete = false;
                        continue;
                }
                o->cpu_us = culprit_sub_sat(o->cpu_us, u->cpu_us);
                o->read_bytes = culprit_sub_sat(o->read_bytes, u->read_bytes);
                o->write_bytes = culprit_sub_sat(o->write_bytes, u->write_bytes);
                o->memory_bytes = culprit_sub_sat(o->memory_bytes, u->memory_bytes);
        }
        return 0;
}

static _Thread_local const CgroupUsages *sorting;

static int cmp_path(const void *a, const void *b) {
        const CgroupUsages *w = sorting;
        return strcmp(cgroup_usage_path(w, &w->items[*(const size_t *) a]),
                      cgroup_usage_path(w, &w->items[*(const size_t *) b]));
}

static const size_t *find_path(const Culprits *c, const CgroupUsages *w, const char *path) {
        size_t lo = 0, hi = w->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int k = strcmp(cgroup_usage_path(w, &w->items[c->order[mid]]), path);
                if (k == 0)
                        return &c->order[mid];
                if (k < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The sum of a cgroup's own processes' use, those that ended in the sample included. */
static void processes_usage(const Culprits *c, const CulpritsInput *in, const CgroupUsageEntry *e, CulpritUsage *ret) {
        const CulpritEnded *ended = culprit_ended_find(c->ended, c->n_ended, cgroup_usage_path(in->gb, e));
        CulpritUsage u = {};

        for (size_t k = 0; k < e->n_pids; k++) {
                const ProcessDelays *p = snapshot_find_process(in->b, in->gb->pids.tids[e->first_pid + k]);
                if (!p)
                        continue;
                size_t i = (size_t) (p - in->b->procs);
                if (c->pu_valid[i])
                        culprit_usage_add(&u, &c->pu[i]);
        }
        if (ended)
                culprit_usage_add(&u, &ended->usage);
        if (in->resource == PSI_RESOURCE_MEMORY && in->a)
                u.has_growth = true;
        *ret = u;
}

/* The agent's own cpu over the walks (CgroupUsages.self: from before the start walk to after the
 * end one, or its life for a lifetime pass), and whether e, a cgroup of the end walk, holds it:
 * its counter's growth is the agent's too, which is no culprit. 0 when the walks did not read it. */
static uint64_t self_cpu_us(const CulpritsInput *in, const CgroupUsageEntry *e) {
        const CgroupUsages *ga = in->ga, *gb = in->gb;
        bool holds = false;

        if (in->resource != PSI_RESOURCE_CPU || !gb->has_self || (ga && (!ga->has_self || ga->self != gb->self)))
                return 0;
        for (size_t k = 0; k < e->n_pids && !holds; k++)
                holds = gb->pids.tids[e->first_pid + k] == gb->self;
        if (!holds)
                return 0;
        return culprit_sub_sat(gb->self_after_us, ga ? ga->self_before_us : 0);
}

/* Whether e holds the agent alone (CgroupUsages.self), at both walks where the first had it: all
 * its counters moved by is the agent's own work (the io of its lines, the memory it holds), which
 * blames no one. Beside other processes only its cpu can be told apart (self_cpu_us()). */
static bool agent_alone(const CulpritsInput *in, const CgroupUsageEntry *e, const size_t *ia) {
        const CgroupUsages *ga = in->ga, *gb = in->gb;
        const CgroupUsageEntry *x = ga && ia ? &ga->items[*ia] : NULL;

        if (gb->self <= 0 || e->n_pids != 1 || gb->pids.tids[e->first_pid] != gb->self)
                return false;
        return !x || (x->n_pids == 1 && ga->pids.tids[x->first_pid] == gb->self);
}

int culprits_build_cgroups(Culprits *c, const CulpritsInput *in) {
        const CgroupUsages *ga = in->ga, *gb = in->gb;
        CulpritUsage total = {};
        int r;

        r = own_usage(gb, in->resource, in->scope_is_node, &c->own_b, &c->cap_own_b);
        if (r >= 0 && ga)
                r = own_usage(ga, in->resource, in->scope_is_node, &c->own_a, &c->cap_own_a);
        if (r < 0 || array_reserve((void **) &c->cgroups, &c->cap_cgroups, gb->n, sizeof *c->cgroups) < 0)
                return -ENOMEM;
        if (ga) {
                if (array_reserve((void **) &c->order, &c->cap_order, ga->n, sizeof *c->order) < 0)
                        return -ENOMEM;
                for (size_t i = 0; i < ga->n; i++)
                        c->order[i] = i;
                sorting = ga;
                if (ga->n > 0)
                        qsort(c->order, ga->n, sizeof *c->order, cmp_path);
                sorting = NULL;
        }
        for (size_t i = 0; i < gb->n; i++) {
                const CgroupUsageEntry *e = &gb->items[i];
                const char *path = cgroup_usage_path(gb, e);
                const size_t *ia = ga ? find_path(c, ga, path) : NULL;
                const CulpritOwn *ob = &c->own_b[i], *oa = ia ? &c->own_a[*ia] : NULL;
                bool had_procs = ia && ga->items[*ia].n_pids > 0;
                if (agent_alone(in, e, ia))
                        continue;
                CulpritCgroup g = { .path = path,
                                    .has_dirty = e->usage.has_dirty,
                                    .dirty_bytes = e->usage.dirty_bytes };

                if (ob->complete && (!ga || !ia || oa->complete)) {
                        /* A cgroup made during the sample counted from zero. */
                        g.from_counters = true;
                        g.usage.cpu_us =
                                culprit_sub_sat(culprit_sub_sat(ob->cpu_us, oa ? oa->cpu_us : 0), self_cpu_us(in, e));
                        g.usage.read_bytes = culprit_sub_sat(ob->read_bytes, oa ? oa->read_bytes : 0);
                        g.usage.write_bytes = culprit_sub_sat(ob->write_bytes, oa ? oa->write_bytes : 0);
                        g.usage.rss_bytes = ob->memory_bytes;
                        if (ga) {
                                g.usage.rss_growth_bytes = culprit_growth(ob->memory_bytes, oa ? oa->memory_bytes : 0);
                                g.usage.has_growth = true;
                        }
                } else
                        processes_usage(c, in, e, &g.usage);
                /* Only cgroups that hold processes, or whose own counters moved (a fork storm's
                 * whose processes are all gone). */
                bool holds = e->n_pids > 0 || had_procs;
                bool used = in->resource == PSI_RESOURCE_MEMORY ? g.usage.rss_bytes > 0 || g.usage.rss_growth_bytes != 0
                                                                : culprit_score(&g.usage, in->resource) > 0;
                if ((!holds && !g.from_counters) || !used)
                        continue;
                culprit_usage_add(&total, &g.usage);
                culprit_set_key(in->resource, &g.usage, &g.key, &g.key2);
                c->cgroups[c->n_cgroups++] = g;
        }
        if (c->n_cgroups > 0)
                qsort(c->cgroups, c->n_cgroups, sizeof *c->cgroups, cmp_cgroup);
        c->n_cgroups_total = c->n_cgroups;
        c->n_cgroups = MIN(c->n_cgroups, in->top);
        for (size_t i = 0; i < c->n_cgroups; i++)
                c->cgroups[i].share = culprit_share(in->resource, &c->cgroups[i].usage, &total);
        return 0;
}
