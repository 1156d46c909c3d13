/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/sampler.h"
#include "sampling/recorder.h"

static void on_timer(struct ev_loop *loop, ev_timer *timer, int revents);
static void on_middle(struct ev_loop *loop, ev_timer *timer, int revents);

void sampler_init(Sampler *s, struct ev_loop *loop, const char *exit_cpus, SamplerDone done, void *userdata) {
        *s = (Sampler) { .loop = loop, .exit_cpus = exit_cpus, .done = done, .userdata = userdata };
        ev_timer_init(&s->timer, on_timer, 0., 0.);
        s->timer.data = s;
        ev_timer_init(&s->middle, on_middle, 0., 0.);
        s->middle.data = s;
}

/* Candidates whose threads are measured: twice the processes an incident details, so a process
 * that overtakes another in the second half still has its threads. */
static size_t candidates_max(const SampleScope *scope) {
        return (size_t) MAX(scope->detail, 1u) * 2;
}

/* Room for the leaders and for the processes with a thread in D beside them, at the start and at
 * the middle. */
static size_t candidates_cap(const SampleScope *scope) {
        return candidates_max(scope) + 2 * TASK_STATE_BLOCKED_MAX;
}

int sampler_preallocate(Sampler *s, const SampleScope *scope, size_t *ret_n) {
        TidList *l = &s->a.tids, *p = &s->a.pids;
        size_t n, np;
        int r;

        tid_list_clear(l);
        tid_list_clear(p);
        r = scope->cgroup_fd >= 0 ? cgroup_list_threads(scope->cgroup_fd, l)
                                  : proc_list_threads(scope->sysroot->proc_fd, l);
        n = MAX(r >= 0 ? l->n : 0, (size_t) 16);
        r = scope->cgroup_fd >= 0 ? cgroup_list_processes(scope->cgroup_fd, p)
                                  : proc_list_processes(scope->sysroot->proc_fd, p);
        np = MAX(r >= 0 ? p->n : 0, (size_t) 16);
        tid_list_clear(l);
        tid_list_clear(p);
        *ret_n = n;
        if (snapshot_reserve(&s->a, n, np) < 0 || snapshot_reserve(&s->m, 0, np) < 0 ||
            snapshot_reserve(&s->b, n, np) < 0 || ranking_reserve(&s->ranking, n, np) < 0 ||
            array_reserve((void **) &s->candidates, &s->cap_candidates, candidates_cap(scope), sizeof *s->candidates) <
                    0)
                return -ENOMEM;
        return 0;
}

static void add_candidates(Sampler *s, const TaskStateBlocked *b) {
        for (size_t i = 0; i < b->n; i++) {
                size_t j = 0;

                while (j < s->n_candidates && s->candidates[j] != b->pids[i])
                        j++;
                if (j == s->n_candidates)
                        s->candidates[s->n_candidates++] = b->pids[i];
        }
}

/* The first n leaders of the ranking, then the processes blocked (a thread in D) when the start
 * was read and, with m, when the middle was, that are not among them: a process stuck in a wait
 * that has not ended leads nothing, and its threads are looked at all the same (kernel-facts.md:
 * delayacct). */
static int set_candidates(Sampler *s, size_t n, const Snapshot *m) {
        int r = array_reserve((void **) &s->candidates, &s->cap_candidates, n + 2 * TASK_STATE_BLOCKED_MAX,
                              sizeof *s->candidates);

        if (r < 0)
                return r;
        s->n_candidates = ranking_top_pids(&s->ranking, n, s->candidates);
        add_candidates(s, &s->a.blocked);
        if (m && m->has_states)
                add_candidates(s, &m->blocked);
        return 0;
}

