/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "incident/incident.h"
#include "incident/stacks-report.h"
#include "incident/culprit-report.h"
#include "incident/jsonutil.h"
#include "incident/onwhat-report.h"
#include "incident/summary.h"
#include "sampling/fired.h"
#include "containers/cgmeta.h"
#include "incident/prekill-report.h"

static json_t *time_string(usec_t t) {
        char buf[RFC3339_MAX];
        return json_string_nocheck(format_rfc3339_us(t, buf, sizeof buf));
}

static json_t *pressure_object(const Snapshot *s) {
        static const PsiResource reported[] = { PSI_RESOURCE_CPU, PSI_RESOURCE_MEMORY, PSI_RESOURCE_IO };
        json_t *o = json_object();
        int r = 0;

        for (size_t k = 0; k < ELEMENTSOF(reported); k++) {
                PsiResource i = reported[k];
                const char *name = psi_resource_to_string(i);
                json_t *res;

                if (!s || !s->has_pressure[i]) {
                        r |= set_new(o, name, json_null());
                        continue;
                }
                res = json_object();
                r |= set_new(res, "some", incident_pressure_line(&s->pressure[i], PSI_STALL_SOME));
                r |= set_new(res, "full", incident_pressure_line(&s->pressure[i], PSI_STALL_FULL));
                r |= set_new(o, name, res);
        }
        return object_or_null(o, r);
}

static json_t *delays_object(const uint64_t d[_TASK_DELAY_MAX], uint32_t present) {
        json_t *o = json_object();
        int r = 0;

        for (TaskDelay i = 0; i < _TASK_DELAY_MAX; i++)
                r |= set_new(o, task_delay_to_string(i),
                             present & TASK_DELAY_MASK(i) ? json_u64(d[i] / NSEC_PER_USEC) : json_null());
        return object_or_null(o, r);
}

/* When each window's worst delay ended (RFC 3339), null for the classes without one. */
static json_t *worst_times(const ThreadDelta *t) {
        json_t *o = json_object();
        int r = 0;

        for (TaskDelay i = 0; i < _TASK_DELAY_MAX; i++)
                r |= set_new(o, task_delay_to_string(i),
                             t->worst_at_present & TASK_DELAY_MASK(i) ? time_string(t->worst_at_ns[i] / NSEC_PER_USEC)
                                                                      : json_null());
        return object_or_null(o, r);
}

/* Where the process's longest wait of the ranked resource ended against the incident's window and
 * the trigger's (sampling/rank.h: ranking_process_worst()); null when the kernel dates no maximum
 * of its threads (taskstats before 17) or the sample has no window. */
static json_t *worst_object(const SampleResult *res, const IncidentContext *ctx, const ProcessDelta *p) {
        uint64_t start_ns, trigger_ns = 0, time_ns = res->wakeup_real_us * NSEC_PER_USEC;
        ProcessWorst w;
        json_t *o;
        int r = 0;

        if (res->basis != SAMPLE_BASIS_DELTA || !res->a)
                return json_null();
        start_ns = res->a->real_us * NSEC_PER_USEC;
        if (ctx->has_trigger)
                trigger_ns = time_ns > ctx->trigger.window_us * NSEC_PER_USEC
                                     ? time_ns - ctx->trigger.window_us * NSEC_PER_USEC
                                     : 1;
        if (!ranking_process_worst(res->ranking, p, res->resource, start_ns, trigger_ns, &w))
                return json_null();
        o = json_object();
        r |= set_new(o, "delay", json_string(task_delay_to_string(w.delay)));
        r |= set_new(o, "us", json_u64(w.ns / NSEC_PER_USEC));
        r |= set_new(o, "tid", json_integer(w.tid));
        r |= set_new(o, "ended", time_string(w.at_ns / NSEC_PER_USEC));
        r |= set_new(o, "before_time_ms",
                     json_integer(((int64_t) time_ns - (int64_t) w.at_ns) / (int64_t) (NSEC_PER_USEC * USEC_PER_MSEC)));
        r |= set_new(o, "when", json_string(worst_when_to_string(w.when)));
        return object_or_null(o, r);
}

