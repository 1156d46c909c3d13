/* SPDX-License-Identifier: MIT */
/* The loop side of kill incidents (windows, exit listener, members, kill logs, grouping timer);
 * every decision is kills/kills.h's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "agent/killers.h"
#include "agent/killwindow.h"
#include "agent/killwatch.h"
#include "base/cgpath.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/testhold.h"
#include "base/text.h"
#include "probes/memcg.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "probes/tasks.h"
#include "kills/kills.h"
#include "kills/prekill.h"

/* ---- members ------------------------------------------------------------------------------- */

static void listener_drain(AgentKills *k, size_t max);
static void listener_size(AgentKills *k);

/* Lists the watch's processes (its subtree), then takes the exit records waiting, then keeps the
 * new listing. */
static void members_refresh(KillWindow *w) {
        Agent *a = w->k->a;
        int fd = -EBADF;
        TidList l = {};
        KillMembers fresh = {};
        MemcgState ms;
        bool listed = true;

        /* Node-wide: every process is a member, known by its exit record alone (listing and reading
         * every process each second would cost more than it tells); while a kill systemd-oomd
         * announced is awaited, the members are its cgroup's processes, and only they. */
        const char *pk = !w->watch->path && w->announced[0] ? cgpath_trim(w->announced) : NULL;
        bool all = !w->watch->path && !pk;
        if (!all && (pk ? sysroot_open_cgroup(a->rt.sysroot, pk, &fd) : core_watch_open_cgroup(w->watch, &fd)) >= 0) {
                (void) cgroup_list_processes(fd, &l);
                killwindow_read_memory(a, w->watch, fd, &ms);
                if (ms.has_oom_kill && !w->group) {
                        w->oom_kill_base = ms.oom_kill;
                        w->has_oom_kill_base = true;
                }
                safe_close(fd);
                listed = killwindow_read_members(w, &l, &fresh);
                tid_list_done(&l);
        }
        /* A process gone from the listing had its exit record queued before it left its cgroup
         * (do_exit(): taskstats_exit() before cgroup_exit()), and one listed now may have ended
         * since: the records waiting are judged against both listings, the old one with the rule
         * it was kept under (kill_members_judge()). Without this, a refresh that ran between a kill
         * and the read of its records (libev runs a due timer before the socket's watcher of the
         * same iteration) lost its victims. */
        w->fresh = &fresh;
        listener_drain(w->k, 0);
        w->fresh = NULL;
        w->all = all;
        if (w->resync && listed)
                killwindow_unheard(w, &fresh);
        w->resync = false;
        if (w->group) {
                /* A kill found there keeps these members, as a kill does, and gains the newborn. */
                if (kill_members_merge(&w->members, &fresh) < 0)
                        log_debug("out of memory: the processes %s started since the last listing are not kept",
                                  w->watch->name);
                kill_members_done(&fresh);
                return;
        }
        killers_xattrs_note(&w->xattrs, a->rt.sysroot, w->watch->path);
        for (size_t i = 0; i < fresh.n; i++)
                if (fresh.items[i].has_cgroup)
                        killers_xattrs_note(&w->xattrs, a->rt.sysroot, fresh.items[i].cgroup);
        /* Out of memory for the listing: the last refresh's members stay. */
        if (listed) {
                kill_members_done(&w->members);
                w->members = fresh;
        }
}

static void on_group_timer(struct ev_loop *loop, ev_timer *t, int revents) {
        killwindow_write(ASSERT_PTR(t->data), false);
}

/* ---- exits --------------------------------------------------------------------------------- */

static void on_exit_record(const TaskStats *thread, const TaskStats *process, void *userdata) {
        AgentKills *k = userdata;
        int sig = kill_exit_signal(thread);
        pid_t tgid = thread->tgid > 0 ? thread->tgid : thread->pid;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        /* Whatever its end: a member whose record came did not end unheard (killwindow_unheard()). */
        for (size_t i = 0; i < k->n; i++) {
                kill_members_mark_heard(&k->windows[i]->members, tgid);
                if (k->windows[i]->fresh)
                        kill_members_mark_heard(k->windows[i]->fresh, tgid);
        }
        if (!sig || kernel_victims_has(&k->kernel, tgid, now))
                return;
        /* Rare (a kill), and what tells a kill unseen from one unreported: each said. */
        char comm[sizeof thread->comm];
        log_debug("exit record: %s (pid %d) ended by signal %d", text_terminal_safe(thread->comm, comm, sizeof comm),
                  (int) tgid, sig);
        for (size_t i = 0; i < k->n; i++) {
                KillWindow *w = k->windows[i];
                KillMember placed;
                const KillMember *m = kill_members_judge(&w->members, w->fresh, tgid, thread->ppid, &placed);
                KillVictim v = { .pid = tgid, .signal = sig, .uid = thread->uid };
                const TaskStats *d = process ? process : thread;

                if (!m && !w->all) {
                        log_debug("exit record of pid %d: not one of the %zu processes of %s's kill window", (int) tgid,
                                  w->members.n + (w->fresh ? w->fresh->n : 0), w->watch->name);
                        continue;
                }
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
                killwindow_add_victim(w, &v, now);
        }
}

