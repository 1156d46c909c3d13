/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "probes/states.h"

const char *task_state_source_to_string(TaskStateSource s) {
        return s == TASK_STATE_SOURCE_CGROUPSTATS ? "cgroupstats" : "procfs";
}

void task_state_counts_init_procfs(TaskStateCounts *c) {
        *c = (TaskStateCounts) {
                .source = TASK_STATE_SOURCE_PROCFS,
                .io_wait = -1,
        };
}

void task_state_counts_add(TaskStateCounts *c, char state) {
        c->read++;
        switch (state) {
        case 'R':
                c->running++;
                break;
        case 'S':
        case 'I':
                c->sleeping++;
                break;
        case 'D':
                c->uninterruptible++;
                break;
        case 'T':
        case 't':
                c->stopped++;
                break;
        default:
                break;
        }
}

static uint64_t scale(uint64_t n, uint64_t total, uint64_t read) {
        /* n <= read <= total, so n * total fits unless total is beyond 2^32 threads. */
        return (n * total + read / 2) / read;
}

void task_state_counts_scale(TaskStateCounts *c, uint64_t total) {
        if (c->read == 0 || c->read >= total)
                return;
        c->running = scale(c->running, total, c->read);
        c->sleeping = scale(c->sleeping, total, c->read);
        c->uninterruptible = scale(c->uninterruptible, total, c->read);
        c->stopped = scale(c->stopped, total, c->read);
        c->scaled = true;
}

void task_state_weights_add(TaskStateWeights *w, char state, double weight) {
        TaskStateCounts one;

        /* One letter's mapping, the same as task_state_counts_add()'s. */
        task_state_counts_init_procfs(&one);
        task_state_counts_add(&one, state);
        w->running += weight * (double) one.running;
        w->sleeping += weight * (double) one.sleeping;
        w->uninterruptible += weight * (double) one.uninterruptible;
        w->stopped += weight * (double) one.stopped;
        w->all += weight;
        w->read++;
}

static uint64_t share(double part, double all, uint64_t total) {
        return (uint64_t) (part / all * (double) total + 0.5);
}

void task_state_weights_finish(const TaskStateWeights *w, uint64_t total, TaskStateCounts *ret) {
        task_state_counts_init_procfs(ret);
        ret->read = w->read;
        if (w->read == 0 || w->all <= 0)
                return;
        ret->running = share(w->running, w->all, total);
        ret->sleeping = share(w->sleeping, w->all, total);
        ret->uninterruptible = share(w->uninterruptible, w->all, total);
        ret->stopped = share(w->stopped, w->all, total);
        ret->scaled = w->read < total;
}

int cgroupstats_parse_payload(const void *data, size_t len, TaskStateCounts *ret) {
        uint64_t v[5];

        /* Field order of struct cgroupstats in <linux/cgroupstats.h>. */
        if (len < sizeof v)
                return -EBADMSG;
        memcpy(v, data, sizeof v);
        *ret = (TaskStateCounts) {
                .source = TASK_STATE_SOURCE_CGROUPSTATS,
                .sleeping = v[0],
                .running = v[1],
                .stopped = v[2],
                .uninterruptible = v[3],
                .io_wait = (int64_t) (v[4] > INT64_MAX ? INT64_MAX : v[4]),
        };
        return 0;
}

void task_state_blocked_note(TaskStateBlocked *b, char state, int pid) {
        if (state != 'D' || pid <= 0 || b->n >= TASK_STATE_BLOCKED_MAX)
                return;
        for (size_t i = 0; i < b->n; i++)
                if (b->pids[i] == pid)
                        return;
        b->pids[b->n++] = pid;
}