/* Its thread blocked longest at the sample's last look, a wait that has not ended and so is in no
 * delay (sampling/rank.h: ranking_add_blocked()); null when none of its threads was in D. */
static json_t *blocked_now_object(const ProcessDelta *p) {
        json_t *o;
        int r = 0;

        if (p->blocked_tid <= 0)
                return json_null();
        o = json_object();
        r |= set_new(o, "tid", json_integer(p->blocked_tid));
        r |= set_new(o, "ms", json_u64(p->blocked_ns / NSEC_PER_MSEC));
        return object_or_null(o, r);
}

/* The parent that placed an ended process in the subtree (its cgroup is the parent's), or null. */
static json_t *parent_object(const ProcessDelta *p, const ProcessInfo *info) {
        if (p->origin == PROCESS_SHORT)
                return json_integer(p->ppid);
        return info && info->placed_by > 0 ? json_integer(info->placed_by) : json_null();
}

static json_t *process_object(const SampleResult *res, const IncidentContext *ctx, const ProcessDelta *p,
                              const ProcessInfo *info, unsigned max_threads) {
        const Ranking *rk = res->ranking;
        json_t *o = json_object(), *threads = json_array();
        int r = 0;

        r |= set_new(o, "pid", json_integer(p->tgid));
        r |= incident_process_identity(o, info);
        r |= set_new(o, "ended", json_boolean(p->origin != PROCESS_MEASURED));
        r |= set_new(o, "parent", parent_object(p, info));
        r |= set_new(o, "score_us", json_u64(p->score_ns / NSEC_PER_USEC));
        r |= set_new(o, "delay_us", delays_object(p->delay_ns, rk->present));
        r |= set_new(o, "worst", worst_object(res, ctx, p));
        r |= set_new(o, "blocked_now", blocked_now_object(p));

        for (size_t i = 0; i < p->n && i < max_threads; i++) {
                const ThreadDelta *t = &rk->threads[p->first + i];
                json_t *to;

                if (t->total_ns == 0)
                        break;
                to = json_object();
                r |= set_new(to, "tid", json_integer(t->tid));
                r |= set_new(to, "comm", json_string_from_bytes(t->comm, strnlen(t->comm, sizeof t->comm)));
                r |= set_new(to, "score_us", json_u64(t->score_ns / NSEC_PER_USEC));
                r |= set_new(to, "delay_us", delays_object(t->delay_ns, rk->present));
                r |= set_new(to, "worst_us",
                             t->worst_present ? delays_object(t->worst_ns, t->worst_present) : json_null());
                r |= set_new(to, "worst_at", t->worst_at_present ? worst_times(t) : json_null());
                r |= append_new(threads, to);
        }
        r |= set_new(o, "threads", threads);
        return object_or_null(o, r);
}

static json_t *oom_victim_object(const OomReport *oom) {
        const OomKill *k = oom->kill;
        json_t *o, *rss;
        int r = 0;

        if (!k)
                return json_null();
        o = json_object();
        r |= set_new(o, "pid", json_integer(k->pid));
        r |= set_new(o, "comm", json_string_from_bytes(k->comm, k->comm_len));
        r |= set_new(o, "uid", k->uid >= 0 ? json_integer(k->uid) : json_null());
        r |= set_new(o, "cgroup", cgroup_string(oom->victim_cgroup));
        r |= set_new(o, "meta", incident_cgroup_meta(oom->victim_cgroup, oom->victim_container));
        r |= set_new(o, "memcg",
                     k->has_header && k->task_memcg[0] ? json_string_from_bytes(k->task_memcg, strlen(k->task_memcg))
                                                       : json_null());
        if (k->has_rss) {
                rss = json_object();
                r |= set_new(rss, "anon", json_u64(k->anon_rss_kib));
                r |= set_new(rss, "file", json_u64(k->file_rss_kib));
                r |= set_new(rss, "shmem", json_u64(k->shmem_rss_kib));
                r |= set_new(o, "rss_kib", rss);
                r |= set_new(o, "total_vm_kib", json_u64(k->total_vm_kib));
        } else {
                r |= set_new(o, "rss_kib", json_null());
                r |= set_new(o, "total_vm_kib", json_null());
        }
        r |= set_new(o, "delay_us",
                     oom->has_victim_delay ? delays_object(oom->victim_delay_ns, oom->victim_present) : json_null());
        r |= set_new(o, "delay_source", oom->has_victim_delay ? json_string(oom->victim_delay_source) : json_null());
        return object_or_null(o, r);
}

