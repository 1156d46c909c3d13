/* SPDX-License-Identifier: MIT */
/* A kill window's group written as a kill incident: its killer chosen from the marks (or
 * systemd-oomd's announcement), the cgroup's memory, the pressure incidents before it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "agent/killwindow.h"
#include "agent/report.h"
#include "base/cgpath.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/procfs.h"
#include "probes/limits-find.h"
#include "sampling/result.h"

/* The processes of l as members, with what their exit records will not say. False without memory. */
bool killwindow_read_members(KillWindow *w, const TidList *l, KillMembers *into) {
        int proc_fd = w->k->a->rt.sysroot->proc_fd;
        size_t n = MIN(l->n, (size_t) KILL_MEMBERS_MAX);

        into->items = n > 0 ? malloc(n * sizeof *into->items) : NULL;
        into->cap = into->items ? n : 0;
        into->n = 0;
        for (size_t i = 0; i < into->cap; i++) {
                KillMember *e = &into->items[into->n];
                pid_t pid = l->tids[i];
                ssize_t c;

                if (pid == getpid())
                        continue;
                *e = (KillMember) { .pid = pid };
                e->has_rss = proc_read_rss_kib(proc_fd, pid, &e->rss_kib) >= 0;
                c = proc_read_cmdline(proc_fd, pid, e->cmdline, sizeof e->cmdline);
                if (c >= 0) {
                        e->cmdline_len = (size_t) c;
                        e->has_cmdline = true;
                }
                char cg[KILL_CGROUP_MAX];
                if (proc_read_cgroup(proc_fd, pid, cg, sizeof cg) >= 0 && !proc_cgroup_outside_namespace(cg)) {
                        snprintf(e->cgroup, sizeof e->cgroup, "%s", cgpath_trim(cg));
                        e->has_cgroup = true;
                }
                into->n++;
        }
        kill_members_sort(into);
        return into->items || n == 0;
}

/* v into w's group in flight, which starts with it when there is none. */
void killwindow_add_victim(KillWindow *w, const KillVictim *v, usec_t now) {
        if (!w->group) {
                w->group = calloc(1, sizeof *w->group);
                if (!w->group) {
                        log_error("out of memory: a kill in %s is not reported", w->watch->name);
                        return;
                }
                w->group->first_mono_us = now;
                ev_timer_set(&w->group_timer, (double) KILL_GROUP_DELAY_US / USEC_PER_SEC, 0.);
                ev_timer_start(w->k->a->loop, &w->group_timer);
        }
        (void) kill_group_add(w->group, v);
}

/* "psidiag-workload" of "/usr/bin/psidiag-workload sleep": a comm for a process whose exit record
 * was lost (its cmdline's first word, cut as the kernel cuts a comm). */
static void comm_from_cmdline(const KillMember *m, char *comm, size_t size) {
        size_t end = 0, start = 0;

        while (m->has_cmdline && end < m->cmdline_len && m->cmdline[end] != ' ') {
                if (m->cmdline[end] == '/')
                        start = end + 1;
                end++;
        }
        snprintf(comm, size, "%.*s", (int) MIN(end - MIN(start, end), (size_t) 15), m->cmdline + MIN(start, end));
}

/* Exit records were lost: every member gone from the listing now with no record heard ended
 * while they were, and is reported (signal unknown), never dropped. */
void killwindow_unheard(KillWindow *w, const KillMembers *now) {
        usec_t t = now_usec(CLOCK_MONOTONIC);
        size_t n = 0;

        for (size_t i = 0; i < w->members.n; i++) {
                const KillMember *m = &w->members.items[i];
                if (!kill_members_unheard(m, now, w->group))
                        continue;
                KillVictim v = { .pid = m->pid, .uid = -1, .member = *m, .has_member = true };
                comm_from_cmdline(m, v.comm, sizeof v.comm);
                if (m->has_rss) {
                        v.rss_kib = m->rss_kib;
                        v.has_rss = true;
                        v.rss_source = "status";
                }
                killwindow_add_victim(w, &v, t);
                n++;
        }
        log_debug("kill window of %s listed again after lost exit records: %zu processes ended unheard", w->watch->name,
                  n);
}