int culprit_scope_open(const LimitsHierarchy *h, const char *stalled, PsiResource res, CulpritScope *ret) {
        static const CgroupV1Controller v1[_PSI_RESOURCE_MAX] = {
                [PSI_RESOURCE_CPU] = CGROUP_V1_CPUACCT,
                [PSI_RESOURCE_MEMORY] = CGROUP_V1_MEMORY,
                [PSI_RESOURCE_IO] = CGROUP_V1_BLKIO,
        };
        CulpritScope c = { .resource = res, .node = true, .cgroup_fd = -EBADF, .v1_fd = -EBADF };
        const Sysroot *sys = h->sysroot;
        const char *rel = stalled;
        LimitsLocation loc;
        size_t len;
        int r;

        if (res != PSI_RESOURCE_CPU && res != PSI_RESOURCE_MEMORY && res != PSI_RESOURCE_IO)
                return -EOPNOTSUPP;
        while (rel && *rel == '/')
                rel++;
        if (rel && *rel) {
                if (strlen(rel) >= sizeof c.path)
                        return -ENAMETOOLONG;
                /* The nearest limit of the resource, the stalled cgroup's own included: a
                 * container without a cpu.max of its own is throttled in its pod's. Gone, or on v1
                 * no process to tell where it is (-ESRCH): the node. */
                r = limits_locate(h, rel, res, &loc);
                if (r < 0 && !cgroup_is_gone(r) && r != -ESRCH)
                        return r;
                if (r >= 0 && limits_location_scope(&loc, rel, &len) >= 0) {
                        c.node = false;
                        memcpy(c.path, rel, len);
                        c.path[len] = '\0';
                        c.limit = loc.limit;
                        c.limit_source = loc.source;
                        memcpy(c.limit_path, loc.limited_path, sizeof c.limit_path);
                        /* cpu, io: throttled by its own limit, not starved by a neighbour. */
                        c.own_limit = res != PSI_RESOURCE_MEMORY && strcmp(c.path, rel) == 0;
                }
        }
        /* The sample itself covers the node only for a node-wide trigger (a watch of "/" lists
         * the cgroup tree, the node pass lists /proc). */
        c.same = c.node ? stalled == NULL : strcmp(c.path, rel) == 0;
        if (c.node)
                c.cgroup_fd = sys->cgroup2_fd >= 0 ? fcntl(sys->cgroup2_fd, F_DUPFD_CLOEXEC, 3) : -EBADF;
        else if (sysroot_open_cgroup(sys, c.path, &c.cgroup_fd) < 0)
                return -ENOENT; /* never the node's processes under a cgroup's name */
        if (sysroot_open_v1(sys, v1[res], c.path, &c.v1_fd) < 0)
                c.v1_fd = -EBADF;
        *ret = c;
        return 0;
}

void culprit_scope_close(CulpritScope *c) {
        c->cgroup_fd = safe_close(c->cgroup_fd);
        c->v1_fd = safe_close(c->v1_fd);
}

static void culprits_take(Sampler *s, Snapshot *snap, const Snapshot *sample, CgroupUsages *g, bool *has_snap,
                          bool *has_g) {
        culprit_pass_take(&s->scope, snap, sample, g, has_snap, has_g);
}

void culprit_pass_done(CulpritPass *p) {
        snapshot_done(&p->ca);
        snapshot_done(&p->cb);
        cgroup_usages_done(&p->ga);
        cgroup_usages_done(&p->gb);
}

/* The pass's start, with snapshot A just taken (a shared pass: by the first sample to start). */
static void pass_take_start(Sampler *s) {
        CulpritPass *p = s->pass;

        p->started = true;
        p->ended = false;
        p->has_cb = p->has_gb = false;
        /* The sample's own times: its incident's culprits.window is then its sample's. */
        p->start_real_us = s->a.real_us;
        p->start_mono_us = s->a.mono_us;
        culprits_take(s, &p->ca, &s->a, &p->ga, &p->has_ca, &p->has_ga);
}

/* The pass's end, with snapshot B just taken (a shared pass: by the first sample to finish; the
 * exit records are that sample's). */
