/* SPDX-License-Identifier: MIT */
/* The loop side of kill incidents (windows, exit listener, members, kill logs, grouping timer);
 * every decision is sampling/kills.h's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "agent/killers.h"
#include "agent/kills.h"
#include "agent/report.h"
#include "base/cgpath.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/limits-find.h"
#include "probes/memcg.h"
#include "probes/procfs.h"
#include "probes/tasks.h"
#include "sampling/kills.h"
#include "sampling/prekill.h"
#include "sampling/result.h"

#define KILL_TICK_S 1.0
#define KILL_MEMBERS_MAX 4096
#define KILL_RELATED_MAX 64

typedef struct KillWindow {
        AgentKills *k;
        Watch *watch;
        char trigger[128];
        char incident[HISTORY_ID_MAX];
        usec_t incident_mono_us, until_us, last_wakeup_us;
        KillMembers members;
        uint64_t oom_kill_base;
        bool has_oom_kill_base;
        KillXattrBases xattrs;
        KillGroup *group; /* in flight, written when group_timer fires */
        ev_timer group_timer;
        PrekillMeasure *prekill; /* a kill systemd-oomd announced (agent/prekill.h), until prekill_until_us */
        usec_t prekill_until_us;
} KillWindow;

struct AgentKills {
        Agent *a;
        KillWindow **windows;
        size_t n;
        TaskstatsExitListener *listener;
        ev_io listener_io;
        ev_timer tick;
        KernelVictims kernel;
        KillMark marks[KILL_MARKS_MAX]; /* ring, oldest at marks_next when full */
        usec_t mark_us[KILL_MARKS_MAX];
        size_t n_marks, marks_next;
        KillLogs logs;
        uint64_t lost;
};

static void mark_push(const KillMark *m, void *userdata) {
        AgentKills *k = userdata;

        k->marks[k->marks_next] = *m;
        k->mark_us[k->marks_next] = now_usec(CLOCK_MONOTONIC);
        k->marks_next = (k->marks_next + 1) % KILL_MARKS_MAX;
        k->n_marks = MIN(k->n_marks + 1, (size_t) KILL_MARKS_MAX);
}

/* ---- members ------------------------------------------------------------------------------- */

/* The watched cgroup's memory now: its cgroup2 files, or on a hybrid host (the memory controller on
 * cgroup v1) the v1 memcg its processes are in, found as "limits" finds it (limits-find.h; a v1
 * memcg is found only while a process is left in the cgroup). */
static void kills_read_memory(Agent *a, const Watch *watch, int cgroup_fd, MemcgState *ret) {
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

/* Lists the watch's processes (its subtree) with what their exit records will not say. */
static void members_refresh(KillWindow *w) {
        Agent *a = w->k->a;
        int proc_fd = a->rt.sysroot->proc_fd, fd = -EBADF;
        TidList l = {};
        KillMembers *m = &w->members;
        MemcgState ms;

        /* Node-wide: every process is a member, known by its exit record alone (listing and reading
         * every process each second would cost more than it tells); while a kill systemd-oomd
         * announced is awaited, the members are its cgroup's processes, and only they. */
        const char *pk = !w->watch->path && w->prekill ? cgpath_trim(w->prekill->cgroup) : NULL;
        if (!w->watch->path && !pk) {
                m->n = 0;
                return;
        }
        if ((pk ? sysroot_open_cgroup(a->rt.sysroot, pk, &fd) : core_watch_open_cgroup(w->watch, &fd)) >= 0) {
                (void) cgroup_list_processes(fd, &l);
                kills_read_memory(a, w->watch, fd, &ms);
                if (ms.has_oom_kill && !w->group) {
                        w->oom_kill_base = ms.oom_kill;
                        w->has_oom_kill_base = true;
                }
                safe_close(fd);
        }
        killers_xattrs_note(&w->xattrs, a->rt.sysroot, w->watch->path);
        size_t n = MIN(l.n, (size_t) KILL_MEMBERS_MAX);
        if (n > m->cap) {
                KillMember *p = realloc(m->items, n * sizeof *p);
                if (!p) {
                        tid_list_done(&l);
                        return; /* the last refresh's members stay */
                }
                m->items = p;
                m->cap = n;
        }
        m->n = 0;
        for (size_t i = 0; i < n; i++) {
                KillMember *e = &m->items[m->n];
                pid_t pid = l.tids[i];
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
                        killers_xattrs_note(&w->xattrs, a->rt.sysroot, e->cgroup);
                }
                m->n++;
        }
        kill_members_sort(m);
        tid_list_done(&l);
}