void killwindow_mark_push(const KillMark *m, void *userdata) {
        AgentKills *k = userdata;

        k->marks[k->marks_next] = *m;
        k->mark_us[k->marks_next] = now_usec(CLOCK_MONOTONIC);
        k->marks_next = (k->marks_next + 1) % KILL_MARKS_MAX;
        k->n_marks = MIN(k->n_marks + 1, (size_t) KILL_MARKS_MAX);
}

/* The watched cgroup's memory now: its cgroup2 files, or on a hybrid host (the memory controller on
 * cgroup v1) the v1 memcg its processes are in, found as "limits" finds it (limits-find.h; a v1
 * memcg is found only while a process is left in the cgroup). */
void killwindow_read_memory(Agent *a, const Watch *watch, int cgroup_fd, MemcgState *ret) {
        LimitsLocation loc;
        MemoryLimits ml;

        memcg_read_state(cgroup_fd, ret);
        if (ret->has_current || !a->rt.limits || !watch->path ||
            limits_locate(a->rt.limits, watch->path, PSI_RESOURCE_MEMORY, &loc) < 0 || loc.source != LIMITS_SOURCE_V1 ||
            limits_read_memory_at(a->rt.limits, loc.source, loc.path, &ml) < 0)
                return;
        ret->has_current = ml.has_current;
        ret->current_bytes = ml.current_bytes;
        ret->has_max = ml.has_max && ml.max_bytes != LIMITS_UNLIMITED;
        ret->max_bytes = ml.max_bytes;
        ret->has_oom_kill = ml.events.has_oom_kill;
        ret->oom_kill = ml.events.oom_kill;
}

/* One group being written: what each step of killwindow_write() finds, for the steps after it. */
typedef struct GroupWrite {
        KillWindow *w;
        KillGroup *g; /* owned; NULL once handed back to the window to wait */
        int fd;       /* the watched cgroup, -EBADF when it is not open */
        usec_t now;
        MemcgState ms;
        KillerChoice killer;
        PrekillMeasure *pk; /* systemd-oomd announced this kill: its measure (the window's) */
} GroupWrite;

static void group_write_done(GroupWrite *c) {
        c->fd = safe_close(c->fd);
        c->g = mfree(c->g);
}

/* The marks the killers logged, read now, and the cgroup's memory. */
static void group_measure(GroupWrite *c) {
        AgentKills *k = c->w->k;

        killers_logs_drain(&k->logs, killwindow_mark_push, k);
        if (core_watch_open_cgroup(c->w->watch, &c->fd) >= 0)
                killwindow_read_memory(k->a, c->w->watch, c->fd, &c->ms);
}

/* The kernel's OOM killer counted a kill here since the last refresh: its oom incident tells it (a
 * kill by the kernel never also becomes a kill incident). */
static bool group_is_oom(GroupWrite *c) {
        KillWindow *w = c->w;

        if (!c->ms.has_oom_kill || !w->has_oom_kill_base || c->ms.oom_kill <= w->oom_kill_base)
                return false;
        log_debug("%llu processes of %s killed with the kernel's oom_kill counter growing: an oom, not a kill",
                  (unsigned long long) c->g->total, w->watch->name);
        w->oom_kill_base = c->ms.oom_kill;
        return true;
}

/* The marks of the window's span, oldest first, into marks; returns how many. */
static size_t group_marks(const GroupWrite *c, KillMark marks[static KILL_MARKS_MAX]) {
        const AgentKills *k = c->w->k;
        size_t n = 0;

        for (size_t i = 0; i < k->n_marks; i++) {
                size_t at = (k->marks_next + KILL_MARKS_MAX - k->n_marks + i) % KILL_MARKS_MAX;
                /* Marks read just now (killers_logs_drain() in group_measure()) are younger than now. */
                if (k->mark_us[at] >= c->now ||
                    c->now - k->mark_us[at] <= (usec_t) k->a->config->kill_window_s * USEC_PER_SEC + USEC_PER_SEC)
                        marks[n++] = k->marks[at];
        }
        return n;
}

/* The cgroup the victims were in: the first listed member's, else the watched one. */
static const char *group_victim_cgroup(const GroupWrite *c) {
        for (size_t i = 0; i < c->g->n_listed; i++)
                if (c->g->listed[i].has_member && c->g->listed[i].member.has_cgroup)
                        return c->g->listed[i].member.cgroup;
        return c->w->watch->path;
}

/* c->killer from the marks, the cgroup's xattrs, systemd-oomd's announcement (c->pk) or, with no
 * mark, the killers running. */