static void pass_take_end(Sampler *s, bool listened) {
        CulpritPass *p = s->pass;

        p->ended = true;
        p->end_mono_us = s->b.mono_us;
        culprits_take(s, &p->cb, &s->b, &p->gb, &p->has_cb, &p->has_gb);
        if (p->has_ca && p->has_cb) {
                if (snapshot_merge_exits(&p->cb, &p->ca, NULL, listened ? &s->exits : NULL) < 0)
                        s->partial = true;
                snapshot_mark_born(&p->cb, &p->ca, s->scope.sysroot->proc_fd);
        }
}

static void build_culprits(Sampler *s, bool lifetime) {
        static const Snapshot empty;
        const CulpritScope *c = s->scope.culprit;
        const CulpritPass *p = s->pass;
        const Snapshot *a, *b;
        size_t n;

        s->has_culprits = false;
        if (!c)
                return;
        if (c->same) {
                a = lifetime ? NULL : &s->a;
                b = lifetime ? &s->a : &s->b;
        } else if (lifetime) {
                a = NULL;
                b = p->has_ca ? &p->ca : &empty;
        } else {
                a = p->has_ca && p->has_cb ? &p->ca : NULL;
                b = a ? &p->cb : &empty;
        }
        n = MIN((size_t) MAX(s->scope.detail, 1u), s->ranking.n_procs);
        if (array_reserve((void **) &s->victims, &s->cap_victims, n, sizeof *s->victims) < 0) {
                s->partial = true;
                return;
        }
        n = ranking_top_pids(&s->ranking, n, s->victims);
        CulpritsInput in = {
                .resource = c->resource,
                .a = a,
                .b = b,
                .ga = !lifetime && p->has_ga && p->has_gb ? &p->ga : NULL,
                .gb = lifetime ? (p->has_ga ? &p->ga : NULL) : (p->has_ga && p->has_gb ? &p->gb : NULL),
                .scope_is_node = c->node,
                .victims = s->victims,
                .n_victims = n,
                .top = MAX(s->scope.detail, 1u),
                .comm_of = proc_read_comm,
                .comm_fd = s->scope.sysroot->proc_fd,
        };
        if (culprits_build(&s->culprits, &in) < 0 ||
            culprits_read_spawners(&s->culprits, s->scope.sysroot->proc_fd) < 0) {
                s->partial = true;
                return;
        }
        s->has_culprits = true;
}

/* s->result of what s holds now: the hottest cgroups built, the reported processes' identities
 * read. passes: with the culprits and "on what" of the sample. Out of memory loses the hottest
 * cgroups (-ENOMEM), never the result. */
static int make_result(Sampler *s, SampleBasis basis, bool passes) {
        const Snapshot *a = basis == SAMPLE_BASIS_DELTA ? &s->a : NULL;
        const Snapshot *b = basis == SAMPLE_BASIS_DELTA ? &s->b : &s->a;
        SampleResult *res = &s->result;
        int r = 0;

        *res = (SampleResult) {
                .basis = basis,
                .wakeup_real_us = s->wakeup_real_us,
                .a = a,
                .b = b,
                .threads_base = basis == SAMPLE_BASIS_DELTA ? s->threads_base : NULL,
                .ranking = &s->ranking,
                .resource = s->scope.resource,
                .has_stall = s->scope.resource >= 0,
                .stall = s->scope.stall,
                .culprits = passes && s->has_culprits && s->scope.culprit ? &s->culprits : NULL,
                .culprit_scope = passes ? s->scope.culprit : NULL,
                .onwhat = passes && s->has_onwhat ? s->onwhat : NULL,
                .recorded = basis == SAMPLE_BASIS_DELTA && s->recorded,
                .stacks = basis == SAMPLE_BASIS_DELTA && s->stacks.taken ? &s->stacks : NULL,
                .stacks_scope = s->scope.culprit ? (s->scope.culprit->node ? NULL : s->scope.culprit->path)
                                                 : s->scope.cgroup_path,
        };
        /* The window the culprits cover: the sample's own, or the pass it shares. */
        if (res->culprits && basis == SAMPLE_BASIS_DELTA) {
                const CulpritPass *p = s->pass;
                res->has_culprit_window = true;
                if (s->scope.culprit->same) {
                        res->culprit_start_real_us = s->a.real_us;
                        res->culprit_duration_us = s->b.mono_us - s->a.mono_us;
                } else if (p->has_ca && p->has_cb) {
                        res->culprit_start_real_us = p->start_real_us;
                        res->culprit_duration_us = p->end_mono_us - p->start_mono_us;
                } else
                        res->has_culprit_window = false;
        }
        if (basis != SAMPLE_BASIS_NONE && b->has_cgroups && (!a || a->has_cgroups)) {
                r = hot_cgroups_build(&s->hot, a ? &a->cgroups : NULL, &b->cgroups,
                                      res->has_stall ? res->stall : PSI_STALL_SOME, HOT_CGROUPS_MAX);
                if (r >= 0) {
                        res->hot = &s->hot;
                        res->hot_prefix = s->scope.cgroup_path;
                }
        }
        sample_result_identify(res, s->scope.sysroot->proc_fd, s->scope.taskstats, s->scope.identities,
                               s->scope.detail);
        sample_result_name_containers(res, s->scope.identities, s->scope.containers);
        return r;
}

