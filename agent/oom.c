/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/oom.h"
#include "agent/report.h"
#include "base/cgpath.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/procfs.h"
#include "probes/system.h"

#define OOM_RELATED_MAX 64

typedef struct OomIncident OomIncident;

struct AgentOoms {
        OomIncident *list; /* in flight (sampling), freed as they are written */
        unsigned sampling;
};

/* One oom incident: the kill, where it is written, and the sample of its cgroup taken after it. */
struct OomIncident {
        Agent *agent;
        OomIncident *next;
        Sampler sampler;
        OomKill kill;
        bool has_kill;      /* false: counted from a kill counter, the victim unknown */
        const char *source; /* "kmsg", "memory.events" or "memory.oom_control" */
        uint64_t kills;
        char *victim_cgroup; /* "a/b" as our watches name it; NULL unknown */
        /* The container it was in, named at the kill (its runtime may delete its files soon after). */
        ContainerInfo victim_container;
        bool has_victim_container;
        char *cgroup;      /* the cgroup measured; NULL node-wide */
        char *watch_label; /* the deepest covering watch's, for the metrics */
        int cgroup_fd;
        unsigned top;
        Sink **sinks; /* distinct outputs of the watches that cover the kill (of a->n_sinks) */
        size_t n_sinks;
        char related[OOM_RELATED_MAX][HISTORY_ID_MAX];
        size_t n_related;
        bool has_victim_delay;
        uint64_t victim_delay_ns[_TASK_DELAY_MAX];
        uint32_t victim_present;
        const char *victim_delay_source;
};

static void oom_incident_free(OomIncident *o) {
        Agent *a;

        if (!o)
                return;
        a = o->agent;
        for (OomIncident **p = &a->ooms->list; *p; p = &(*p)->next)
                if (*p == o) {
                        *p = o->next;
                        break;
                }
        if (o->sampler.running)
                a->ooms->sampling--;
        sampler_free(&o->sampler);
        safe_close(o->cgroup_fd);
        free(o->sinks);
        free(o->victim_cgroup);
        free(o->cgroup);
        free(o->watch_label);
        free(o);
}

/* Where the kill's final delays come from: an exit record any running or just finished sample
 * heard (the best: the victim's last counters), else what taskstats said right after the kill. */
static void oom_victim_delays(OomIncident *o) {
        Agent *a = o->agent;
        pid_t pid = o->kill.pid;
        bool heard;

        if (!o->has_kill || pid <= 0)
                return;
        /* sampler_exit_delays writes only when it heard the exit: the first that did wins. */
        heard = sampler_exit_delays(&o->sampler, pid, o->victim_delay_ns, &o->victim_present);
        for (size_t i = 0; !heard && i < a->n_watches; i++)
                heard = sampler_exit_delays(&a->watches[i]->sampler, pid, o->victim_delay_ns, &o->victim_present);
        for (OomIncident *p = a->ooms->list; !heard && p; p = p->next)
                heard = p != o && sampler_exit_delays(&p->sampler, pid, o->victim_delay_ns, &o->victim_present);
        if (heard) {
                o->has_victim_delay = true;
                o->victim_delay_source = "exit_record";
        }
}

/* A window whose end was not reached (B failed, or the agent is stopping): A's lifetime totals
 * are what there is. */
static void oom_result_lifetime(OomIncident *o) {
        if (sampler_result_lifetime(&o->sampler) < 0)
                log_warning("out of memory: the oom incident of pid %d names no process", (int) o->kill.pid);
}

