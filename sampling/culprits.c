/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/culprits.h"

/* The order of a list: memory ranks on growth, then size; the others on their score. */
static void set_key(PsiResource res, const CulpritUsage *u, int64_t *key, uint64_t *key2) {
        if (res == PSI_RESOURCE_MEMORY) {
                *key = u->has_growth ? u->rss_growth_bytes : 0;
                *key2 = u->rss_bytes;
        } else {
                *key = (int64_t) MIN(culprit_score(u, res), (uint64_t) INT64_MAX);
                *key2 = 0;
        }
}

static int cmp_key(int64_t ka, uint64_t ka2, int64_t kb, uint64_t kb2) {
        if (ka != kb)
                return ka < kb ? 1 : -1;
        if (ka2 != kb2)
                return ka2 < kb2 ? 1 : -1;
        return 0;
}

static int cmp_process(const void *a, const void *b) {
        const CulpritProcess *x = a, *y = b;
        int c = cmp_key(x->key, x->key2, y->key, y->key2);

        if (c)
                return c;
        if (x->tgid != y->tgid)
                return (x->tgid > y->tgid) - (x->tgid < y->tgid);
        c = strcmp(x->comm, y->comm); /* aggregates (tgid 0): by comm, then cgroup */
        return c ? c : strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
}

static int cmp_cgroup(const void *a, const void *b) {
        const CulpritCgroup *x = a, *y = b;
        int c = cmp_key(x->key, x->key2, y->key, y->key2);

        return c ? c : strcmp(x->path, y->path);
}

static bool is_victim(const CulpritsInput *in, pid_t tgid) {
        for (size_t i = 0; i < in->n_victims; i++)
                if (in->victims[i] == tgid)
                        return true;
        return false;
}

static int push_process(Culprits *c, const CulpritProcess *p) {
        if (array_grow((void **) &c->procs, &c->cap_procs, c->n_procs, 16, sizeof *c->procs) < 0)
                return -ENOMEM;
        c->procs[c->n_procs++] = *p;
        return 0;
}

typedef struct CulpritPid {
        pid_t pid;
        size_t entry; /* in the end walk */
} CulpritPid;

