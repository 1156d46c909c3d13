/* SPDX-License-Identifier: MIT */
/* A TaskstatsSource for unit tests: answers from a table the test fills, ESRCH for unknown tids,
 * and any errno the test assigns to a tid. */
#pragma once

#include "probes/taskstats.h"

typedef struct FakeTask {
        pid_t tid;
        int error; /* returned instead of stats when non-zero (negative errno) */
        TaskStats stats;
} FakeTask;

/* tasks is borrowed, not copied; the test keeps it alive while the source is used. */
TaskstatsSource *fake_taskstats_new(FakeTask *tasks, size_t n);
/* Makes every get_tid call take delay_us (0: none). */
void fake_taskstats_set_delay(TaskstatsSource *s, unsigned delay_us);
/* Number of get_tid calls so far. */
unsigned fake_taskstats_calls(TaskstatsSource *s);
/* A TaskStats for a thread with the given delays in ns (cpu, blkio, swapin, reclaim, thrashing,
 * compact, wpcopy, irq), version 16, every delay present. */
TaskStats fake_task_stats(pid_t tid, pid_t tgid, const char *comm, const uint64_t delays_ns[_TASK_DELAY_MAX]);