int sampler_result_lifetime(Sampler *s) {
        int r = ranking_build(&s->ranking, NULL, &s->a, s->scope.resource);

        if (r >= 0)
                r = ranking_add_threads(&s->ranking, NULL, &s->a, s->scope.resource);
        int k = make_result(s, SAMPLE_BASIS_LIFETIME, false);
        return r < 0 ? r : k;
}

void sampler_result_unmeasured(Sampler *s, const SampleScope *scope) {
        s->scope = *scope;
        sample_result_unmeasured(scope, &s->a, &s->result);
        s->wakeup_real_us = s->a.real_us;
}

/* The waits not ended at the last look join the ranking (ranking_add_blocked()). */
static void add_blocked(Sampler *s) {
        size_t n;
        const BlockedThreadLook *look = onwhat_last_look(s->onwhat, &n);

        if (ranking_add_blocked(&s->ranking, look, n, s->scope.resource) < 0)
                s->partial = true;
}

/* A window of 0: A's lifetime totals ranked, the leaders' threads measured now. Out of memory
 * loses part of it (s->partial), never the incident. */
static int finish_lifetime(Sampler *s) {
        s->threads_base = NULL;
        if (ranking_build(&s->ranking, NULL, &s->a, s->scope.resource) < 0 ||
            (s->scope.pid <= 0 && (set_candidates(s, MAX(s->scope.detail, 1u), NULL) < 0 ||
                                   snapshot_take_threads(&s->a, &s->scope, s->candidates, s->n_candidates) < 0)) ||
            ranking_add_threads(&s->ranking, NULL, &s->a, s->scope.resource) < 0)
                s->partial = true;
        if (s->has_onwhat) {
                onwhat_look(s->onwhat, s->scope.sysroot->proc_fd, &s->a, s->candidates, s->n_candidates);
                onwhat_end(s->onwhat, s->scope.limits);
                add_blocked(s);
        }
        build_culprits(s, true);
        return 0;
}

/* Past B, running out of memory loses part of the sample (exits, thread detail), never the
 * incident: each step goes on, and s->partial says so. */