static void group_choose_killer(GroupWrite *c) {
        KillWindow *w = c->w;
        Agent *a = w->k->a;
        KillGroup *g = c->g;
        KillMark marks[KILL_MARKS_MAX];
        KillerKind running[_KILLER_MAX];
        const char *comms[KILL_VICTIMS_LISTED];
        size_t n_marks = group_marks(c, marks);
        const char *victim_cgroup = group_victim_cgroup(c);

        for (size_t i = 0; i < g->n_listed; i++)
                comms[i] = g->listed[i].comm;
        KillEvidence ev = { .marks = marks,
                            .n_marks = n_marks,
                            .victim_cgroup = victim_cgroup,
                            .comms = comms,
                            .n_comms = g->n_listed };
        ev.xattr_killer = killers_xattrs_grew(&w->xattrs, a->rt.sysroot, victim_cgroup, w->watch->path, ev.xattr_name,
                                              sizeof ev.xattr_name);
        kill_choose_killer(&ev, g->pids, g->n_pids, &c->killer);
        /* systemd-oomd told us before it killed this cgroup: the strongest mark there is. */
        bool announced = w->prekill && (g->total == 0 || !victim_cgroup ||
                                        cgpath_covers(cgpath_trim(w->prekill->cgroup), victim_cgroup));
        c->pk = announced ? w->prekill : NULL;
        if (c->pk) {
                c->killer = (KillerChoice) { .killer = KILLER_SYSTEMD_OOMD, .basis = KILLMARK_BASIS_PREKILL };
                snprintf(c->killer.mark, sizeof c->killer.mark, "Notify %.240s", c->pk->cgroup);
        } else if (c->killer.killer == KILLER_UNKNOWN) {
                ev.running = running;
                ev.n_running = killers_running(a->rt.sysroot, running, ELEMENTSOF(running));
                kill_choose_killer(&ev, g->pids, g->n_pids, &c->killer);
        }
}

/* No mark names the killer yet: one may come late (kill_mark_wait_us()). A kill announced whose
 * measure is still being taken (agent/prekillhook.h) waits for it as long. True when the group went
 * back to the window, its timer set for the wait. */
static bool group_defer(GroupWrite *c, bool final) {
        KillWindow *w = c->w;
        usec_t wait = final ? 0 : kill_mark_wait_us(&c->killer, c->g->first_mono_us, c->now);

        if (!final && !w->prekill && w->announced[0] && c->now < c->g->first_mono_us + KILL_MARK_WAIT_US)
                wait = MAX(wait, 100 * USEC_PER_MSEC);
        if (wait == 0)
                return false;
        w->group = TAKE_PTR(c->g);
        ev_timer_set(&w->group_timer, (double) wait / USEC_PER_SEC, 0.);
        ev_timer_start(w->k->a->loop, &w->group_timer);
        return true;
}

/* False when max_incidents_per_minute drops the incident: counted (in the next incident's
 * "suppressed"), the cgroup closed and the metrics updated. */
static bool group_admit(GroupWrite *c) {
        Agent *a = c->w->k->a;

        if (rate_limit_admit(&a->rate, c->now))
                return true;
        a->counters.wakeups[WAKEUP_RATE_LIMIT]++;
        log_debug("a kill incident of %s is dropped: max_incidents_per_minute", c->w->watch->name);
        c->fd = safe_close(c->fd);
        health_update(a);
        return false;
}

/* The kill part of the incident into *rep, the ids of the pressure incidents before it into related
 * (which rep points to), the victims' containers looked up. */