/* The incident of the sampler's result (a delta, lifetime totals, or pressure alone). */
static void oom_write(OomIncident *o) {
        Agent *a = o->agent;
        Sampler *s = &o->sampler;
        const char *related[OOM_RELATED_MAX];
        char id[HISTORY_ID_MAX];
        int r;

        /* An exit record heard since the kill beats the taskstats reading taken at it, which is
         * kept otherwise. */
        if (!o->has_victim_delay || strcmp(o->victim_delay_source, "exit_record") != 0)
                oom_victim_delays(o);
        for (size_t i = 0; i < o->n_related; i++)
                related[i] = o->related[i];
        OomReport rep = {
                .source = o->source,
                .kill = o->has_kill ? &o->kill : NULL,
                .kills = o->kills,
                .cgroup = o->cgroup,
                .victim_cgroup = o->victim_cgroup,
                .victim_container = o->has_victim_container ? &o->victim_container : NULL,
                .has_victim_delay = o->has_victim_delay,
                .victim_present = o->victim_present,
                .victim_delay_source = o->victim_delay_source,
                .related = related,
                .n_related = o->n_related,
        };
        memcpy(rep.victim_delay_ns, o->victim_delay_ns, sizeof rep.victim_delay_ns);

        ReportEnd end = {
                .agent = a,
                .id = id,
                .id_size = sizeof id,
                .sinks = o->sinks,
                .n_sinks = o->n_sinks,
                .count = { .label = o->watch_label,
                           .type = COUNTERS_INCIDENT_OOM,
                           .resource = PSI_RESOURCE_MEMORY,
                           .oom_kills = o->kills },
        };
        r = report_publish(&s->result,
                           &(IncidentContext) {
                                   .type = "oom",
                                   .id = id,
                                   .host = &a->rt.host,
                                   .delayacct = runtime_delayacct(&a->rt),
                                   .oom = &rep,
                           },
                           &end);
        if (r < 0) {
                log_error_errno(r, "cannot build the oom incident of pid %d", (int) o->kill.pid);
                return;
        }
        if (o->has_kill)
                log_info("oom kill of pid %d (%.*s) in /%s: incident %s, %zu related", (int) o->kill.pid,
                         (int) o->kill.comm_len, o->kill.comm, o->victim_cgroup ? o->victim_cgroup : "?", id,
                         o->n_related);
        else
                log_info("%llu oom kill%s counted in /%s (%s): incident %s, %zu related", (unsigned long long) o->kills,
                         o->kills == 1 ? "" : "s", o->victim_cgroup ? o->victim_cgroup : "?", o->source, id,
                         o->n_related);
}

static void oom_sample_done(Sampler *s, int r) {
        OomIncident *o = ASSERT_PTR(s->userdata);

        o->agent->ooms->sampling--;
        if (r < 0)
                log_debug_errno(r, "the cgroup of an oom kill could not be measured after its window; "
                                   "reporting the first snapshot");
        if (s->partial)
                log_warning("out of memory: the oom incident's sample lacks exits, thread detail or processes");
        if (r < 0) /* a window of 0 has no B to fail: its result is A's lifetime already */
                oom_result_lifetime(o);
        oom_write(o);
        oom_incident_free(o);
}

/* The victim's delays right after the kill: an exit record some sample already heard, else
 * what taskstats says now (the victim is dying or a zombie; gone: nothing). */
static void oom_query_victim(OomIncident *o) {
        TaskStats ts;

        if (!o->has_kill)
                return;
        oom_victim_delays(o);
        if (o->has_victim_delay || !o->agent->rt.taskstats)
                return;
        if (taskstats_get_tid(o->agent->rt.taskstats, o->kill.pid, &ts) >= 0 && ts.pid == o->kill.pid) {
                o->has_victim_delay = true;
                o->victim_delay_source = "taskstats";
                o->victim_present = ts.present;
                memcpy(o->victim_delay_ns, ts.delay_ns, sizeof o->victim_delay_ns);
        }
}

/* Opens the cgroup to measure: the victim's own, or the nearest ancestor there is, up to (and
 * including) the deepest watch that covers it. */
