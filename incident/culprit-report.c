/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "incident/culprit-report.h"
#include "incident/jsonutil.h"
#include "containers/cgmeta.h"

static json_t *usage_object(PsiResource res, const CulpritUsage *u, bool cgroup) {
        json_t *o = json_object();
        int r = 0;

        switch (res) {
        case PSI_RESOURCE_CPU:
                r |= set_new(o, "cpu_us", json_u64(u->cpu_us));
                break;
        case PSI_RESOURCE_IO:
                r |= set_new(o, "read_bytes", json_u64(u->read_bytes));
                r |= set_new(o, "write_bytes", json_u64(u->write_bytes));
                break;
        case PSI_RESOURCE_MEMORY:
                r |= set_new(o, cgroup ? "memory_bytes" : "rss_bytes", json_u64(u->rss_bytes));
                r |= set_new(o, cgroup ? "memory_growth_bytes" : "rss_growth_bytes",
                             u->has_growth ? json_integer(u->rss_growth_bytes) : json_null());
                if (!cgroup)
                        r |= set_new(o, "major_faults", u->has_growth ? json_u64(u->majflt) : json_null());
                break;
        default:
                break;
        }
        return object_or_null(o, r);
}

/* The limit as "limits" reports it: the cgroup that sets it, in its hierarchy. */
static json_t *limit_object(const CulpritScope *s) {
        json_t *o;
        int r = 0;

        if (s->limit.kind == LIMITS_KIND_NONE)
                return json_null();
        o = json_object();
        r |= set_new(o, "cgroup", cgroup_string(s->limit_path));
        r |= set_new(o, "file", json_string(limits_kind_file(s->limit.kind)));
        switch (s->limit.kind) {
        case LIMITS_KIND_CPU_MAX:
        case LIMITS_KIND_CPU_CFS_QUOTA:
                r |= set_new(o, "quota_us", json_u64(s->limit.value));
                r |= set_new(o, "period_us", json_u64(s->limit.period_us));
                break;
        case LIMITS_KIND_MEMORY_MAX:
        case LIMITS_KIND_MEMORY_HIGH:
        case LIMITS_KIND_MEMORY_LIMIT_IN_BYTES:
                r |= set_new(o, "bytes", json_u64(s->limit.value));
                break;
        default:
                break;
        }
        return object_or_null(o, r);
}

/* An aggregate's spawner: its nearest live ancestor, named by culprits_read_spawners(). */
static json_t *spawner_object(const CulpritSpawner *s) {
        json_t *o;
        int r = 0;

        if (!s)
                return json_null();
        o = json_object();
        r |= set_new(o, "pid", json_integer(s->pid));
        r |= set_new(o, "comm", s->comm_len >= 0 ? json_string_from_bytes(s->comm, (size_t) s->comm_len) : json_null());
        r |= set_new(o, "cmdline",
                     s->cmdline_len >= 0 ? json_string_from_bytes(s->cmdline, (size_t) s->cmdline_len) : json_null());
        r |= set_new(o, "processes", json_integer(s->processes));
        return object_or_null(o, r);
}

/* A program's live processes, most use first (at most CULPRIT_PIDS_MAX). */
static json_t *pids_array(const CulpritProcess *p) {
        json_t *a = json_array();
        int r = 0;

        for (unsigned i = 0; i < p->n_pids; i++)
                r |= append_new(a, json_integer(p->pids[i]));
        return object_or_null(a, r);
}

static json_t *process_object(PsiResource res, const CulpritProcess *p, const ProcessInfo *info) {
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "pid", p->tgid > 0 ? json_integer(p->tgid) : json_null());
        r |= incident_process_identity(o, info);
        r |= set_new(o, "processes", json_integer(MAX(p->processes, 1u)));
        r |= set_new(o, "ended_processes", json_integer(p->ended));
        r |= set_new(o, "pids", pids_array(p));
        r |= set_new(o, "ended", json_boolean(p->origin != PROCESS_MEASURED));
        r |= set_new(o, "victim", json_boolean(p->victim));
        r |= set_new(o, "spawner", spawner_object(p->spawner));
        r |= set_new(o, "usage", usage_object(res, &p->usage, false));
        r |= set_new(o, "share", json_real(p->share));
        return object_or_null(o, r);
}

static json_t *cgroup_object(PsiResource res, const CulpritScope *s, const CulpritCgroup *g,
                             const ContainerCache *containers) {
        char path[4096];
        size_t n = MIN(cgroup_display_path(s->path, g->path, path, sizeof path), sizeof path - 1);
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "path", json_string_from_bytes(path, n));
        r |= set_new(o, "meta", incident_cgroup_meta(path, container_cache_peek(containers, path)));
        r |= set_new(o, "source", json_string(g->from_counters ? "cgroup" : "processes"));
        r |= set_new(o, "usage", usage_object(res, &g->usage, true));
        r |= set_new(o, "dirty_bytes", g->has_dirty ? json_u64(g->dirty_bytes) : json_null());
        r |= set_new(o, "share", json_real(g->share));
        return object_or_null(o, r);
}

json_t *culprit_report_object(const Culprits *c, const CulpritScope *scope, const ProcessInfo *infos, size_t n_infos,
                              const ContainerCache *containers) {
        json_t *o = json_object(), *procs = json_array(), *cgroups = json_array();
        int r = 0;

        r |= set_new(o, "resource", json_string(psi_resource_to_string(c->resource)));
        r |= set_new(o, "scope", cgroup_string(scope->node ? "" : scope->path));
        r |= set_new(o, "limit", limit_object(scope));
        r |= set_new(o, "own_limit", json_boolean(scope->own_limit));
        r |= set_new(o, "total", usage_object(c->resource, &c->total, false));
        for (size_t i = 0; i < c->n_procs && i < n_infos; i++)
                r |= append_new(procs, process_object(c->resource, &c->procs[i], &infos[i]));
        r |= set_new(o, "processes", procs);
        for (size_t i = 0; i < c->n_cgroups; i++)
                r |= append_new(cgroups, cgroup_object(c->resource, scope, &c->cgroups[i], containers));
        r |= set_new(o, "cgroups", cgroups);
        r |= set_new(o, "cgroups_total", json_u64(c->n_cgroups_total));
        return object_or_null(o, r);
}
