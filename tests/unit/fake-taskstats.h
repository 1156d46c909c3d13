/* SPDX-License-Identifier: MIT */
/* A TaskstatsSource for unit tests: answers from a table the test fills, ESRCH for unknown tids,
 * and any errno the test assigns to a tid; TGID queries sum a process's threads as the kernel does. */
#pragma once

#include <stdbool.h>

#include "probes/taskstats.h"

typedef struct FakeTask {
        pid_t tid;
        int error;  /* returned instead of stats when non-zero (negative errno) */
        bool ended; /* a thread that ended: ESRCH alone, but still in its process's TGID totals */
        TaskStats stats;
} FakeTask;

/* tasks is borrowed, not copied; the test keeps it alive while the source is used. */
TaskstatsSource *fake_taskstats_new(FakeTask *tasks, size_t n);
/* Makes every get_tid call take delay_us (0: none). */
void fake_taskstats_set_delay(TaskstatsSource *s, unsigned delay_us);
/* Makes every query first grow task i's cpu delay and its cpu time used by (i + 1) * growth_ns
 * (0: none), so the delays and the culprits' use move between the snapshots of a sample run on a
 * loop. */
void fake_taskstats_set_growth(TaskstatsSource *s, uint64_t growth_ns);
/* Number of get_tid and get_tgid calls so far. */
unsigned fake_taskstats_calls(TaskstatsSource *s);
/* A TaskStats for a thread with the given delays in ns (cpu, blkio, swapin, reclaim, thrashing,
 * compact, wpcopy, irq), version 16, every delay present. */
TaskStats fake_task_stats(pid_t tid, pid_t tgid, const char *comm, const uint64_t delays_ns[_TASK_DELAY_MAX]);