static int oom_add(json_t *incident, const OomReport *oom) {
        const OomKill *k = oom->kill;
        json_t *o = json_object(), *related = json_array();
        int r = 0;

        r |= set_new(o, "source", json_string(oom->source));
        r |= set_new(o, "kills", json_u64(oom->kills));
        r |= set_new(o, "constraint",
                     k && k->has_header && k->constraint[0]
                             ? json_string_from_bytes(k->constraint, strlen(k->constraint))
                             : json_null());
        r |= set_new(o, "oom_memcg",
                     k && k->has_header && k->oom_memcg[0] ? json_string_from_bytes(k->oom_memcg, strlen(k->oom_memcg))
                                                           : json_null());
        r |= set_new(o, "global", k ? json_boolean(k->global) : json_null());
        r |= set_new(o, "cgroup", cgroup_string(oom->cgroup));
        r |= set_new(o, "victim", oom_victim_object(oom));
        r |= set_new(incident, "oom", o);
        for (size_t i = 0; i < oom->n_related; i++)
                r |= append_new(related, json_string_from_bytes(oom->related[i], strlen(oom->related[i])));
        r |= set_new(incident, "related", related);
        return r;
}

static json_t *kill_victim_object(const KillVictim *v, const ContainerCache *containers) {
        const char *cg = v->has_member && v->member.has_cgroup ? v->member.cgroup : NULL;
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "pid", json_integer(v->pid));
        r |= set_new(o, "comm", json_string_from_bytes(v->comm, strnlen(v->comm, sizeof v->comm)));
        r |= set_new(o, "cmdline",
                     v->has_member && v->member.has_cmdline
                             ? json_string_from_bytes(v->member.cmdline, v->member.cmdline_len)
                             : json_null());
        r |= set_new(o, "uid", v->uid >= 0 ? json_integer(v->uid) : json_null());
        r |= set_new(o, "cgroup", cg ? cgroup_string(cg) : json_null());
        r |= set_new(o, "meta", incident_cgroup_meta(cg, container_cache_peek(containers, cg)));
        r |= set_new(o, "rss_kib", v->has_rss ? json_u64(v->rss_kib) : json_null());
        r |= set_new(o, "rss_source", v->has_rss ? json_string(v->rss_source) : json_null());
        r |= set_new(o, "signal", v->signal == 0 ? json_null() : json_string(v->signal == 9 ? "SIGKILL" : "SIGTERM"));
        r |= set_new(o, "delay_us", v->present ? delays_object(v->delay_ns, v->present) : json_null());
        return object_or_null(o, r);
}

static json_t *opt_u64(bool has, uint64_t v) {
        return has ? json_u64(v) : json_null();
}