static int finish_delta(Sampler *s) {
        int r;

        /* Exit records up to now; tasks that exit after B are in B anyway. */
        exit_watch_drain(&s->exit_watch);
        bool listened = exit_watch_listening(&s->exit_watch) || s->recorded_exits;
        exit_watch_stop(&s->exit_watch);
        r = snapshot_take(&s->b, &s->scope, false);
        if (r < 0)
                return r;
        if (s->threads_base && snapshot_take_threads(&s->b, &s->scope, s->candidates, s->n_candidates) < 0)
                s->partial = true;
        if (snapshot_merge_exits(&s->b, &s->a, s->threads_base, listened ? &s->exits : NULL) < 0)
                s->partial = true;
        snapshot_mark_born(&s->b, &s->a, s->scope.sysroot->proc_fd);
        if (ranking_build(&s->ranking, &s->a, &s->b, s->scope.resource) < 0)
                s->partial = true;
        /* The window starts at A (recorded, or the sample's own), before the threads' base. */
        s->ranking.window_start_real_ns = s->a.real_us * NSEC_PER_USEC;
        if (s->threads_base && ranking_add_threads(&s->ranking, s->threads_base, &s->b, s->scope.resource) < 0)
                s->partial = true;
        if (s->has_onwhat) {
                if (s->threads_base)
                        onwhat_look(s->onwhat, s->scope.sysroot->proc_fd, &s->b, s->candidates, s->n_candidates);
                onwhat_end(s->onwhat, s->scope.limits);
                add_blocked(s);
        }
        if (s->scope.culprit) {
                if (!s->pass->ended)
                        pass_take_end(s, listened);
                build_culprits(s, false);
        }
        return 0;
}

static void finish(Sampler *s) {
        int r;

        s->running = false;
        s->partial = false;
        ev_timer_stop(s->loop, &s->middle);
        stack_capture_stop(&s->stacks);
        s->b_start_us = now_usec(CLOCK_MONOTONIC);
        r = s->sample_ms > 0 ? finish_delta(s) : finish_lifetime(s);
        s->b_end_us = now_usec(CLOCK_MONOTONIC);
        if (r >= 0 && make_result(s, s->sample_ms > 0 ? SAMPLE_BASIS_DELTA : SAMPLE_BASIS_LIFETIME, true) < 0)
                s->partial = true;
        s->done(s, r);
}

static void on_timer(struct ev_loop *loop, ev_timer *timer, int revents) {
        finish(ASSERT_PTR(timer->data));
}

/* The middle of the window: the processes again, the leaders so far become the candidates and
 * their threads are read, the base of the threads' deltas. A failure leaves the incident without
 * thread detail, never without its processes. */
static void on_middle(struct ev_loop *loop, ev_timer *timer, int revents) {
        Sampler *s = ASSERT_PTR(timer->data);

        SampleScope middle = s->scope;

        exit_watch_drain(&s->exit_watch);
        middle.usage = -1; /* the culprits' use is read at the ends only */
        /* With the looks at blocked threads, the states too: a process that went into D since
         * the start, a wait that has not ended, leads nothing but is looked at. */
        if (snapshot_take_processes(&s->m, &middle, s->has_onwhat) < 0)
                return;
        snapshot_mark_born(&s->m, &s->a, s->scope.sysroot->proc_fd); /* a new culprit can lead */
        if (ranking_build(&s->ranking, &s->a, &s->m, s->scope.resource) < 0 ||
            set_candidates(s, candidates_max(&s->scope), &s->m) < 0 || s->n_candidates == 0 ||
            snapshot_take_threads(&s->m, &s->scope, s->candidates, s->n_candidates) < 0)
                return;
        s->threads_base = &s->m;
        if (s->has_onwhat)
                onwhat_look(s->onwhat, s->scope.sysroot->proc_fd, &s->m, s->candidates, s->n_candidates);
}

/* The window's stacks: of the culprit scope, where the culprits are (the victims too, but for
 * a scope of its own limit), else of the sample's own cgroup; the node's tasks for the node. */
