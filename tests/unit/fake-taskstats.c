/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/fake-taskstats.h"

typedef struct Fake {
        TaskstatsSource base;
        FakeTask *tasks;
        size_t n;
        unsigned calls;
        unsigned delay_us;  /* each query takes this long, as a loaded kernel's would */
        uint64_t growth_ns; /* each query first grows task i's cpu delay and cpu time by (i + 1) times this */
} Fake;

static void query(Fake *f) {
        f->calls++;
        if (f->delay_us)
                usleep(f->delay_us);
        for (size_t i = 0; f->growth_ns && i < f->n; i++) {
                f->tasks[i].stats.delay_ns[TASK_DELAY_CPU] += f->growth_ns * (i + 1);
                /* It runs as much as it waits: a culprit pass has cpu time to rank. */
                f->tasks[i].stats.cpu_run_ns += f->growth_ns * (i + 1);
                f->tasks[i].stats.has_cpu_run = true;
        }
}

static int fake_get_tid(TaskstatsSource *s, pid_t tid, TaskStats *ret) {
        Fake *f = (Fake *) s;

        query(f);
        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].tid == tid && !f->tasks[i].ended) {
                        if (f->tasks[i].error)
                                return f->tasks[i].error;
                        *ret = f->tasks[i].stats;
                        return 0;
                }
        return -ESRCH;
}

/* A process, as the kernel answers a TGID query: found by any of its threads' ids (ESRCH or the
 * error of that entry otherwise), its live threads summed plus its ended ones (FakeTask.ended),
 * and only the version, delays and cpu time filled in. */
static int fake_get_tgid(TaskstatsSource *s, pid_t id, TaskStats *ret) {
        Fake *f = (Fake *) s;
        TaskStats sum = {};
        pid_t tgid = 0;

        query(f);
        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].tid == id && !f->tasks[i].ended) {
                        if (f->tasks[i].error)
                                return f->tasks[i].error;
                        tgid = f->tasks[i].stats.tgid;
                }
        if (tgid == 0)
                return -ESRCH;
        for (size_t i = 0; i < f->n; i++) {
                const TaskStats *t = &f->tasks[i].stats;
                if (f->tasks[i].error || t->tgid != tgid)
                        continue;
                sum.version = t->version;
                sum.present |= t->present;
                for (TaskDelay d = 0; d < _TASK_DELAY_MAX; d++)
                        sum.delay_ns[d] += t->delay_ns[d];
                sum.cpu_run_ns += t->cpu_run_ns;
                sum.has_cpu_run = t->has_cpu_run;
        }
        *ret = sum;
        return 0;
}

static int fake_get_many(TaskstatsSource *s, bool tgid, const pid_t *ids, size_t n, TaskStats *ret, int *errs) {
        for (size_t i = 0; i < n; i++)
                errs[i] = tgid ? fake_get_tgid(s, ids[i], &ret[i]) : fake_get_tid(s, ids[i], &ret[i]);
        return 0;
}

static int fake_cgroupstats(TaskstatsSource *s, int fd, TaskStateCounts *ret) {
        return -EINVAL; /* like cgroup2 */
}

static void fake_free(TaskstatsSource *s) {
        free(s);
}

static const TaskstatsSourceOps fake_ops = {
        .get_tid = fake_get_tid,
        .get_tgid = fake_get_tgid,
        .get_many = fake_get_many,
        .cgroupstats = fake_cgroupstats,
        .free = fake_free,
};

TaskstatsSource *fake_taskstats_new(FakeTask *tasks, size_t n) {
        Fake *f = calloc(1, sizeof *f);

        if (!f)
                abort();
        f->base.ops = &fake_ops;
        f->tasks = tasks;
        f->n = n;
        return &f->base;
}

void fake_taskstats_set_delay(TaskstatsSource *s, unsigned delay_us) {
        ((Fake *) s)->delay_us = delay_us;
}

void fake_taskstats_set_growth(TaskstatsSource *s, uint64_t growth_ns) {
        ((Fake *) s)->growth_ns = growth_ns;
}

unsigned fake_taskstats_calls(TaskstatsSource *s) {
        return ((Fake *) s)->calls;
}

TaskStats fake_task_stats(pid_t tid, pid_t tgid, const char *comm, const uint64_t delays_ns[_TASK_DELAY_MAX]) {
        TaskStats t = {
                .version = 16,
                .pid = tid,
                .tgid = tgid,
                .btime_s = 1000,
                .present = TASK_DELAY_ALL,
        };

        strncpy(t.comm, comm, TASKSTATS_COMM_MAX);
        if (delays_ns)
                memcpy(t.delay_ns, delays_ns, sizeof t.delay_ns);
        return t;
}