/* The kernel dropped lost records (the socket was full): counted, said (once a minute), and every
 * window listed again from the loop (members_refresh() reports its members gone unheard). */
static void listener_lost(AgentKills *k, unsigned lost) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        k->lost += lost;
        k->a->counters.exit_records_lost += lost;
        health_update(k->a);
        if (log_ratelimit_pass(&k->lost_warned, now))
                log_warning("the kernel dropped %u exit records (the exit listener's buffer of %zu bytes was full): "
                            "listing %zu kill windows again, their processes gone unheard reported",
                            lost, k->rcvbuf_bytes, k->n);
        for (size_t i = 0; i < k->n; i++) {
                k->windows[i]->lost += lost;
                k->windows[i]->resync = true;
        }
        ev_timer_set(&k->resync, 0., 0.);
        ev_timer_start(k->a->loop, &k->resync);
        listener_size(k); /* a bigger node than at the opening: room for it from now */
}

static void on_resync(struct ev_loop *loop, ev_timer *t, int revents) {
        AgentKills *k = ASSERT_PTR(t->data);

        for (size_t i = 0; i < k->n; i++)
                if (k->windows[i]->resync)
                        members_refresh(k->windows[i]);
}

/* The exit records waiting, taken: at most max messages (0: all, at most the buffer's). */
static void listener_drain(AgentKills *k, size_t max) {
        unsigned lost = 0;
        int r;

        if (!k->listener)
                return;
        r = taskstats_exit_listener_drain(k->listener, max, on_exit_record, k, &lost);
        if (lost > 0)
                listener_lost(k, lost);
        if (r < 0 && r != -EAGAIN)
                log_debug_errno(r, "reading exit records for kill incidents");
}

/* Bounded per loop iteration: an exit storm does not hold triggers and samples back (libev calls
 * again while the socket is readable). */
static void on_listener(struct ev_loop *loop, ev_io *io, int revents) {
        listener_drain(ASSERT_PTR(io->data), KILL_DRAIN_MAX);
}

/* ---- windows ------------------------------------------------------------------------------- */

static void listener_close(AgentKills *k) {
        if (k->listener) {
                ev_io_stop(k->a->loop, &k->listener_io);
                k->listener = taskstats_exit_listener_free(k->listener);
        }
        k->rcvbuf_want = 0;
        ev_timer_stop(k->a->loop, &k->tick);
        ev_timer_stop(k->a->loop, &k->resync);
        if (k->logs_open)
                killers_logs_close(&k->logs);
        k->logs_open = false;
}

/* Room for every thread of the node to end at once while the loop is busy (a mass kill of a large
 * service, an unrelated exit storm), within 64 MiB; only what waits unread is charged. Asked when
 * the listener opens, then again each tick and after a loss while a window is open: the buffer
 * grows with the node's threads (a service started since), never shrinks until it closes. */
static void listener_size(AgentKills *k) {
        Runtime *rt = &k->a->rt;
        uint64_t threads = 0;
        size_t want, before = k->rcvbuf_bytes;
        int r;

        if (!k->listener)
                return;
        (void) system_read_threads(rt->sysroot->proc_fd, &threads);
        want = taskstats_exit_rcvbuf_bytes(threads, system_cpulist_count(runtime_exit_cpus(rt)), rt->taskstats_version);
        if (want <= k->rcvbuf_want)
                return;
        r = taskstats_exit_listener_set_rcvbuf(k->listener, want, &k->rcvbuf_bytes);
        if (r < 0) {
                log_debug_errno(r, "cannot size the exit listener's buffer to %zu bytes", want);
                return;
        }
        if (k->rcvbuf_want > 0)
                /* What the tests wait for: the room a storm now has. */
                log_debug("exit listener's buffer grown from %zu to %zu bytes (%zu exit records) for %" PRIu64
                          " threads on the node",
                          before, k->rcvbuf_bytes, k->rcvbuf_bytes / taskstats_exit_record_bytes(rt->taskstats_version),
                          threads);
        k->rcvbuf_want = want;
}