static void start_stacks(Sampler *s) {
        const SampleScope *sc = &s->scope;

        s->stacks.taken = false;
        if (sc->stacks_hz == 0 || s->sample_ms == 0 || sc->pid > 0)
                return;
        int fd = sc->culprit ? (sc->culprit->node ? -1 : sc->culprit->cgroup_fd) : sc->cgroup_fd;
        StackCaptureOptions o = { .hz = sc->stacks_hz,
                                  .cgroup_fd = fd,
                                  .root_fd = sc->sysroot->root_fd,
                                  .proc_fd = sc->sysroot->proc_fd,
                                  .exclude_tgid = sc->exclude_tgid };
        (void) stack_capture_start(&s->stacks, s->loop, &o); /* its error is the incident's to say */
}

static void start_exits(Sampler *s) {
        /* Without a listener (no initial PID namespace, no memory) a sample still works: tasks that
         * exit during it are counted, not measured. */
        if (s->exit_cpus)
                (void) exit_watch_start(&s->exit_watch, s->loop, s->exit_cpus, &s->exits);
}

/* The window's timers: B at its end, the middle (the threads' base) halfway. */
static void start_window(Sampler *s) {
        start_stacks(s);
        /* The window runs from the end of snapshot A: libev counts a timer from the loop's cached
         * time, which is from before A (and, for `snapshot`, from the loop's creation). */
        ev_now_update(s->loop);
        ev_timer_set(&s->timer, (double) s->sample_ms / 1000.0, 0.);
        ev_timer_start(s->loop, &s->timer);
        if (s->scope.pid <= 0 && s->scope.taskstats) {
                ev_timer_set(&s->middle, (double) s->sample_ms / 2000.0, 0.);
                ev_timer_start(s->loop, &s->middle);
        }
}

static void begin_onwhat(Sampler *s, const SampleScope *scope, bool ok) {
        s->onwhat = scope->onwhat;
        /* Node-wide, only io has something to say: the node's busy disks. */
        s->has_onwhat = ok && s->onwhat && scope->pid <= 0 &&
                        (scope->limits_cgroup || scope->limits_resource == PSI_RESOURCE_IO);
        if (s->has_onwhat)
                onwhat_begin(s->onwhat, scope->limits, scope->limits_cgroup, scope->limits_resource);
}

int sampler_start_recorded(Sampler *s, const SampleScope *scope, uint64_t sample_ms, Recorder *rec,
                           uint64_t start_mono_us) {
        RecordedEntry *e = NULL;
        uint64_t now_total;

        if (sample_ms > 0 && rec) {
                /* The fired line now: the window starts where its stall began (recorder.h). */
                snapshot_read_pressure(&s->b, scope);
                e = snapshot_pressure_total(&s->b, scope->resource, scope->stall, &now_total)
                            ? recorder_find_onset(rec, start_mono_us, (PsiResource) scope->resource, scope->stall,
                                                  now_total)
                            : recorder_find(rec, start_mono_us);
        }
        if (!e)
                return sampler_start(s, scope, sample_ms);
        s->scope = *scope;
        s->scope.pass = NULL; /* the pass starts with the recorded entry: the sample's own */
        /* The stall is in the recorded past: the window needs only a short tail to end (and to
         * detail the leaders' threads), not a second of the quiet after it. */
        s->sample_ms = MIN(sample_ms, (uint64_t) SAMPLER_RECORDED_TAIL_MS);
        s->threads_base = NULL;
        s->n_candidates = 0;
        s->recorded = true;
        exit_records_clear(&s->exits);
        /* What the recorder heard since the entry (a listener delivered them) is the sample's. */
        s->recorded_exits = exit_watch_listening(&rec->exit_watch) || rec->exits.n > e->exits_from;
        (void) exit_records_append(&s->exits, &rec->exits, e->exits_from); /* short of memory: counted lost */
        start_exits(s);
        s->wakeup_real_us = now_usec(CLOCK_REALTIME);
        s->has_culprits = false;
        /* The recorded entry becomes A (its buffers go to the ring in exchange, and the recorder
         * forgets that entry below). */
        SWAP(s->a, e->a);
        s->pass = scope->culprit ? &s->own_pass : NULL;
        culprit_pass_usage(&s->scope);
        if (s->pass) {
                CulpritPass *p = s->pass;
                p->started = true;
                p->ended = p->has_cb = p->has_gb = false;
                p->start_real_us = s->a.real_us;
                p->start_mono_us = s->a.mono_us;
                SWAP(p->ca, e->ca);
                SWAP(p->ga, e->ga);
                p->has_ca = e->has_ca;
                p->has_ga = e->has_ga;
        }
        /* "On what" from the entry too, where it has the limit's counters (recorder.h). */
        begin_onwhat(s, scope, true);
        if (s->has_onwhat && e->onwhat)
                onwhat_begin_at(s->onwhat, rec->located ? &rec->loc : NULL, e->onwhat);
        /* Borrowed, not stopped: a sample that fails or is dropped leaves the watch recorded. */
        recorder_forget_through(rec, e);
        s->a_cost_us = 0;
        s->running = true;
        start_window(s);
        return 0;
}