static int oom_open_cgroup(OomIncident *o, const Watch *deepest) {
        Agent *a = o->agent;
        _cleanup_free_ char *p = NULL;
        size_t floor = deepest->path ? strlen(deepest->path) : 0;
        int r;

        if (!o->victim_cgroup)
                return deepest->path ? -ENOENT : 0;
        p = strdup(o->victim_cgroup);
        if (!p)
                return -ENOMEM;
        for (;;) {
                size_t n = strlen(p);
                if (n < floor || (n == 0 && !deepest->path))
                        return deepest->path ? -ENOENT : 0; /* node-wide */
                /* Out of the reserve (fd_budget_reserve()), as a watch's sample. */
                r = sysroot_open_cgroup(a->rt.sysroot, p, &o->cgroup_fd);
                if (r >= 0) {
                        o->cgroup = TAKE_PTR(p);
                        return 0;
                }
                if (!cgpath_parent(p))
                        return r;
        }
}

/* The deepest watch that covers a kill in victim_cgroup (NULL: unknown, only node-wide and root
 * watches); NULL when none does, or out of memory (logged). */
static const Watch *oom_deepest_watch(Agent *a, const char *victim_cgroup) {
        _cleanup_free_ const char **paths = calloc(MAX(a->n_watches, (size_t) 1), sizeof *paths);
        ssize_t i;

        if (!paths) {
                log_error("out of memory: an oom kill is not reported");
                return NULL;
        }
        for (size_t k = 0; k < a->n_watches; k++)
                paths[k] = a->watches[k]->path;
        i = cgpath_deepest(paths, a->n_watches, victim_cgroup);
        if (i < 0)
                log_debug("an oom kill in %s%s: not watched", victim_cgroup ? "/" : "",
                          victim_cgroup ? victim_cgroup : "an unknown cgroup");
        return i >= 0 ? a->watches[i] : NULL;
}

/* The incident of a kill under deepest, its victim's container looked up; NULL when out of
 * memory (logged). */
static OomIncident *oom_incident_new(Agent *a, const OomKill *kill, const char *victim_cgroup, const char *source,
                                     uint64_t kills, const Watch *deepest) {
        OomIncident *o = calloc(1, sizeof *o);

        if (!o) {
                log_error("out of memory: an oom kill is not reported");
                return NULL;
        }
        o->agent = a;
        o->cgroup_fd = -EBADF;
        o->source = source;
        o->kills = kills;
        o->top = deepest->cfg->top;
        o->has_kill = kill != NULL;
        if (kill)
                o->kill = *kill;
        o->sinks = calloc(MAX(a->n_sinks, (size_t) 1), sizeof *o->sinks);
        o->watch_label = strdup(counters_watch_label(deepest->cfg));
        if (!o->sinks || !o->watch_label || (victim_cgroup && !(o->victim_cgroup = strdup(victim_cgroup)))) {
                log_error("out of memory: an oom kill is not reported");
                free(o->sinks);
                free(o->watch_label);
                free(o);
                return NULL;
        }
        if (victim_cgroup) {
                const ContainerInfo *ci = container_cache_lookup(a->rt.containers, victim_cgroup);
                if (ci) {
                        o->victim_container = *ci;
                        o->has_victim_container = true;
                }
                container_cache_done(a->rt.containers);
        }
        return o;
}

/* Where o goes: the sink of every watch that covers its victim's cgroup, once each; and the ids of
 * the pressure incidents before it there. */
static void oom_incident_route(OomIncident *o, const char *victim_cgroup) {
        Agent *a = o->agent;
        const char *related[OOM_RELATED_MAX];

        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *w = a->watches[i];
                bool have = false;
                if (!cgpath_covers(w->path, victim_cgroup))
                        continue;
                for (size_t k = 0; k < o->n_sinks; k++)
                        have = have || o->sinks[k] == w->sink;
                if (!have)
                        o->sinks[o->n_sinks++] = w->sink; /* one of a->sinks: room for all */
        }
        o->n_related = history_related(&a->history, victim_cgroup, now_usec(CLOCK_MONOTONIC), related, OOM_RELATED_MAX);
        for (size_t i = 0; i < o->n_related; i++)
                snprintf(o->related[i], sizeof o->related[i], "%s", related[i]);
}