/* Registered for exit records: from here on a kill is heard (its record waits in the socket). */
static int listener_open(AgentKills *k) {
        int r;

        if (k->listener)
                return 0;
        r = taskstats_exit_listener_new(runtime_exit_cpus(&k->a->rt), &k->listener);
        if (r < 0)
                return r;
        listener_size(k);
        ev_io_init(&k->listener_io, on_listener, taskstats_exit_listener_fd(k->listener), EV_READ);
        k->listener_io.data = k;
        ev_io_start(k->a->loop, &k->listener_io);
        ev_timer_set(&k->tick, KILL_TICK_S, KILL_TICK_S);
        ev_timer_start(k->a->loop, &k->tick);
        return 0;
}

/* The killers' logs (a journal opened through dlopen(), files): slow, so opened only once the
 * window's members are listed, when a kill meanwhile is a member's whose record waits. */
static void logs_open(AgentKills *k) {
        if (k->logs_open || !k->listener)
                return;
        test_hold("kill-logs-open");
        killers_logs_open(&k->logs, k->a->config);
        k->logs_open = true;
}

static void window_free(AgentKills *k, size_t i) {
        KillWindow *w = k->windows[i];

        killwindow_write(w, true);
        prekill_measure_free(w->prekill);
        kill_members_done(&w->members);
        free(w);
        k->windows[i] = k->windows[--k->n];
        if (k->n == 0)
                listener_close(k);
}

/* The kill systemd-oomd announced to w, written now: the group in flight if its victims came, else
 * a line of none (no_kill). Without memory for that line, the announcement is dropped. */
static void window_write_announced(KillWindow *w, usec_t now) {
        if (!w->group) {
                w->group = calloc(1, sizeof *w->group);
                if (!w->group) {
                        w->prekill = prekill_measure_free(w->prekill);
                        w->announced[0] = '\0';
                        return;
                }
                w->group->first_mono_us = now;
        }
        killwindow_write(w, true);
}

