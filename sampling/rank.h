/* SPDX-License-Identifier: MIT */
/* From two snapshots to a ranking: per-thread deltas, grouped by process (tgid), scored by the
 * fired resource and sorted. Pure: no I/O, no logging; buffers live in the Ranking and are reused. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampling/snapshot.h"

/* The score of a set of delays: cpu = cpu delay; memory = reclaim + thrashing + swapin + compact;
 * io = blkio; irq = irq; RANK_SCORE_ALL (-1) = every delay summed. */
#define RANK_SCORE_ALL (-1)
uint64_t rank_score(const uint64_t delay_ns[_TASK_DELAY_MAX], int resource);

typedef struct ThreadDelta {
        pid_t tid, tgid;
        char comm[TASKSTATS_COMM_MAX + 1];
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint64_t score_ns, total_ns;
} ThreadDelta;

typedef struct ProcessDelta {
        pid_t tgid;
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint64_t score_ns, total_ns;
        size_t first, n; /* its threads: Ranking.threads[first .. first+n), highest score first */
} ProcessDelta;

typedef struct Ranking {
        ThreadDelta *threads;
        size_t n_threads, cap_threads;
        ProcessDelta *procs; /* highest score first; only processes with some delay in the sample */
        size_t n_procs, cap_procs;
        uint32_t present; /* delays the kernel reported (TASK_DELAY_MASK bits) */
        unsigned exited;  /* threads of a that b no longer has */
} Ranking;

/* Builds the ranking of b - a. A thread only in b counts with its whole totals when it began at or
 * after a was taken (it was born during the sample), and is ignored otherwise (it moved in, and
 * its totals are not from this sample); begin times are compared with a second of slack, as the
 * kernel recomputes them on every query. A counter that went backwards counts as zero. With a
 * NULL, every thread of b counts with its lifetime totals (a sample of 0 ms). 0 or -ENOMEM. */
int ranking_build(Ranking *r, const Snapshot *a, const Snapshot *b, int resource);
void ranking_done(Ranking *r);
/* Allocates r's buffers for n threads ahead of a sample. 0 or -ENOMEM. */
int ranking_reserve(Ranking *r, size_t n);