static int kill_add(json_t *incident, const KillReport *k) {
        const KillGroup *g = k->group;
        json_t *o = json_object(), *victims = json_array(), *signals = json_array(), *mem = json_object(),
               *pressure = json_object(), *killer, *related = json_array();
        int r = 0;

        for (size_t i = 0; i < g->n_listed; i++)
                r |= append_new(victims, kill_victim_object(&g->listed[i], k->containers));
        if (g->sigterm)
                r |= append_new(signals, json_string("SIGTERM"));
        if (g->sigkill)
                r |= append_new(signals, json_string("SIGKILL"));
        r |= set_new(o, "cgroup", cgroup_string(k->cgroup));
        r |= set_new(o, "victims_total", json_u64(g->total));
        r |= set_new(o, "signals", signals);
        r |= set_new(o, "victims", victims);
        r |= set_new(o, "lost_exit_records", json_u64(k->lost_exit_records));
        r |= set_new(o, "ended_unheard", json_u64(g->unheard));
        if (k->killer && k->killer->killer != KILLER_UNKNOWN) {
                killer = json_object();
                r |= set_new(killer, "name", json_string(killer_kind_to_string(k->killer->killer)));
                r |= set_new(killer, "basis", json_string(killmark_basis_to_string(k->killer->basis)));
                r |= set_new(killer, "mark", json_string_from_bytes(k->killer->mark, strlen(k->killer->mark)));
                killer = object_or_null(killer, r);
        } else
                killer = json_null();
        r |= set_new(o, "killer", killer);
        r |= set_new(mem, "current_kib", opt_u64(k->has_memory_current, k->memory_current_kib));
        r |= set_new(mem, "max_kib", opt_u64(k->has_memory_max, k->memory_max_kib));
        r |= set_new(mem, "swap_current_kib", opt_u64(k->has_swap_current, k->swap_current_kib));
        r |= set_new(mem, "oom_kill", opt_u64(k->has_oom_kill, k->oom_kill));
        r |= set_new(o, "memory", mem);
        r |= set_new(pressure, "trigger",
                     k->trigger_spec ? json_string_from_bytes(k->trigger_spec, strlen(k->trigger_spec)) : json_null());
        r |= set_new(pressure, "incident",
                     k->pressure_incident ? json_string_from_bytes(k->pressure_incident, strlen(k->pressure_incident))
                                          : json_null());
        r |= set_new(pressure, "since_ms", k->pressure_incident ? json_u64(k->since_pressure_ms) : json_null());
        r |= set_new(pressure, "above_trigger", json_boolean(k->above_trigger));
        r |= set_new(o, "pressure", pressure);
        if (k->prekill)
                r |= set_new(o, "prekill", prekill_report_object(k->prekill, k->prekill_outcome, k->kill_mono_us));
        r |= set_new(incident, "kill", o);
        for (size_t i = 0; i < k->n_related; i++)
                r |= append_new(related, json_string_from_bytes(k->related[i], strlen(k->related[i])));
        r |= set_new(incident, "related", related);
        return r;
}

static json_t *sample_object(const SampleResult *res, const Snapshot *first, bool has_stall, uint64_t stall_us,
                             uint64_t duration_ms) {
        const Snapshot *a = res->a, *b = res->b;
        json_t *sample = json_object();
        bool listener = a && b->has_exit_listener;
        int r = 0;

        r |= set_new(sample, "start", time_string(first->real_us));
        r |= set_new(sample, "duration_ms", json_u64(duration_ms));
        r |= set_new(sample, "basis",
                     json_string(res->basis == SAMPLE_BASIS_NONE       ? "none"
                                 : res->basis == SAMPLE_BASIS_LIFETIME ? "lifetime"
                                                                       : "delta"));
        r |= set_new(sample, "tasks", json_integer(first->listed));
        r |= set_new(sample, "processes", json_integer(first->processes));
        /* Processes listed but gone before taskstats answered, the subtree's threads whose exit
         * records were heard, and processes that ended unheard. */
        r |= set_new(sample, "exited", json_integer(first->exited + (a ? b->exit_records + b->ended_unheard : 0)));
        r |= set_new(sample, "errors", json_integer(a ? a->errors + b->errors : b->errors));
        r |= set_new(sample, "exit_records", listener ? json_integer(b->exit_records) : json_null());
        r |= set_new(sample, "lost_exit_records", listener ? json_integer(b->lost_exit_records) : json_null());
        if (listener) {
                json_t *u = json_object();
                r |= set_new(u, "processes", json_integer(b->unattributed));
                r |= set_new(u, "delay_us",
                             delays_object(b->unattributed_ns, b->unattributed_present | res->ranking->present));
                r |= set_new(sample, "unattributed", u);
        } else
                r |= set_new(sample, "unattributed", json_null());
        r |= set_new(sample, "threads_ms",
                     res->threads_base && b->threads_mono_us >= res->threads_base->threads_mono_us
                             ? json_u64((b->threads_mono_us - res->threads_base->threads_mono_us + USEC_PER_MSEC / 2) /
                                        USEC_PER_MSEC)
                             : json_null());
        r |= set_new(sample, "stall_us", has_stall ? json_u64(stall_us) : json_null());
        return object_or_null(sample, r);
}