/* ---- writing ------------------------------------------------------------------------------- */

/* Writes the group in flight; unless final, a group no mark names the killer of yet waits for one. */
static void window_write_group(KillWindow *w, bool final) {
        AgentKills *k = w->k;
        Agent *a = k->a;
        _cleanup_free_ KillGroup *g = TAKE_PTR(w->group);
        KillMark marks[KILL_MARKS_MAX];
        KillerKind running[_KILLER_MAX];
        KillerChoice killer;
        MemcgState ms = {};
        const char *related[KILL_RELATED_MAX];
        char id[HISTORY_ID_MAX];
        int fd = -EBADF, r;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        ev_timer_stop(a->loop, &w->group_timer);
        if (!g)
                return;
        killers_logs_drain(&k->logs, mark_push, k);
        if (core_watch_open_cgroup(w->watch, &fd) >= 0)
                kills_read_memory(a, w->watch, fd, &ms);
        /* The kernel's OOM killer counted a kill here since the last refresh: its oom incident
         * tells it (a kill by the kernel never also becomes a kill incident). */
        if (ms.has_oom_kill && w->has_oom_kill_base && ms.oom_kill > w->oom_kill_base) {
                log_debug("%llu processes of %s killed with the kernel's oom_kill counter growing: an oom, not a kill",
                          (unsigned long long) g->total, w->watch->name);
                w->oom_kill_base = ms.oom_kill;
                safe_close(fd);
                return;
        }

        /* The marks, oldest first. */
        size_t n_marks = 0;
        for (size_t i = 0; i < k->n_marks; i++) {
                size_t at = (k->marks_next + KILL_MARKS_MAX - k->n_marks + i) % KILL_MARKS_MAX;
                /* Marks read just now (killers_logs_drain() above) are younger than now. */
                if (k->mark_us[at] >= now ||
                    now - k->mark_us[at] <= (usec_t) a->config->kill_window_s * USEC_PER_SEC + USEC_PER_SEC)
                        marks[n_marks++] = k->marks[at];
        }
        const char *victim_cgroup = NULL;
        for (size_t i = 0; i < g->n_listed && !victim_cgroup; i++)
                if (g->listed[i].has_member && g->listed[i].member.has_cgroup)
                        victim_cgroup = g->listed[i].member.cgroup;
        if (!victim_cgroup)
                victim_cgroup = w->watch->path;
        const char *comms[KILL_VICTIMS_LISTED];
        for (size_t i = 0; i < g->n_listed; i++)
                comms[i] = g->listed[i].comm;
        KillEvidence ev = { .marks = marks,
                            .n_marks = n_marks,
                            .victim_cgroup = victim_cgroup,
                            .comms = comms,
                            .n_comms = g->n_listed };
        ev.xattr_killer = killers_xattrs_grew(&w->xattrs, a->rt.sysroot, victim_cgroup, w->watch->path, ev.xattr_name,
                                              sizeof ev.xattr_name);
        kill_choose_killer(&ev, g->pids, g->n_pids, &killer);
        /* systemd-oomd told us before it killed this cgroup: the strongest mark there is. */
        bool announced = w->prekill && (g->total == 0 || !victim_cgroup ||
                                        cgpath_covers(cgpath_trim(w->prekill->cgroup), victim_cgroup));
        PrekillMeasure *pk = announced ? w->prekill : NULL;
        if (pk) {
                killer = (KillerChoice) { .killer = KILLER_SYSTEMD_OOMD, .basis = KILLMARK_BASIS_PREKILL };
                snprintf(killer.mark, sizeof killer.mark, "Notify %.240s", pk->cgroup);
        } else if (killer.killer == KILLER_UNKNOWN) {
                ev.running = running;
                ev.n_running = killers_running(a->rt.sysroot, running, ELEMENTSOF(running));
                kill_choose_killer(&ev, g->pids, g->n_pids, &killer);
        }
        /* No mark names the killer yet: one may come late (kill_mark_wait_us()). */
        usec_t wait = final ? 0 : kill_mark_wait_us(&killer, g->first_mono_us, now);
        if (wait > 0) {
                w->group = TAKE_PTR(g);
                ev_timer_set(&w->group_timer, (double) wait / USEC_PER_SEC, 0.);
                ev_timer_start(a->loop, &w->group_timer);
                safe_close(fd);
                return;
        }
        if (!rate_limit_admit(&a->rate, now)) { /* counted in the next incident's "suppressed" */
                a->counters.wakeups[WAKEUP_RATE_LIMIT]++;
                log_debug("a kill incident of %s is dropped: max_incidents_per_minute", w->watch->name);
                safe_close(fd);
                health_update(a);
                return;
        }

        size_t n_related = history_related(&a->history, w->watch->path, now, related, KILL_RELATED_MAX);
        for (size_t i = 0; i < g->n_listed; i++)
                if (g->listed[i].has_member && g->listed[i].member.has_cgroup)
                        (void) container_cache_lookup(a->rt.containers, g->listed[i].member.cgroup);
        container_cache_done(a->rt.containers);
        KillReport rep = {
                .group = g,
                .containers = a->rt.containers,
                .cgroup = w->watch->path,
                .killer = &killer,
                .has_memory_current = ms.has_current,
                .memory_current_kib = ms.current_bytes / 1024,
                .has_memory_max = ms.has_max,
                .memory_max_kib = ms.max_bytes / 1024,
                .has_swap_current = ms.has_swap_current,
                .swap_current_kib = ms.swap_current_bytes / 1024,
                .has_oom_kill = ms.has_oom_kill,
                .oom_kill = ms.oom_kill,
                .trigger_spec = w->trigger[0] ? w->trigger : NULL,
                .pressure_incident = w->incident[0] ? w->incident : NULL,
                .since_pressure_ms =
                        g->first_mono_us > w->incident_mono_us ? (g->first_mono_us - w->incident_mono_us) / 1000 : 0,
                .above_trigger = w->last_wakeup_us > w->incident_mono_us,
                .related = related,
                .n_related = n_related,
                .prekill = pk,
                .prekill_outcome = pk ? (g->total > 0 ? "killed" : "no_kill") : NULL,
                .kill_mono_us = g->first_mono_us,
        };

        /* The cgroup's pressure right after: a result of no task. */
        SampleScope scope = {
                .sysroot = a->rt.sysroot,
                .cgroup_fd = fd,
                .resource = PSI_RESOURCE_MEMORY,
        };
        Snapshot snap = {};
        SampleResult result;
        sample_result_unmeasured(&scope, &snap, &result);
        ReportEnd end = {
                .agent = a,
                .id = id,
                .id_size = sizeof id,
                .sinks = &w->watch->sink,
                .n_sinks = 1,
                .count = { .label = counters_watch_label(w->watch->cfg),
                           .type = COUNTERS_INCIDENT_KILL,
                           .resource = PSI_RESOURCE_MEMORY,
                           .has_killer = true,
                           .killer = killer.killer },
        };
        r = report_publish(&result,
                           &(IncidentContext) {
                                   .type = "kill",
                                   .id = id,
                                   .host = &a->rt.host,
                                   .delayacct = runtime_delayacct(&a->rt),
                                   .kill = &rep,
                           },
                           &end);
        safe_close(fd);
        if (pk)
                w->prekill = prekill_measure_free(w->prekill);
        if (r < 0) {
                log_error_errno(r, "cannot build the kill incident of %s", w->watch->name);
                return;
        }
        log_info("%llu process%s of %s killed under pressure by %s (%s): incident %s", (unsigned long long) g->total,
                 g->total == 1 ? "" : "es", w->watch->name,
                 killer.killer == KILLER_UNKNOWN ? "an unknown killer" : killer_kind_to_string(killer.killer),
                 killer.killer == KILLER_UNKNOWN ? "no mark" : killmark_basis_to_string(killer.basis), id);
}

