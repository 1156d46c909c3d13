/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/culprits.h"

static int cmp_process(const void *a, const void *b) {
        const CulpritProcess *x = a, *y = b;
        int c = culprit_cmp_key(x->key, x->key2, y->key, y->key2);

        if (c)
                return c;
        if (x->tgid != y->tgid)
                return (x->tgid > y->tgid) - (x->tgid < y->tgid);
        c = strcmp(x->comm, y->comm); /* aggregates (tgid 0): by comm, then cgroup */
        return c ? c : strcmp(x->cgroup ? x->cgroup : "", y->cgroup ? y->cgroup : "");
}

static bool is_victim(const CulpritsInput *in, pid_t tgid) {
        for (size_t i = 0; i < in->n_victims; i++)
                if (in->victims[i] == tgid)
                        return true;
        return false;
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

/* One process of b with a use to report, and the program it belongs to (culprits.h). */
typedef struct CulpritMember {
        size_t i;           /* in b */
        const char *comm;   /* NULL: no program known, an entry of its own */
        const char *cgroup; /* relative to the scope; NULL unknown */
        uint64_t score;
} CulpritMember;

static int cmp_str_null(const char *x, const char *y) {
        if (!x || !y)
                return (x != NULL) - (y != NULL);
        return strcmp(x, y);
}

static int cmp_member(const void *a, const void *b) {
        const CulpritMember *x = a, *y = b;
        int c;

        /* The processes of no program known last, each its own. */
        if (!x->comm || !y->comm) {
                if (!x->comm != !y->comm)
                        return x->comm ? -1 : 1;
                return (x->i > y->i) - (x->i < y->i);
        }
        c = strcmp(x->comm, y->comm);
        if (!c)
                c = cmp_str_null(x->cgroup, y->cgroup);
        if (!c && x->score != y->score)
                c = x->score < y->score ? 1 : -1;
        return c ? c : (x->i > y->i) - (x->i < y->i);
}

static bool same_program(const CulpritMember *x, const CulpritMember *y) {
        return x->comm && y->comm && strcmp(x->comm, y->comm) == 0 && cmp_str_null(x->cgroup, y->cgroup) == 0;
}

/* The program of a process of b (comm and cgroup, culprits.h), or comm NULL for none: a live one
 * by its /proc comm (in->comm_of) and the end walk's cgroup, one measured at the start that ended
 * by its exit record's comm and the start walk's cgroup, one that started and ended in the sample
 * by its exit record's comm and its nearest live ancestor's cgroup (unknown: an aggregate still). */
static void member_of(Culprits *c, const CulpritsInput *in, size_t i, CulpritMember *m) {
        const ProcessDelays *pb = &in->b->procs[i];
        char *comm = c->comms + i * (TASKSTATS_COMM_MAX + 1);

        *m = (CulpritMember) { .i = i, .score = culprit_score(&c->pu[i], in->resource) };
        if (in->resource == PSI_RESOURCE_MEMORY)
                m->score = (uint64_t) MAX(c->pu[i].rss_growth_bytes, 0);
        switch (pb->origin) {
        case PROCESS_MEASURED: {
                ssize_t n;

                m->cgroup = walk_cgroup(c->pids, c->n_pids, in->gb, pb->tgid);
                if (!m->cgroup || !in->comm_of)
                        return;
                n = in->comm_of(in->comm_fd, pb->tgid, comm, TASKSTATS_COMM_MAX + 1);
                if (n <= 0 || (size_t) n > TASKSTATS_COMM_MAX)
                        return;
                comm[n] = '\0';
                m->comm = comm;
                return;
        }
        case PROCESS_ENDED:
                m->cgroup = start_cgroup(c, in, pb->tgid);
                if (m->cgroup && pb->comm[0])
                        m->comm = pb->comm;
                return;
        default:
                m->cgroup = ancestor_cgroup(c, in, pb->ppid);
                m->comm = pb->comm;
                return;
        }
}

/* The entry of a program's processes m[0..n) (most use first): its use summed, its live processes'
 * pids (most first), its top process's pid (a live one's, else one measured at the start), or
 * none when all started and ended in the sample (an aggregate). */
static void make_entry(Culprits *c, const CulpritsInput *in, const CulpritMember *m, size_t n, CulpritProcess *e) {
        const ProcessDelays *top = NULL;

        *e = (CulpritProcess) { .origin = PROCESS_SHORT,
                                .uid = in->b->procs[m[0].i].uid,
                                .ppid = in->b->procs[m[0].i].ppid,
                                .cgroup = m[0].cgroup };
        snprintf(e->comm, sizeof e->comm, "%s", m[0].comm ? m[0].comm : in->b->procs[m[0].i].comm);
        for (size_t k = 0; k < n; k++) {
                const ProcessDelays *pb = &in->b->procs[m[k].i];

                e->processes++;
                if (pb->origin != PROCESS_MEASURED)
                        e->ended++;
                if (pb->origin == PROCESS_MEASURED && e->n_pids < CULPRIT_PIDS_MAX)
                        e->pids[e->n_pids++] = pb->tgid;
                if (pb->origin != PROCESS_SHORT &&
                    (!top || (top->origin != PROCESS_MEASURED && pb->origin == PROCESS_MEASURED)))
                        top = pb;
                if (pb->origin != PROCESS_SHORT && is_victim(in, pb->tgid))
                        e->victim = true;
                if (e->uid != pb->uid)
                        e->uid = -1;
                if (e->ppid != pb->ppid)
                        e->ppid = 0;
                culprit_usage_add(&e->usage, &c->pu[m[k].i]);
                if (pb->origin == PROCESS_SHORT) {
                        bool measured = false;
                        pid_t spawner = live_ancestor(in, pb->ppid, &measured);
                        count_spawner(e, spawner, measured);
                }
        }
        if (top) {
                e->tgid = top->tgid;
                e->origin = top->origin;
                if (n == 1) {
                        e->uid = top->uid;
                        e->ppid = top->ppid;
                }
        }
        /* A process alone keeps what it had: its use's growth flag included. */
        if (n == 1)
                e->usage = c->pu[m[0].i];
}

/* The scope's processes with a use, ranked by program (culprits.h). */
static int build_processes(Culprits *c, const CulpritsInput *in) {
        const Snapshot *b = in->b;
        size_t n = 0, aggregates = 0, other = 0;
        int r;

        if (array_reserve((void **) &c->pu, &c->cap_pu, b->n_procs, sizeof *c->pu) < 0 ||
            array_reserve((void **) &c->pu_valid, &c->cap_pu_valid, b->n_procs, sizeof *c->pu_valid) < 0 ||
            array_reserve((void **) &c->procs, &c->cap_procs, b->n_procs + 1, sizeof *c->procs) < 0 ||
            array_reserve((void **) &c->members, &c->cap_members, b->n_procs, sizeof *c->members) < 0 ||
            array_reserve((void **) &c->comms, &c->cap_comms, b->n_procs * (TASKSTATS_COMM_MAX + 1), 1) < 0)
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
        if (in->gb) {
                r = sum_ended(c, in);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < b->n_procs; i++)
                if (c->pu_valid[i])
                        member_of(c, in, i, &c->members[n++]);
        if (n > 0)
                qsort(c->members, n, sizeof *c->members, cmp_member);
        for (size_t k = 0; k < n;) {
                size_t run = 1;
                CulpritProcess e;

                while (k + run < n && same_program(&c->members[k], &c->members[k + run]))
                        run++;
                make_entry(c, in, &c->members[k], run, &e);
                k += run;
                /* Programs of processes that all started and ended in the sample, up to a bound:
                 * the last takes the rest, as "(other)" (a storm of made-up comms). */
                if (e.tgid == 0 && ++aggregates > CULPRIT_AGGREGATES_MAX) {
                        CulpritProcess *o = &c->procs[other];
                        snprintf(o->comm, sizeof o->comm, "(other)");
                        o->processes += e.processes;
                        o->ended += e.ended;
                        if (o->uid != e.uid)
                                o->uid = -1;
                        o->ppid = 0;
                        if (cmp_str_null(o->cgroup, e.cgroup) != 0)
                                o->cgroup = NULL;
                        culprit_usage_add(&o->usage, &e.usage);
                        for (size_t s = 0; s < CULPRIT_SPAWNER_CANDIDATES; s++)
                                for (unsigned x = 0; x < e.spawner_counts[s]; x++)
                                        count_spawner(o, e.spawner_pids[s], e.spawner_measured[s]);
                        continue;
                }
                if (e.tgid == 0)
                        other = c->n_procs;
                c->procs[c->n_procs++] = e;
        }
        for (size_t i = 0; i < c->n_procs; i++) {
                CulpritProcess *p = &c->procs[i];
                culprit_usage_add(&c->total, &p->usage);
                culprit_set_key(in->resource, &p->usage, &p->key, &p->key2);
        }
        if (c->n_procs > 0)
                qsort(c->procs, c->n_procs, sizeof *c->procs, cmp_process);
        c->n_procs = MIN(c->n_procs, in->top);
        for (size_t i = 0; i < c->n_procs; i++)
                c->procs[i].share = culprit_share(in->resource, &c->procs[i].usage, &c->total);
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
                r = culprits_build_cgroups(c, in);
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
                if (p->spawner_pids[0] <= 0) /* none of its processes started in the sample */
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
        free(c->members);
        free(c->comms);
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