/* What the sample's window saw of the stall that fired the trigger (sampling/fired.h): where it
 * starts and ends, on what basis, and whether the stall had passed before it. */
static json_t *window_object(const SampleResult *res, const Snapshot *first, const PsiTriggerSpec *trigger,
                             bool has_stall, uint64_t stall_us) {
        FiredCoverage c = sample_result_fired(res, trigger);
        json_t *w = json_object();
        int r = 0;

        r |= set_new(w, "basis", json_string(res->recorded ? "recorded" : "after_wakeup"));
        r |= set_new(w, "start", time_string(first->real_us));
        r |= set_new(w, "end", time_string(res->b->real_us));
        r |= set_new(w, "stall_us", has_stall ? json_u64(stall_us) : json_null());
        r |= set_new(w, "expected_us", c.verdict != FIRED_UNKNOWN ? json_u64(c.expected_us) : json_null());
        r |= set_new(w, "seen", c.verdict != FIRED_UNKNOWN ? json_real(c.seen) : json_null());
        r |= set_new(w, "verdict", json_string(fired_verdict_to_string(c.verdict)));
        return object_or_null(w, r);
}

/* The window the culprits cover (a shared pass's can start before the sample and end before it),
 * and the pass they come from. */
static int culprits_window_add(json_t *culprits, const SampleResult *res, const char *pass) {
        json_t *w = json_null();
        int r = 0;

        if (res->has_culprit_window) {
                w = json_object();
                r |= set_new(w, "start", time_string(res->culprit_start_real_us));
                r |= set_new(w, "duration_ms",
                             json_u64((res->culprit_duration_us + USEC_PER_MSEC / 2) / USEC_PER_MSEC));
                w = object_or_null(w, r);
        }
        r |= set_new(culprits, "window", w);
        r |= set_new(culprits, "shared_pass", pass ? json_string(pass) : json_null());
        return r;
}

static json_t *host_object(const IncidentContext *ctx) {
        json_t *host = json_object();
        int r = 0;

        r |= set_new(host, "hostname", json_string_from_bytes(ctx->host->hostname, strlen(ctx->host->hostname)));
        r |= set_new(host, "kernel", json_string_from_bytes(ctx->host->kernel, strlen(ctx->host->kernel)));
        r |= set_new(host, "boot_id", json_string_from_bytes(ctx->host->boot_id, strlen(ctx->host->boot_id)));
        return object_or_null(host, r);
}

static json_t *agent_object(const SampleResult *res, const IncidentContext *ctx, int taskstats_version) {
        json_t *agent = json_object();
        int r = 0;

        r |= set_new(agent, "version", json_string(ctx->agent_version ? ctx->agent_version : PSIDIAG_VERSION));
        r |= set_new(agent, "delayacct", json_boolean(ctx->delayacct));
        r |= set_new(agent, "taskstats_version",
                     taskstats_version >= 0 ? json_integer(taskstats_version) : json_null());
        const char *why = res->onwhat ? onwhat_stack_unavailable(res->onwhat) : NULL;
        r |= set_new(agent, "stack_unavailable", why ? json_string(why) : json_null());
        why = res->onwhat ? onwhat_since_unavailable(res->onwhat) : NULL;
        r |= set_new(agent, "blocked_since_unavailable", why ? json_string(why) : json_null());
        return object_or_null(agent, r);
}

static json_t *trigger_object(const IncidentContext *ctx) {
        json_t *trigger;
        int r = 0;

        if (!ctx->has_trigger)
                return json_null();
        trigger = json_object();
        /* "/a/b", the form /proc/<pid>/cgroup uses, so it joins with most_delayed[].cgroup. */
        r |= set_new(trigger, "cgroup", cgroup_string(ctx->trigger_cgroup));
        r |= set_new(trigger, "resource", json_string(psi_resource_to_string(ctx->trigger.resource)));
        r |= set_new(trigger, "stall", json_string(psi_stall_to_string(ctx->trigger.stall)));
        r |= set_new(trigger, "threshold_us", json_u64(ctx->trigger.threshold_us));
        r |= set_new(trigger, "window_us", json_u64(ctx->trigger.window_us));
        r |= set_new(trigger, "spec", json_string_from_bytes(ctx->trigger_spec, strlen(ctx->trigger_spec)));
        return object_or_null(trigger, r);
}