static void on_group_timer(struct ev_loop *loop, ev_timer *t, int revents) {
        window_write_group(ASSERT_PTR(t->data), false);
}

/* ---- exits --------------------------------------------------------------------------------- */

static void on_exit_record(const TaskStats *thread, const TaskStats *process, void *userdata) {
        AgentKills *k = userdata;
        Agent *a = k->a;
        int sig = kill_exit_signal(thread);
        pid_t tgid = thread->tgid > 0 ? thread->tgid : thread->pid;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (!sig || kernel_victims_has(&k->kernel, tgid, now))
                return;
        for (size_t i = 0; i < k->n; i++) {
                KillWindow *w = k->windows[i];
                const KillMember *m = kill_members_find(&w->members, tgid);
                KillVictim v = { .pid = tgid, .signal = sig, .uid = thread->uid };
                const TaskStats *d = process ? process : thread;

                if (!m && (w->watch->path || w->prekill))
                        continue;
                memcpy(v.comm, thread->comm, sizeof v.comm);
                if (m) {
                        v.member = *m;
                        v.has_member = true;
                }
                if (m && m->has_rss) {
                        v.rss_kib = m->rss_kib;
                        v.has_rss = true;
                        v.rss_source = "status";
                } else if (thread->has_hiwater_rss) {
                        v.rss_kib = thread->hiwater_rss_kib;
                        v.has_rss = true;
                        v.rss_source = "peak";
                }
                memcpy(v.delay_ns, d->delay_ns, sizeof v.delay_ns);
                v.present = d->present;
                if (!w->group) {
                        w->group = calloc(1, sizeof *w->group);
                        if (!w->group) {
                                log_error("out of memory: a kill in %s is not reported", w->watch->name);
                                continue;
                        }
                        w->group->first_mono_us = now;
                        ev_timer_set(&w->group_timer, (double) KILL_GROUP_DELAY_US / USEC_PER_SEC, 0.);
                        ev_timer_start(a->loop, &w->group_timer);
                }
                (void) kill_group_add(w->group, &v);
        }
}