static void on_tick(struct ev_loop *loop, ev_timer *t, int revents) {
        AgentKills *k = ASSERT_PTR(t->data);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (k->logs_open)
                killers_logs_drain(&k->logs, killwindow_mark_push, k);
        listener_size(k);
        for (size_t i = k->n; i-- > 0;) {
                KillWindow *w = k->windows[i];
                /* Announced, and no kill came: systemd-oomd changed its mind (its cgroup calmed
                 * down) or the kill found nothing. A line says so; but first the exit records
                 * waiting unread (libev runs a due timer before the socket's watcher), whose kill
                 * would then be written by its group's timer. An announcement whose measure never
                 * came is forgotten. */
                if (w->announced[0] && !w->group && now > w->prekill_until_us) {
                        listener_drain(k, 0);
                        if (!w->group && w->prekill)
                                window_write_announced(w, now);
                        else if (!w->group)
                                w->announced[0] = '\0';
                }
                if (now > w->until_us && !w->group && !w->announced[0])
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

/* watch's window, opened when it has none (the exit listener with it): registered, then its
 * members listed (announced: the cgroup of a kill systemd-oomd announced, whose processes a
 * node-wide window's members are), then the killers' logs opened. NULL when it cannot be. */
static KillWindow *window_open(AgentKills *k, Watch *watch, const char *announced) {
        Agent *a = k->a;
        KillWindow *w = window_find(k, watch);
        int r;

        if (w)
                return w;
        KillWindow **p = realloc(k->windows, (k->n + 1) * sizeof *p);
        if (!p)
                return NULL;
        k->windows = p;
        w = calloc(1, sizeof *w);
        if (!w)
                return NULL;
        r = listener_open(k);
        if (r < 0) {
                log_debug_errno(r, "no exit listener: processes killed in %s are not reported", watch->name);
                free(w);
                return NULL;
        }
        w->k = k;
        w->watch = watch;
        if (announced)
                snprintf(w->announced, sizeof w->announced, "%s", announced);
        w->all = !watch->path && !announced;
        w->until_us = now_usec(CLOCK_MONOTONIC) + (usec_t) a->config->kill_window_s * USEC_PER_SEC;
        ev_timer_init(&w->group_timer, on_group_timer, 0., 0.);
        w->group_timer.data = w;
        k->windows[k->n++] = w;
        members_refresh(w);
        /* What the tests wait for: from here a kill of a listed process is reported. */
        log_debug("kill window of %s open for %u s: %zu processes listed, exit records buffered up to %zu (%zu bytes)",
                  watch->name, a->config->kill_window_s, w->members.n,
                  k->rcvbuf_bytes / taskstats_exit_record_bytes(a->rt.taskstats_version), k->rcvbuf_bytes);
        logs_open(k);
        return w;
}

/* A memory wakeup to be sampled: its window opens now, before the sample (a kill window opens for
 * the incident the sample will write), so that a kill from the first wakeup on is heard. */
static void window_open_at_wakeup(AgentKills *k, Watch *watch, const Trigger *t) {
        KillWindow *w = window_open(k, watch, NULL);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (!w)
                return;
        if (!w->trigger[0])
                snprintf(w->trigger, sizeof w->trigger, "%s", t->cfg->text);
        if (!w->incident_mono_us)
                w->incident_mono_us = now;
}

/* A pressure incident of watch: its window (opened at the wakeup, or now) takes its id, or a
 * later incident renews it. */
static void on_pressure_incident(Watch *watch, const Trigger *t, const char *id, void *userdata) {
        AgentKills *k = userdata;
        Agent *a = k->a;
        KillWindow *w;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        /* Userspace OOM killers act on memory: a signal after cpu or io pressure is far more often
         * a stop than a kill, and is not reported. */
        if (a->config->kill_window_s == 0 || t->effective.resource != PSI_RESOURCE_MEMORY)
                return;
        test_hold("kill-incident");
        w = window_open(k, watch, NULL);
        if (!w)
                return;
        snprintf(w->trigger, sizeof w->trigger, "%s", t->cfg->text);
        snprintf(w->incident, sizeof w->incident, "%s", id);
        /* A kill already in flight came after this incident's wakeup (the window's opening). */
        if (!w->group)
                w->incident_mono_us = now;
        w->until_us = MAX(w->until_us, now + (usec_t) a->config->kill_window_s * USEC_PER_SEC);
        if (!w->group)
                members_refresh(w);
}

/* Still under pressure: the window goes on; a memory wakeup that will be sampled opens it. */
static void on_wakeup(Watch *watch, const Trigger *t, WakeupVerdict verdict, void *userdata) {
        AgentKills *k = userdata;
        Agent *a = k->a;
        KillWindow *w = window_find(k, watch);
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (!w && verdict == WAKEUP_SAMPLE && a->config->kill_window_s > 0 &&
            t->effective.resource == PSI_RESOURCE_MEMORY) {
                window_open_at_wakeup(k, watch, t);
                return;
        }
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

/* The deepest watch over cgroup: a path beats node-wide, a longer path a shorter one. */
static Watch *prekill_watch(Agent *a, const char *cgroup) {
        Watch *best = NULL;

        for (size_t i = 0; a->kills && i < a->n_watches; i++) {
                Watch *x = a->watches[i];
                if (cgpath_covers(x->path, cgpath_trim(cgroup)) &&
                    (!best || (x->path && (!best->path || strlen(x->path) > strlen(best->path)))))
                        best = x;
        }
        return best;
}

/* w awaits the kill of cgroup for prekill_wait_s. An announcement of another cgroup while one
 * waits (systemd-oomd 262 named a slice 15 s after killing its unit): the one waiting gets its
 * line first, its kill if its exit records are there (queued before its victims left their
 * cgroup), else no_kill, as when prekill_wait_s ends. The records waiting are taken before the
 * members change: a node-wide window took every kill until now. */
static void window_announce(KillWindow *w, const char *cgroup) {
        Agent *a = w->k->a;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        listener_drain(w->k, 0);
        if (w->prekill && strcmp(cgpath_trim(w->prekill->cgroup), cgpath_trim(cgroup)) != 0)
                window_write_announced(w, now);
        snprintf(w->announced, sizeof w->announced, "%s", cgroup);
        w->prekill_until_us = now + (usec_t) a->config->prekill_wait_s * USEC_PER_SEC;
        w->until_us = MAX(w->until_us, w->prekill_until_us);
        if (!w->group)
                members_refresh(w);
}

void kills_prekill_listen(Agent *a, const char *cgroup) {
        Watch *best = prekill_watch(a, cgroup);
        KillWindow *w = best ? window_find(a->kills, best) : NULL;

        if (!best)
                return;
        if (w)
                window_announce(w, cgroup);
        else if ((w = window_open(a->kills, best, cgroup)))
                window_announce(w, cgroup);
}

void kills_prekill(Agent *a, PrekillMeasure *m) {
        Watch *best = prekill_watch(a, m->cgroup);
        KillWindow *w = best ? window_open(a->kills, best, m->cgroup) : NULL;

        if (!w) {
                log_info("no watch covers %s: what was measured before its kill is not reported", m->cgroup);
                prekill_measure_free(m);
                return;
        }
        window_announce(w, m->cgroup);
        /* A second announcement of the same cgroup: the newer measure stands. */
        prekill_measure_free(w->prekill);
        w->prekill = m;
}

void kills_kmsg_message(Agent *a, const char *msg, size_t len) {
        KillMark m;

        if (a->kills && killmarks_parse_oomd_kmsg(msg, len, &m) == 0)
                killwindow_mark_push(&m, a->kills);
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
        ev_timer_init(&k->resync, on_resync, 0., 0.);
        k->resync.data = k;
        k->lost_warned = (LogRateLimit) { .interval_us = 60 * USEC_PER_SEC };
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