static void group_report(const GroupWrite *c, const char *related[static KILL_RELATED_MAX], KillReport *rep) {
        KillWindow *w = c->w;
        Agent *a = w->k->a;
        KillGroup *g = c->g;
        size_t n_related = history_related(&a->history, w->watch->path, c->now, related, KILL_RELATED_MAX);

        for (size_t i = 0; i < g->n_listed; i++)
                if (g->listed[i].has_member && g->listed[i].member.has_cgroup)
                        (void) container_cache_lookup(a->rt.containers, g->listed[i].member.cgroup);
        container_cache_done(a->rt.containers);
        *rep = (KillReport) {
                .group = g,
                .containers = a->rt.containers,
                .cgroup = w->watch->path,
                .killer = &c->killer,
                .has_memory_current = c->ms.has_current,
                .memory_current_kib = c->ms.current_bytes / 1024,
                .has_memory_max = c->ms.has_max,
                .memory_max_kib = c->ms.max_bytes / 1024,
                .has_swap_current = c->ms.has_swap_current,
                .swap_current_kib = c->ms.swap_current_bytes / 1024,
                .has_oom_kill = c->ms.has_oom_kill,
                .oom_kill = c->ms.oom_kill,
                .trigger_spec = w->trigger[0] ? w->trigger : NULL,
                /* A kill while the window's first sample runs: the id that sample was given. */
                .pressure_incident = w->incident[0]           ? w->incident
                                     : w->watch->sample_id[0] ? w->watch->sample_id
                                                              : NULL,
                .since_pressure_ms =
                        g->first_mono_us > w->incident_mono_us ? (g->first_mono_us - w->incident_mono_us) / 1000 : 0,
                .above_trigger = w->last_wakeup_us > w->incident_mono_us,
                .related = related,
                .n_related = n_related,
                .prekill = c->pk,
                .prekill_outcome = c->pk ? (g->total > 0 ? "killed" : "no_kill") : NULL,
                .kill_mono_us = g->first_mono_us,
                .lost_exit_records = w->lost,
        };
}

/* Writes the kill incident to the watch's sink, its id into id; returns report_publish()'s answer. */
static int group_publish(const GroupWrite *c, char *id, size_t id_size) {
        KillWindow *w = c->w;
        Agent *a = w->k->a;
        const char *related[KILL_RELATED_MAX];
        KillReport rep;

        group_report(c, related, &rep);
        /* The cgroup's pressure right after: a result of no task. */
        SampleScope scope = {
                .sysroot = a->rt.sysroot,
                .cgroup_fd = c->fd,
                .resource = PSI_RESOURCE_MEMORY,
        };
        Snapshot snap = {};
        SampleResult result;
        sample_result_unmeasured(&scope, &snap, &result);
        ReportEnd end = {
                .agent = a,
                .id = id,
                .id_size = id_size,
                .sinks = &w->watch->sink,
                .n_sinks = 1,
                .count = { .label = counters_watch_label(w->watch->cfg),
                           .type = COUNTERS_INCIDENT_KILL,
                           .resource = PSI_RESOURCE_MEMORY,
                           .has_killer = true,
                           .killer = c->killer.killer },
        };
        return report_publish(&result,
                              &(IncidentContext) {
                                      .type = "kill",
                                      .id = id,
                                      .host = &a->rt.host,
                                      .delayacct = runtime_delayacct(&a->rt),
                                      .kill = &rep,
                              },
                              &end);
}

/* After the incident (r: group_publish()'s answer): the cgroup closed, the announcement consumed,
 * the outcome logged. */
static void group_published(GroupWrite *c, int r, const char *id) {
        KillWindow *w = c->w;
        const KillGroup *g = c->g;
        const KillerChoice *killer = &c->killer;

        c->fd = safe_close(c->fd);
        if (c->pk) {
                w->prekill = prekill_measure_free(w->prekill);
                w->announced[0] = '\0';
        }
        if (r < 0) {
                log_error_errno(r, "cannot build the kill incident of %s", w->watch->name);
                return;
        }
        w->lost = 0;
        log_info("%llu process%s of %s killed under pressure by %s (%s): incident %s", (unsigned long long) g->total,
                 g->total == 1 ? "" : "es", w->watch->name,
                 killer->killer == KILLER_UNKNOWN ? "an unknown killer" : killer_kind_to_string(killer->killer),
                 killer->killer == KILLER_UNKNOWN ? "no mark" : killmark_basis_to_string(killer->basis), id);
}

void killwindow_write(KillWindow *w, bool final) {
        _cleanup_(group_write_done) GroupWrite c = {
                .w = w,
                .g = TAKE_PTR(w->group),
                .fd = -EBADF,
                .now = now_usec(CLOCK_MONOTONIC),
        };
        char id[HISTORY_ID_MAX];

        ev_timer_stop(w->k->a->loop, &w->group_timer);
        if (!c.g)
                return;
        group_measure(&c);
        if (group_is_oom(&c))
                return;
        group_choose_killer(&c);
        if (group_defer(&c, final))
                return;
        if (!group_admit(&c))
                return;
        group_published(&c, group_publish(&c, id, sizeof id), id);
}