/* The first snapshot's task states, or those of procfs counted from nothing when it has none. */
static json_t *states_object(const Snapshot *first) {
        json_t *states = json_object();
        TaskStateCounts none;
        const TaskStateCounts *st = first->has_states ? &first->states : NULL;
        int r = 0;

        if (!st) {
                task_state_counts_init_procfs(&none);
                st = &none;
        }
        r |= set_new(states, "source", json_string(task_state_source_to_string(st->source)));
        r |= set_new(states, "running", json_u64(st->running));
        r |= set_new(states, "sleeping", json_u64(st->sleeping));
        r |= set_new(states, "uninterruptible", json_u64(st->uninterruptible));
        r |= set_new(states, "stopped", json_u64(st->stopped));
        r |= set_new(states, "io_wait", st->io_wait >= 0 ? json_integer(st->io_wait) : json_null());
        r |= set_new(states, "read", st->source == TASK_STATE_SOURCE_PROCFS ? json_u64(st->read) : json_null());
        r |= set_new(states, "scaled", json_boolean(st->scaled));
        return object_or_null(states, r);
}

/* The hot cgroups of the sample, named as the incident shows them. */
static json_t *cgroups_array(const SampleResult *res) {
        json_t *cgroups = json_array();
        int r = 0;

        for (size_t i = 0; i < res->hot->n; i++) {
                const HotCgroup *h = &res->hot->items[i];
                char path[4096];
                size_t n = MIN(cgroup_display_path(res->hot_prefix, h->path, path, sizeof path), sizeof path - 1);
                json_t *c = json_object();

                r |= set_new(c, "path", json_string_from_bytes(path, n));
                r |= set_new(c, "stall_us", json_u64(h->stall_us));
                r |= set_new(c, "some_us", json_u64(h->some_us));
                r |= set_new(c, "full_us", h->has_full ? json_u64(h->full_us) : json_null());
                r |= set_new(c, "meta", incident_cgroup_meta(path, container_cache_peek(res->containers, path)));
                r |= append_new(cgroups, c);
        }
        return object_or_null(cgroups, r);
}

/* "stacks", with those of the processes the incident names. */
static int stacks_add(json_t *o, const SampleResult *res) {
        pid_t named[STACKS_REPORT_NAMED_MAX];
        size_t n = 0;

        for (size_t i = 0; res->ranking && i < res->n_procs && i < res->ranking->n_procs && n < ELEMENTSOF(named); i++)
                named[n++] = res->ranking->procs[i].tgid;
        for (size_t i = 0; res->culprits && i < res->culprits->n_procs; i++)
                for (unsigned j = 0; j < res->culprits->procs[i].n_pids && n < ELEMENTSOF(named); j++)
                        named[n++] = res->culprits->procs[i].pids[j];
        return set_new(o, "stacks", stacks_report_object(res->stacks, res->stacks_scope, named, n));
}

/* most_delayed, culprits, limits and blocked: the tasks of the sample and what they wait on. */
static int tasks_add(json_t *o, const SampleResult *res, const IncidentContext *ctx, bool has_stall, uint64_t stall_us,
                     uint64_t duration_ms) {
        const Ranking *rk = res->ranking;
        unsigned max_threads = ctx->threads_per_process ? ctx->threads_per_process : INCIDENT_THREADS_PER_PROCESS;
        json_t *top = json_array();
        int r = 0;

        for (size_t i = 0; rk && i < res->n_procs && i < rk->n_procs; i++)
                r |= append_new(top, process_object(res, ctx, &rk->procs[i], &res->procs[i], max_threads));
        r |= set_new(o, "most_delayed", top);
        json_t *culprits = res->culprits ? culprit_report_object(res->culprits, res->culprit_scope, res->culprit_procs,
                                                                 res->n_culprit_procs, res->containers)
                                         : NULL;
        if (culprits)
                r |= culprits_window_add(culprits, res, ctx->culprit_pass);
        /* A culprit pass that ran out of memory leaves the incident without it, never drops it. */
        r |= set_new(o, "culprits", culprits ? culprits : json_null());
        bool lifetime = res->basis != SAMPLE_BASIS_DELTA;
        json_t *limits = res->onwhat
                                 ? onwhat_limits_object(res->onwhat, lifetime, has_stall, stall_us, duration_ms * 1000)
                                 : NULL;
        json_t *blocked = res->onwhat && res->onwhat->has_blocked ? onwhat_blocked_array(res->onwhat) : NULL;
        r |= set_new(o, "limits", limits ? limits : json_null());
        r |= set_new(o, "blocked", blocked ? blocked : json_null());
        if (res->stacks)
                r |= stacks_add(o, res);
        return r;
}

