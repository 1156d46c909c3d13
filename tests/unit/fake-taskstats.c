/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/fake-taskstats.h"

typedef struct Fake {
        TaskstatsSource base;
        FakeTask *tasks;
        size_t n;
        unsigned calls;
} Fake;

static int fake_get_tid(TaskstatsSource *s, pid_t tid, TaskStats *ret) {
        Fake *f = (Fake *) s;

        f->calls++;
        for (size_t i = 0; i < f->n; i++)
                if (f->tasks[i].tid == tid) {
                        if (f->tasks[i].error)
                                return f->tasks[i].error;
                        *ret = f->tasks[i].stats;
                        return 0;
                }
        return -ESRCH;
}

static int fake_cgroupstats(TaskstatsSource *s, int fd, TaskStateCounts *ret) {
        return -EINVAL; /* like cgroup2 */
}

static void fake_free(TaskstatsSource *s) {
        free(s);
}

static const TaskstatsSourceOps fake_ops = {
        .get_tid = fake_get_tid,
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