static void on_listener(struct ev_loop *loop, ev_io *io, int revents) {
        AgentKills *k = ASSERT_PTR(io->data);
        unsigned lost = 0;
        int r = taskstats_exit_listener_drain(k->listener, on_exit_record, k, &lost);

        if (lost > 0) {
                k->lost += lost;
                k->a->counters.exit_records_lost += lost;
                health_update(k->a);
        }
        if (r < 0 && r != -EAGAIN)
                log_debug_errno(r, "reading exit records for kill incidents");
}

/* ---- windows ------------------------------------------------------------------------------- */

static void listener_close(AgentKills *k) {
        if (k->listener) {
                ev_io_stop(k->a->loop, &k->listener_io);
                k->listener = taskstats_exit_listener_free(k->listener);
        }
        ev_timer_stop(k->a->loop, &k->tick);
        killers_logs_close(&k->logs);
}

static int listener_open(AgentKills *k) {
        int r;

        if (k->listener)
                return 0;
        r = taskstats_exit_listener_new(runtime_exit_cpus(&k->a->rt), &k->listener);
        if (r < 0)
                return r;
        ev_io_init(&k->listener_io, on_listener, taskstats_exit_listener_fd(k->listener), EV_READ);
        k->listener_io.data = k;
        ev_io_start(k->a->loop, &k->listener_io);
        ev_timer_set(&k->tick, KILL_TICK_S, KILL_TICK_S);
        ev_timer_start(k->a->loop, &k->tick);
        killers_logs_open(&k->logs, k->a->config);
        return 0;
}

static void window_free(AgentKills *k, size_t i) {
        KillWindow *w = k->windows[i];

        window_write_group(w, true);
        prekill_measure_free(w->prekill);
        kill_members_done(&w->members);
        free(w);
        k->windows[i] = k->windows[--k->n];
        if (k->n == 0)
                listener_close(k);
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents) {
        AgentKills *k = ASSERT_PTR(t->data);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        killers_logs_drain(&k->logs, mark_push, k);
        for (size_t i = k->n; i-- > 0;) {
                KillWindow *w = k->windows[i];
                if (w->prekill && !w->group && now > w->prekill_until_us) {
                        /* Announced, and no kill came: systemd-oomd changed its mind (its
                         * cgroup calmed down) or the kill found nothing. A line says so. */
                        w->group = calloc(1, sizeof *w->group);
                        if (w->group) {
                                w->group->first_mono_us = now;
                                window_write_group(w, true);
                        } else
                                w->prekill = prekill_measure_free(w->prekill);
                }
                if (now > w->until_us && !w->group && !w->prekill)
                        window_free(k, i);
                else if (!w->group)
                        members_refresh(w);
        }
}

static KillWindow *window_find(AgentKills *k, const Watch *w) {
        for (size_t i = 0; k && i < k->n; i++)
                if (k->windows[i]->watch == w)
                        return k->windows[i];
        return NULL;
}

/* watch's window, opened when it has none (the exit listener with it). NULL when it cannot be. */
static KillWindow *window_open(AgentKills *k, Watch *watch) {
        Agent *a = k->a;
        KillWindow *w = window_find(k, watch);
        int r;

        if (!w) {
                KillWindow **p = realloc(k->windows, (k->n + 1) * sizeof *p);
                if (!p)
                        return NULL;
                k->windows = p;
                r = listener_open(k);
                if (r < 0) {
                        log_debug_errno(r, "no exit listener: processes killed in %s are not reported", watch->name);
                        return NULL;
                }
                w = calloc(1, sizeof *w);
                if (!w) {
                        if (k->n == 0)
                                listener_close(k);
                        return NULL;
                }
                w->k = k;
                w->watch = watch;
                ev_timer_init(&w->group_timer, on_group_timer, 0., 0.);
                w->group_timer.data = w;
                k->windows[k->n++] = w;
                log_debug("kill window of %s open for %u s", watch->name, a->config->kill_window_s);
        }
        return w;
}

