/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/sampler.h"

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
            array_reserve((void **) &s->candidates, &s->cap_candidates, candidates_max(scope), sizeof *s->candidates) <
                    0)
                return -ENOMEM;
        return 0;
}

static void drain_exits(Sampler *s) {
        int r;

        if (!s->exit_listener)
                return;
        r = taskstats_exit_listener_drain(s->exit_listener, exit_records_collect, &s->exits, &s->exits.lost);
        if (r < 0) {
                /* The listener broke; exits are not followed for the rest of this sample. */
                ev_io_stop(s->loop, &s->exit_io);
                s->exit_listener = taskstats_exit_listener_free(s->exit_listener);
        }
}

static void on_exit_io(struct ev_loop *loop, ev_io *io, int revents) {
        drain_exits(ASSERT_PTR(io->data));
}

static void stop_exits(Sampler *s) {
        if (!s->exit_listener)
                return;
        ev_io_stop(s->loop, &s->exit_io);
        s->exit_listener = taskstats_exit_listener_free(s->exit_listener);
}

static int set_candidates(Sampler *s, size_t n) {
        int r = array_reserve((void **) &s->candidates, &s->cap_candidates, n, sizeof *s->candidates);

        if (r < 0)
                return r;
        s->n_candidates = ranking_top_pids(&s->ranking, n, s->candidates);
        return 0;
}

int sampler_rank_lifetime(Sampler *s) {
        int r = ranking_build(&s->ranking, NULL, &s->a, s->scope.resource);

        return r < 0 ? r : ranking_add_threads(&s->ranking, NULL, &s->a, s->scope.resource);
}

/* A window of 0: A's lifetime totals ranked, the leaders' threads measured now. Out of memory
 * loses part of it (s->partial), never the incident. */
static int finish_lifetime(Sampler *s) {
        s->threads_base = NULL;
        if (ranking_build(&s->ranking, NULL, &s->a, s->scope.resource) < 0 ||
            (s->scope.pid <= 0 && (set_candidates(s, MAX(s->scope.detail, 1u)) < 0 ||
                                   snapshot_take_threads(&s->a, &s->scope, s->candidates, s->n_candidates) < 0)) ||
            ranking_add_threads(&s->ranking, NULL, &s->a, s->scope.resource) < 0)
                s->partial = true;
        return 0;
}

/* Past B, running out of memory loses part of the sample (exits, thread detail), never the
 * incident: each step goes on, and s->partial says so. */
static int finish_delta(Sampler *s) {
        int r;

        /* Exit records up to now; tasks that exit after B are in B anyway. */
        drain_exits(s);
        bool listened = s->exit_listener != NULL;
        stop_exits(s);
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
        if (s->threads_base && ranking_add_threads(&s->ranking, s->threads_base, &s->b, s->scope.resource) < 0)
                s->partial = true;
        return 0;
}

static void finish(Sampler *s) {
        int r;

        s->running = false;
        s->partial = false;
        ev_timer_stop(s->loop, &s->middle);
        s->b_start_us = now_usec(CLOCK_MONOTONIC);
        r = s->sample_ms > 0 ? finish_delta(s) : finish_lifetime(s);
        s->b_end_us = now_usec(CLOCK_MONOTONIC);
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

        drain_exits(s);
        if (snapshot_take_processes(&s->m, &s->scope) < 0)
                return;
        snapshot_mark_born(&s->m, &s->a, s->scope.sysroot->proc_fd); /* a new culprit can lead */
        if (ranking_build(&s->ranking, &s->a, &s->m, s->scope.resource) < 0 ||
            set_candidates(s, candidates_max(&s->scope)) < 0 || s->n_candidates == 0 ||
            snapshot_take_threads(&s->m, &s->scope, s->candidates, s->n_candidates) < 0)
                return;
        s->threads_base = &s->m;
}

int sampler_start(Sampler *s, const SampleScope *scope, uint64_t sample_ms) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        int r;

        s->scope = *scope;
        s->sample_ms = sample_ms;
        s->threads_base = NULL;
        s->n_candidates = 0;
        /* Listen for exits from before A, so a task A reads and that exits at once is caught. */
        exit_records_clear(&s->exits);
        if (sample_ms > 0 && s->exit_cpus) {
                /* Without a listener (no initial PID namespace, no memory) a sample still works:
                 * tasks that exit during it are counted, not measured. */
                if (taskstats_exit_listener_new(s->exit_cpus, &s->exit_listener) < 0)
                        s->exit_listener = NULL;
                if (s->exit_listener) {
                        ev_io_init(&s->exit_io, on_exit_io, taskstats_exit_listener_fd(s->exit_listener), EV_READ);
                        s->exit_io.data = s;
                        ev_io_start(s->loop, &s->exit_io);
                }
        }
        s->wakeup_real_us = now_usec(CLOCK_REALTIME);
        r = snapshot_take(&s->a, &s->scope, true);
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
                stop_exits(s);
                return r;
        }
        s->running = true;
        if (sample_ms == 0) {
                finish(s); /* no window: done now */
                return 0;
        }
        /* The window runs from the end of snapshot A: libev counts a timer from the loop's cached
         * time, which is from before A (and, for `snapshot`, from the loop's creation). */
        ev_now_update(s->loop);
        ev_timer_set(&s->timer, (double) sample_ms / 1000.0, 0.);
        ev_timer_start(s->loop, &s->timer);
        if (scope->pid <= 0 && scope->taskstats) {
                ev_timer_set(&s->middle, (double) sample_ms / 2000.0, 0.);
                ev_timer_start(s->loop, &s->middle);
        }
        return 0;
}

void sampler_cancel(Sampler *s) {
        ev_timer_stop(s->loop, &s->timer);
        ev_timer_stop(s->loop, &s->middle);
        stop_exits(s);
        s->running = false;
}

bool sampler_exit_delays(const Sampler *s, pid_t pid, uint64_t ret_ns[_TASK_DELAY_MAX], uint32_t *ret_present) {
        const ExitRecord *whole = NULL;
        uint64_t sum[_TASK_DELAY_MAX] = {};
        uint32_t present = 0;
        bool found = false;

        for (size_t i = 0; i < s->exits.n; i++) {
                const ExitRecord *x = &s->exits.items[i];
                /* Before taskstats v12 a record has no tgid: the victim's own thread is known. */
                if (x->t.tgid != pid && !(x->t.tgid <= 0 && x->t.tid == pid))
                        continue;
                if (x->process) {
                        whole = x;
                        continue;
                }
                found = true;
                present |= x->t.present;
                for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                        sum[d] += x->t.delay_ns[d];
        }
        /* The aggregate has the threads that ended before the listener was on, too. */
        if (whole) {
                memcpy(ret_ns, whole->t.delay_ns, sizeof whole->t.delay_ns);
                *ret_present = whole->t.present;
                return true;
        }
        if (found) { /* the outputs are left alone otherwise */
                memcpy(ret_ns, sum, sizeof sum);
                *ret_present = present;
        }
        return found;
}

void sampler_free(Sampler *s) {
        if (s->loop)
                sampler_cancel(s);
        snapshot_done(&s->a);
        snapshot_done(&s->m);
        snapshot_done(&s->b);
        ranking_done(&s->ranking);
        hot_cgroups_done(&s->hot);
        exit_records_done(&s->exits);
        free(s->candidates);
        s->candidates = NULL;
        s->n_candidates = s->cap_candidates = 0;
}