int sampler_start(Sampler *s, const SampleScope *scope, uint64_t sample_ms) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        int r;

        s->scope = *scope;
        s->sample_ms = sample_ms;
        s->threads_base = NULL;
        s->n_candidates = 0;
        s->recorded = s->recorded_exits = false;
        /* Listen for exits from before A, so a task A reads and that exits at once is caught. */
        exit_records_clear(&s->exits);
        if (sample_ms > 0)
                start_exits(s);
        s->wakeup_real_us = now_usec(CLOCK_REALTIME);
        s->has_culprits = false;
        /* A shared pass already started is joined: its start is another sample's. */
        s->pass = scope->culprit ? (scope->pass ? scope->pass : &s->own_pass) : NULL;
        if (s->pass == &s->own_pass)
                s->own_pass.started = s->own_pass.ended = false;
        culprit_pass_usage(&s->scope);
        r = snapshot_take(&s->a, &s->scope, true);
        if (r >= 0 && s->pass && !s->pass->started)
                pass_take_start(s);
        begin_onwhat(s, scope, r >= 0);
        if (r >= 0 && scope->pid > 0)
                r = array_reserve((void **) &s->candidates, &s->cap_candidates, 1, sizeof *s->candidates);
        if (r >= 0 && scope->pid > 0) {
                /* One process: its threads from the start. */
                s->candidates[0] = scope->pid;
                s->n_candidates = 1;
                r = snapshot_take_threads(&s->a, &s->scope, s->candidates, 1);
                s->threads_base = r >= 0 && sample_ms > 0 ? &s->a : NULL;
        }
        s->a_cost_us = now_usec(CLOCK_MONOTONIC) - start;
        if (r < 0) {
                exit_watch_stop(&s->exit_watch);
                return r;
        }
        s->running = true;
        if (sample_ms == 0) {
                finish(s); /* no window: done now */
                return 0;
        }
        start_window(s);
        return 0;
}

void sampler_cancel(Sampler *s) {
        ev_timer_stop(s->loop, &s->timer);
        ev_timer_stop(s->loop, &s->middle);
        exit_watch_stop(&s->exit_watch);
        stack_capture_stop(&s->stacks);
        s->running = false;
}

void sampler_drop_onwhat(Sampler *s) {
        s->onwhat = NULL;
        s->has_onwhat = false;
}

void sampler_free(Sampler *s) {
        if (s->loop)
                sampler_cancel(s);
        snapshot_done(&s->a);
        snapshot_done(&s->m);
        snapshot_done(&s->b);
        culprit_pass_done(&s->own_pass);
        s->pass = NULL;
        culprits_done(&s->culprits);
        sampler_drop_onwhat(s);
        free(s->victims);
        s->victims = NULL;
        s->cap_victims = 0;
        ranking_done(&s->ranking);
        hot_cgroups_done(&s->hot);
        exit_records_done(&s->exits);
        stack_capture_done(&s->stacks);
        free(s->candidates);
        s->candidates = NULL;
        s->n_candidates = s->cap_candidates = 0;
}