int incident_build(const SampleResult *res, const IncidentContext *ctx, json_t **ret) {
        json_t *o = json_object();
        /* Without a, one snapshot (b) stands for the whole sample and delays are lifetime totals. */
        const Snapshot *first = res->a ? res->a : res->b;
        int taskstats_version = res->b->taskstats_version  ? res->b->taskstats_version
                                : first->taskstats_version ? first->taskstats_version
                                                           : -1;
        uint64_t duration_ms = (res->b->mono_us - first->mono_us + USEC_PER_MSEC / 2) / USEC_PER_MSEC;
        uint64_t stall_us = 0;
        bool has_stall = sample_result_stall_us(res, &stall_us);
        int r = 0;

        r |= set_new(o, "schema_version", json_integer(INCIDENT_SCHEMA_VERSION));
        r |= set_new(o, "type", json_string(ctx->type));
        r |= set_new(o, "id", json_string(ctx->id));
        r |= set_new(o, "time", time_string(res->wakeup_real_us));
        r |= set_new(o, "episode", ctx->episode ? json_string(ctx->episode) : json_null());
        r |= set_new(o, "host", host_object(ctx));
        r |= set_new(o, "agent", agent_object(res, ctx, taskstats_version));
        r |= set_new(o, "trigger", trigger_object(ctx));
        r |= set_new(o, "pressure", pressure_object(first));
        r |= set_new(o, "sample", sample_object(res, first, has_stall, stall_us, duration_ms));
        r |= set_new(o, "window",
                     ctx->has_trigger ? window_object(res, first, &ctx->trigger, has_stall, stall_us) : json_null());
        if (ctx->has_suppressed)
                r |= set_new(o, "suppressed", json_u64(ctx->suppressed));
        r |= set_new(o, "states", states_object(first));
        if (res->hot)
                r |= set_new(o, "cgroups", cgroups_array(res));
        r |= tasks_add(o, res, ctx, has_stall, stall_us, duration_ms);
        if (ctx->oom)
                r |= oom_add(o, ctx->oom);
        if (ctx->kill)
                r |= kill_add(o, ctx->kill);

        json_t *j = summary_add(object_or_null(o, r));
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

int incident_dump_line(const json_t *incident, char **ret, size_t *ret_len) {
        char *s =
                json_dumps(incident, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(INCIDENT_REAL_PRECISION));
        size_t n;
        char *line;

        if (!s)
                return -ENOMEM;
        n = strlen(s);
        line = realloc(s, n + 2);
        if (!line) {
                free(s);
                return -ENOMEM;
        }
        line[n] = '\n';
        line[n + 1] = '\0';
        *ret = line;
        *ret_len = n + 1;
        return 0;
}

void incident_format_id(const HostInfo *host, usec_t time_real_us, pid_t pid, uint64_t seq, char *buf, size_t size) {
        char boot[9] = "00000000";
        size_t j = 0;

        for (size_t i = 0; host->boot_id[i] && j < 8; i++)
                if (host->boot_id[i] != '-')
                        boot[j++] = host->boot_id[i];
        snprintf(buf, size, "%s-%" PRIx64 "-%x-%" PRIu64, boot, (uint64_t) time_real_us, (unsigned) pid, seq);
}