static int cmp_culprit_pid(const void *a, const void *b) {
        const CulpritPid *x = a, *y = b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every process of walk g with its cgroup, sorted by pid, into *pids. */
static int index_pids(CulpritPid **pids, size_t *n, size_t *cap, const CgroupUsages *g) {
        *n = 0;
        if (!g)
                return 0;
        if (array_reserve((void **) pids, cap, g->pids.n, sizeof **pids) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < g->n; i++)
                for (size_t k = 0; k < g->items[i].n_pids; k++)
                        (*pids)[(*n)++] = (CulpritPid) { g->pids.tids[g->items[i].first_pid + k], i };
        if (*n > 0)
                qsort(*pids, *n, sizeof **pids, cmp_culprit_pid);
        return 0;
}

/* The cgroup walk g had pid in, through its index; NULL when it did not have it. */
static const char *walk_cgroup(const CulpritPid *pids, size_t n, const CgroupUsages *g, pid_t pid) {
        CulpritPid key = { .pid = pid };
        const CulpritPid *hit = n ? bsearch(&key, pids, n, sizeof *pids, cmp_culprit_pid) : NULL;

        return hit ? cgroup_usage_path(g, &g->items[hit->entry]) : NULL;
}

/* The cgroup a process of the start walk was in (one that ended during the sample: /proc no longer
 * says), relative to the scope; NULL when the start walk did not have it. After index_pids(). */
static const char *start_cgroup(const Culprits *c, const CulpritsInput *in, pid_t pid) {
        return walk_cgroup(c->start_pids, c->n_start_pids, in->ga, pid);
}

/* The cgroup of a short process: that of its nearest ancestor alive at the end (a build's make,
 * whose compilers came and went). NULL when none is known. */
static const char *ancestor_cgroup(const Culprits *c, const CulpritsInput *in, pid_t ppid) {
        for (unsigned depth = 0; ppid > 0 && depth < 16; depth++) {
                const char *path = walk_cgroup(c->pids, c->n_pids, in->gb, ppid);
                const ProcessDelays *p;

                if (path)
                        return path;
                p = snapshot_find_process(in->b, ppid);
                if (!p || p->origin == PROCESS_MEASURED)
                        return NULL;
                ppid = p->ppid;
        }
        return NULL;
}

/* The nearest ancestor alive at the end of the sample of a process that ended in it, up the exit
 * records' parents through the processes that ended too (a compiler's gcc, ended before it): one
 * the end snapshot measured (*ret_measured), or one the sample never had, outside the scope (alive
 * if /proc still has it: culprits_read_spawners()). 0 when the chain reaches a process of the start
 * that ended unheard (its parent unknown), or goes deeper than 16. */
static pid_t live_ancestor(const CulpritsInput *in, pid_t ppid, bool *ret_measured) {
        for (unsigned depth = 0; ppid > 0 && depth < 16; depth++) {
                const ProcessDelays *p = snapshot_find_process(in->b, ppid);

                if (!p) {
                        if (in->a && snapshot_find_process(in->a, ppid))
                                return 0;
                        *ret_measured = false;
                        return ppid;
                }
                if (p->origin == PROCESS_MEASURED) {
                        *ret_measured = true;
                        return ppid;
                }
                ppid = p->ppid;
        }
        return 0;
}

static void count_spawner(CulpritProcess *g, pid_t pid, bool measured) {
        if (pid <= 0)
                return;
        for (size_t k = 0; k < CULPRIT_SPAWNER_CANDIDATES; k++) {
                if (g->spawner_pids[k] == 0) {
                        g->spawner_pids[k] = pid;
                        g->spawner_measured[k] = measured;
                }
                if (g->spawner_pids[k] == pid) {
                        g->spawner_counts[k]++;
                        return;
                }
        }
        /* More different ones than that: the rest are not counted. */
}

/* A process that started and ended during the sample joins its comm's aggregate. */
static int aggregate(Culprits *c, const CulpritsInput *in, size_t first_aggregate, const ProcessDelays *pb,
                     const CulpritUsage *u) {
        size_t n = c->n_procs - first_aggregate;
        const char *cgroup = ancestor_cgroup(c, in, pb->ppid);
        CulpritProcess *g = NULL;
        bool measured = false;
        pid_t spawner = live_ancestor(in, pb->ppid, &measured);

        for (size_t i = first_aggregate; i < c->n_procs; i++)
                if (strcmp(c->procs[i].comm, pb->comm) == 0 && c->procs[i].cgroup == cgroup) {
                        g = &c->procs[i];
                        break;
                }
        if (!g && n >= CULPRIT_AGGREGATES_MAX) {
                g = &c->procs[c->n_procs - 1]; /* the last takes the rest, as "(other)" */
                snprintf(g->comm, sizeof g->comm, "(other)");
        }
        if (!g) {
                CulpritProcess p = { .origin = pb->origin, .uid = pb->uid, .ppid = pb->ppid, .cgroup = cgroup };
                memcpy(p.comm, pb->comm, sizeof p.comm);
                if (push_process(c, &p) < 0)
                        return -ENOMEM;
                g = &c->procs[c->n_procs - 1];
        }
        g->ended++;
        if (g->uid != pb->uid)
                g->uid = -1;
        if (g->ppid != pb->ppid)
                g->ppid = 0;
        if (g->cgroup != cgroup)
                g->cgroup = NULL; /* the last, taking the rest */
        culprit_usage_add(&g->usage, u);
        count_spawner(g, spawner, measured);
        return 0;
}

/* The use of the processes that ended in the sample, summed by the cgroup they are known in (one
 * measured at the start: its cgroup then; one that also started in it: its nearest live
 * ancestor's), for the cgroups counted from their processes: /proc no longer lists them there,
 * and their parents no longer carry their bytes (culprit_return_reaped_io()). After index_pids(). */
static int sum_ended(Culprits *c, const CulpritsInput *in) {
        const Snapshot *b = in->b;
        size_t n = 0;

        if (array_reserve((void **) &c->ended, &c->cap_ended, b->n_procs, sizeof *c->ended) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_procs; i++) {
                const ProcessDelays *pb = &b->procs[i];
                const char *path;

                if (!c->pu_valid[i] || pb->origin == PROCESS_MEASURED)
                        continue;
                path = pb->origin == PROCESS_SHORT ? ancestor_cgroup(c, in, pb->ppid) : start_cgroup(c, in, pb->tgid);
                if (path)
                        c->ended[n++] = (CulpritEnded) { path, c->pu[i] };
        }
        c->n_ended = culprit_ended_merge(c->ended, n);
        return 0;
}

static int build_processes(Culprits *c, const CulpritsInput *in) {
        const Snapshot *b = in->b;
        size_t first_aggregate;
        int r;

        if (array_reserve((void **) &c->pu, &c->cap_pu, b->n_procs, sizeof *c->pu) < 0 ||
            array_reserve((void **) &c->pu_valid, &c->cap_pu_valid, b->n_procs, sizeof *c->pu_valid) < 0 ||
            array_reserve((void **) &c->procs, &c->cap_procs, b->n_procs + 1, sizeof *c->procs) < 0)
                return -ENOMEM;
        /* Each walk's processes by pid: an ended process's cgroup is a search, not a walk. */
        r = index_pids(&c->pids, &c->n_pids, &c->cap_pids, in->gb);
        if (r >= 0)
                r = index_pids(&c->start_pids, &c->n_start_pids, &c->cap_start_pids, in->ga);
        if (r < 0)
                return r;
        for (size_t i = 0; i < b->n_procs; i++)
                c->pu_valid[i] = culprit_process_usage(in->resource, in->a, &b->procs[i], &c->pu[i]);
        culprit_return_reaped_io(b, in->resource, c->pu, c->pu_valid);
        for (size_t i = 0; i < b->n_procs; i++) {
                const ProcessDelays *pb = &b->procs[i];

                /* One measured at the start keeps its pid when it ends (an OOM victim). */
                if (!c->pu_valid[i] || pb->origin == PROCESS_SHORT)
                        continue;
                CulpritProcess p = {
                        .tgid = pb->tgid,
                        .origin = pb->origin,
                        .ppid = pb->ppid,
                        .uid = pb->uid,
                        .usage = c->pu[i],
                        .cgroup = pb->origin == PROCESS_MEASURED ? NULL : start_cgroup(c, in, pb->tgid),
                };
                memcpy(p.comm, pb->comm, sizeof p.comm);
                c->procs[c->n_procs++] = p;
        }
        first_aggregate = c->n_procs;
        if (in->gb) {
                r = sum_ended(c, in);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < b->n_procs; i++)
                if (c->pu_valid[i] && b->procs[i].origin == PROCESS_SHORT) {
                        r = aggregate(c, in, first_aggregate, &b->procs[i], &c->pu[i]);
                        if (r < 0)
                                return r;
                }
        for (size_t i = 0; i < c->n_procs; i++) {
                CulpritProcess *p = &c->procs[i];
                culprit_usage_add(&c->total, &p->usage);
                set_key(in->resource, &p->usage, &p->key, &p->key2);
                p->victim = p->tgid > 0 && is_victim(in, p->tgid);
        }
        if (c->n_procs > 0)
                qsort(c->procs, c->n_procs, sizeof *c->procs, cmp_process);
        c->n_procs = MIN(c->n_procs, in->top);
        for (size_t i = 0; i < c->n_procs; i++)
                c->procs[i].share = culprit_share(in->resource, &c->procs[i].usage, &c->total);
        return 0;
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

static int build_cgroups(Culprits *c, const CulpritsInput *in) {
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
                set_key(in->resource, &g.usage, &g.key, &g.key2);
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

/* Where the walks found each of the most delayed processes (after index_pids()). */
static int locate_victims(Culprits *c, const CulpritsInput *in) {
        c->n_victims = 0;
        if (array_reserve((void **) &c->victims, &c->cap_victims, in->n_victims, sizeof *c->victims) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_victims; i++) {
                pid_t pid = in->victims[i];
                const char *cgroup = walk_cgroup(c->pids, c->n_pids, in->gb, pid);

                if (!cgroup)
                        cgroup = start_cgroup(c, in, pid);
                if (cgroup)
                        c->victims[c->n_victims++] = (CulpritVictim) { pid, cgroup };
        }
        return 0;
}

const char *culprits_victim_cgroup(const Culprits *c, pid_t pid) {
        for (size_t i = 0; c && i < c->n_victims; i++)
                if (c->victims[i].pid == pid)
                        return c->victims[i].cgroup;
        return NULL;
}

int culprits_build(Culprits *c, const CulpritsInput *in) {
        int r;

        c->resource = in->resource;
        c->n_procs = c->n_cgroups = c->n_cgroups_total = c->n_victims = 0;
        c->total = (CulpritUsage) {};
        r = build_processes(c, in);
        if (r >= 0)
                r = locate_victims(c, in);
        if (r >= 0 && in->gb)
                r = build_cgroups(c, in);
        return r;
}

int culprits_read_spawners(Culprits *c, int proc_fd) {
        if (array_reserve((void **) &c->spawners, &c->cap_spawners, c->n_procs, sizeof *c->spawners) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_procs; i++) {
                CulpritProcess *p = &c->procs[i];
                CulpritSpawner *s = &c->spawners[i];
                size_t best = 0;

                p->spawner = NULL;
                if (p->tgid > 0)
                        continue;
                for (size_t k = 1; k < CULPRIT_SPAWNER_CANDIDATES; k++)
                        if (p->spawner_counts[k] > p->spawner_counts[best])
                                best = k;
                if (p->spawner_pids[best] <= 0)
                        continue;
                *s = (CulpritSpawner) { .pid = p->spawner_pids[best], .processes = p->spawner_counts[best] };
                s->comm_len = proc_read_comm(proc_fd, s->pid, s->comm, sizeof s->comm);
                /* Outside the scope and gone from /proc: it ended too (-ESRCH), nobody alive to name. */
                if (s->comm_len < 0 && !p->spawner_measured[best])
                        continue;
                s->cmdline_len =
                        s->comm_len < 0 ? -1 : proc_read_cmdline(proc_fd, s->pid, s->cmdline, sizeof s->cmdline);
                if (s->cmdline_len < 0)
                        s->cmdline_len = -1;
                if (s->comm_len < 0)
                        s->comm_len = -1;
                p->spawner = s;
        }
        return 0;
}

void culprits_done(Culprits *c) {
        free(c->spawners);
        free(c->procs);
        free(c->cgroups);
        free(c->order);
        free(c->own_a);
        free(c->own_b);
        free(c->pu);
        free(c->pu_valid);
        free(c->pids);
        free(c->start_pids);
        free(c->ended);
        free(c->victims);
        *c = (Culprits) {};
}

static SampleScope culprit_sample_scope(const SampleScope *scope) {
        const CulpritScope *c = scope->culprit;

        return (SampleScope) {
                .sysroot = scope->sysroot,
                .taskstats = scope->taskstats,
                .cgroup_fd = c->node ? -1 : c->cgroup_fd,
                .exclude_tgid = scope->exclude_tgid,
                .resource = (int) c->resource,
                .usage = (int) c->resource,
        };
}

void culprit_pass_usage(SampleScope *scope) {
        if (scope->culprit && scope->culprit->same)
                scope->usage = (int) scope->culprit->resource;
}

void culprit_pass_take(const SampleScope *scope, Snapshot *snap, const Snapshot *sample, CgroupUsages *g,
                       bool *has_snap, bool *has_g) {
        const CulpritScope *c = scope->culprit;

        *has_snap = *has_g = false;
        if (!c)
                return;
        cgroup_usages_clear(g);
        /* The agent's own cpu around the walk: its cgroup's counter holds it, the agent is no
         * culprit (the walk's readings come between the two). Its pid for every resource: a
         * cgroup of the agent alone is no culprit of any. */
        bool self = c->resource == PSI_RESOURCE_CPU && scope->exclude_tgid > 0 &&
                    proc_cpu_time_us(scope->exclude_tgid, &g->self_before_us) >= 0;
        *has_g = c->cgroup_fd >= 0 && cgroup_usages_read(c->cgroup_fd, c->v1_fd, c->resource, g) >= 0;
        g->self = MAX(scope->exclude_tgid, 0);
        g->has_self = self && proc_cpu_time_us(scope->exclude_tgid, &g->self_after_us) >= 0;
        if (!c->same) {
                SampleScope cs = culprit_sample_scope(scope);
                cs.reuse = sample;
                /* The walk read every cgroup's own processes: they are the scope's (the node's
                 * root holds the rest, kernel threads included), no second listing needed. */
                cs.listed = *has_g && cgroup_usages_complete(g) ? &g->pids : NULL;
                *has_snap = snapshot_take(snap, &cs, false) >= 0;
        }
}