/* A pressure incident of watch: a kill window opens, or a later incident renews it. */
static void on_pressure_incident(Watch *watch, const Trigger *t, const char *id, void *userdata) {
        AgentKills *k = userdata;
        Agent *a = k->a;
        KillWindow *w;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        /* Userspace OOM killers act on memory: a signal after cpu or io pressure is far more often
         * a stop than a kill, and is not reported. */
        if (a->config->kill_window_s == 0 || t->effective.resource != PSI_RESOURCE_MEMORY)
                return;
        w = window_open(k, watch);
        if (!w)
                return;
        snprintf(w->trigger, sizeof w->trigger, "%s", t->cfg->text);
        snprintf(w->incident, sizeof w->incident, "%s", id);
        w->incident_mono_us = now;
        w->until_us = now + (usec_t) a->config->kill_window_s * USEC_PER_SEC;
        if (!w->group)
                members_refresh(w);
}

/* Still under pressure: the window goes on. */
static void on_wakeup(Watch *watch, const Trigger *t, WakeupVerdict verdict, void *userdata) {
        AgentKills *k = userdata;
        Agent *a = k->a;
        KillWindow *w = window_find(k, watch);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (!w)
                return;
        w->last_wakeup_us = now;
        w->until_us = MAX(w->until_us, now + (usec_t) a->config->kill_window_s * USEC_PER_SEC);
        if (!w->group)
                members_refresh(w);
}

static void on_watch_removed(Watch *watch, void *userdata) {
        AgentKills *k = userdata;

        for (size_t i = 0; i < k->n; i++)
                if (k->windows[i]->watch == watch) {
                        window_free(k, i);
                        return;
                }
}

void kills_prekill(Agent *a, PrekillMeasure *m) {
        Watch *best = NULL;

        /* The deepest watch over the cgroup: a path beats node-wide, a longer path a shorter one. */
        for (size_t i = 0; a->kills && i < a->n_watches; i++) {
                Watch *x = a->watches[i];
                if (cgpath_covers(x->path, cgpath_trim(m->cgroup)) &&
                    (!best || (x->path && (!best->path || strlen(x->path) > strlen(best->path)))))
                        best = x;
        }
        KillWindow *w = best ? window_open(a->kills, best) : NULL;
        if (!w) {
                log_info("no watch covers %s: what was measured before its kill is not reported", m->cgroup);
                prekill_measure_free(m);
                return;
        }
        /* A second announcement of the cgroup before its kill: the newer measure stands. */
        prekill_measure_free(w->prekill);
        w->prekill = m;
        w->prekill_until_us = now_usec(CLOCK_MONOTONIC) + (usec_t) a->config->prekill_wait_s * USEC_PER_SEC;
        w->until_us = MAX(w->until_us, w->prekill_until_us);
        if (!w->group)
                members_refresh(w);
}

void kills_kmsg_message(Agent *a, const char *msg, size_t len) {
        KillMark m;

        if (a->kills && killmarks_parse_oomd_kmsg(msg, len, &m) == 0)
                mark_push(&m, a->kills);
}

void kills_kernel_victim(Agent *a, pid_t pid) {
        if (a->kills)
                kernel_victims_add(&a->kills->kernel, pid, now_usec(CLOCK_MONOTONIC));
}

int kills_start(Agent *a) {
        AgentKills *k = calloc(1, sizeof *k);
        int r;

        if (!k)
                return -ENOMEM;
        k->a = a;
        ev_timer_init(&k->tick, on_tick, KILL_TICK_S, KILL_TICK_S);
        k->tick.data = k;
        r = core_hooks_add(a, &(WatchHooks) { .userdata = k,
                                              .removed = on_watch_removed,
                                              .wakeup = on_wakeup,
                                              .incident = on_pressure_incident });
        if (r < 0) {
                free(k);
                return r;
        }
        a->kills = k;
        return 0;
}

void kills_stop(Agent *a) {
        AgentKills *k = a->kills;

        if (!k)
                return;
        core_hooks_remove(a, k);
        while (k->n > 0)
                window_free(k, k->n - 1);
        listener_close(k);
        free(k->windows);
        free(k);
        a->kills = NULL;
}
