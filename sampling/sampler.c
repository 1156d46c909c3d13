/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "sampling/sampler.h"

static void on_timer(struct ev_loop *loop, ev_timer *timer, int revents);

void sampler_init(Sampler *s, struct ev_loop *loop, const char *exit_cpus, SamplerDone done, void *userdata) {
        *s = (Sampler) { .loop = loop, .exit_cpus = exit_cpus, .done = done, .userdata = userdata };
        ev_timer_init(&s->timer, on_timer, 0., 0.);
        s->timer.data = s;
}

int sampler_preallocate(Sampler *s, const SampleScope *scope, size_t *ret_n) {
        TidList *l = &s->a.tids;
        size_t n;
        int r;

        tid_list_clear(l);
        r = scope->cgroup_fd >= 0 ? cgroup_list_threads(scope->cgroup_fd, l)
                                  : proc_list_threads(scope->sysroot->proc_fd, l);
        n = MAX(r >= 0 ? l->n : 0, (size_t) 16);
        tid_list_clear(l);
        *ret_n = n;
        if (snapshot_reserve(&s->a, n) < 0 || snapshot_reserve(&s->b, n) < 0 || ranking_reserve(&s->ranking, n) < 0)
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

static void finish(Sampler *s) {
        int r = 0;

        s->running = false;
        s->b_start_us = now_usec(CLOCK_MONOTONIC);
        if (s->sample_ms > 0) {
                /* Exit records up to now; threads that exit after B are in B anyway. */
                drain_exits(s);
                bool listened = s->exit_listener != NULL;
                stop_exits(s);
                r = snapshot_take(&s->b, &s->scope, false);
                if (r >= 0 && listened && snapshot_merge_exits(&s->b, &s->a, &s->exits) < 0)
                        r = -ENOMEM;
        }
        s->b_end_us = now_usec(CLOCK_MONOTONIC);
        s->done(s, r);
}

static void on_timer(struct ev_loop *loop, ev_timer *timer, int revents) {
        finish(ASSERT_PTR(timer->data));
}

int sampler_start(Sampler *s, const SampleScope *scope, uint64_t sample_ms) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        int r;

        s->scope = *scope;
        s->sample_ms = sample_ms;
        /* Listen for exits from before A, so a thread A reads and that exits at once is caught. */
        exit_records_clear(&s->exits);
        if (sample_ms > 0 && s->exit_cpus) {
                /* Without a listener (no initial PID namespace, no memory) a sample still works:
                 * threads that exit during it are counted, not measured. */
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
        return 0;
}

void sampler_cancel(Sampler *s) {
        ev_timer_stop(s->loop, &s->timer);
        stop_exits(s);
        s->running = false;
}

bool sampler_exit_delays(const Sampler *s, pid_t pid, uint64_t ret_ns[_TASK_DELAY_MAX], uint32_t *ret_present) {
        uint64_t sum[_TASK_DELAY_MAX] = {};
        uint32_t present = 0;
        bool found = false;

        for (size_t i = 0; i < s->exits.n; i++) {
                const ThreadDelays *t = &s->exits.items[i];
                if (t->tgid != pid)
                        continue;
                found = true;
                present |= t->present;
                for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                        sum[d] += t->delay_ns[d];
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
        snapshot_done(&s->b);
        ranking_done(&s->ranking);
        hot_cgroups_done(&s->hot);
        exit_records_done(&s->exits);
}