/* o's cgroup sampled for deepest's sample_ms, oom_sample_done() writing it; or, when it cannot be
 * (its cgroup gone, too many samples at once), written now with what could be read. */
static void oom_incident_measure(OomIncident *o, const Watch *deepest) {
        Agent *a = o->agent;
        int r = oom_open_cgroup(o, deepest);
        SampleScope scope = core_sample_scope(a, o->cgroup_fd, o->cgroup, PSI_RESOURCE_MEMORY, o->top);

        if (r >= 0 && a->ooms->sampling < OOM_SAMPLING_MAX) {
                uint64_t ms = deepest->cfg->sample_ms;
                /* With no window, o is written and freed inside sampler_start: ask now. */
                if (ms == 0)
                        oom_query_victim(o);
                a->ooms->sampling++;
                r = sampler_start(&o->sampler, &scope, ms);
                if (r >= 0) {
                        if (ms > 0) {
                                /* After the sample's exit listener is registered: if the victim
                                 * exits from here on, its exit record is heard and preferred. */
                                oom_query_victim(o);
                                log_debug("sampling /%s after an oom kill for %llu ms",
                                          o->cgroup ? o->cgroup : "(node)", (unsigned long long) ms);
                        }
                        return; /* oom_sample_done writes it (and frees o) */
                }
                a->ooms->sampling--;
        }
        if (r < 0 && !cgroup_is_gone(r))
                log_debug_errno(r, "cannot measure the cgroup of an oom kill");
        oom_query_victim(o);
        /* Not measured: the pressure of what could be opened, written now. */
        sampler_result_unmeasured(&o->sampler, &scope);
        oom_write(o);
        oom_incident_free(o);
}

void oom_report(Agent *a, const OomKill *kill, const char *victim_cgroup, const char *source, uint64_t kills) {
        const Watch *deepest = oom_deepest_watch(a, victim_cgroup);
        OomIncident *o = deepest ? oom_incident_new(a, kill, victim_cgroup, source, kills, deepest) : NULL;

        if (!o)
                return;
        o->next = a->ooms->list;
        a->ooms->list = o;
        sampler_init(&o->sampler, a->loop, runtime_exit_cpus(&a->rt), oom_sample_done, o);
        oom_incident_route(o, victim_cgroup);
        oom_incident_measure(o, deepest);
}

/* The victim's cgroup as our watches name it ("a/b"): from /proc/<pid>/cgroup while the dying
 * process is still there (on a hybrid host that is the cgroup2 path; the kernel's task_memcg is the
 * cgroup-v1 memcg's), else the kernel's task_memcg. NULL when neither says. */
char *oom_victim_cgroup(const Agent *a, const OomKill *k) {
        char buf[OOM_CGROUP_MAX];
        const char *p = NULL;

        /* Outside our cgroup namespace, /proc says "/../..": the kernel's task_memcg is a real path. */
        if (k->pid > 0 && proc_read_cgroup(a->rt.sysroot->proc_fd, k->pid, buf, sizeof buf) >= 0 &&
            !proc_cgroup_outside_namespace(buf))
                p = buf;
        else if (k->has_header && k->task_memcg[0])
                p = k->task_memcg;
        return p ? strdup(cgpath_trim(p)) : NULL;
}

int oom_start(Agent *a) {
        a->ooms = calloc(1, sizeof *a->ooms);
        return a->ooms ? 0 : -ENOMEM;
}

void oom_stop(Agent *a) {
        if (!a->ooms)
                return;
        /* A kill is never dropped at exit: one still in its sample is written with what snapshot A
         * saw (lifetime totals, labelled so). */
        while (a->ooms->list) {
                OomIncident *o = a->ooms->list;
                if (o->sampler.running) {
                        sampler_cancel(&o->sampler);
                        a->ooms->sampling--;
                        oom_result_lifetime(o);
                        oom_write(o);
                }
                oom_incident_free(o);
        }
        a->ooms = mfree(a->ooms);
}
