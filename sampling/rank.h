/* SPDX-License-Identifier: MIT */
/* From two snapshots to a ranking: per-process deltas scored by the fired resource and sorted,
 * then the detailed processes' per-thread deltas. Pure: no I/O, no logging; buffers live in the
 * Ranking and are reused. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sampling/blocked.h"
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
        /* Its worst single delay of each class where that maximum rose during the window (so it
         * happened then: a lifetime maximum never stands for the window's), and when it ended. */
        uint32_t worst_present, worst_at_present;
        uint64_t worst_ns[_TASK_DELAY_MAX];
        uint64_t worst_at_ns[_TASK_DELAY_MAX];
        /* Its longest single delay of each class over its life and when it ended (taskstats v17:
         * only where the kernel stamped it; never a blkio wait without a start), for
         * ranking_process_worst(). */
        uint32_t max_at_present;
        uint64_t max_ns[_TASK_DELAY_MAX];
        uint64_t max_at_ns[_TASK_DELAY_MAX];
} ThreadDelta;

typedef struct ProcessDelta {
        pid_t tgid;
        uint8_t origin;                    /* ProcessOrigin */
        pid_t ppid;                        /* from an exit record (ENDED, SHORT); 0 otherwise */
        int64_t uid;                       /* from an exit record; -1 otherwise */
        char comm[TASKSTATS_COMM_MAX + 1]; /* from an exit record; "" otherwise */
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint64_t score_ns, total_ns;
        size_t first, n; /* its detailed threads: Ranking.threads[first .. first+n), highest score first */
        /* blkio waits without a start taken off its growth (Ranking.unstarted): by its own reply's
         * maximum, then by its detailed threads' (scratch: what they found so far) */
        uint64_t unstarted_ns, threads_unstarted_ns;
        uint32_t unstarted_waits, threads_unstarted_waits;
        /* Its thread blocked longest at the sample's last look, and for how long (a wait that has
         * not ended, in no delay: ranking_add_blocked()); blocked_tid 0 when none was. */
        pid_t blocked_tid;
        uint64_t blocked_ns;
} ProcessDelta;

typedef struct Ranking {
        ThreadDelta *threads;
        size_t n_threads, cap_threads;
        ProcessDelta *procs; /* highest score first; only processes with some delay in the sample */
        size_t n_procs, cap_procs;
        uint32_t present; /* delays the kernel reported (TASK_DELAY_MASK bits) */
        /* Where the incident's window starts (CLOCK_REALTIME ns; 0: where the threads' base is): a
         * thread's maximum stamped after it (taskstats v17) is the window's though it did not grow
         * since the base. Set by the caller before ranking_add_threads(). */
        uint64_t window_start_real_ns;
        /* blkio waits without a start taken out of the window's growth, processes' and threads'
         * (kernel-facts.md: blkio-unstarted): the kernel can end a task's blkio wait it never
         * started, adding local_clock(), the time since boot, to its total and making that its
         * maximum. A maximum new in the window that lies between the times since boot at the
         * window's two ends (a second either side; CLOCK_MONOTONIC) is such a wait: a real one as
         * long would have begun within seconds of boot. It comes off the growth, with the later
         * waits a task ended from the same missing start (as many as the rest holds the window's
         * start); a process whose TGID reply shows another thread's maximum is corrected by its
         * detailed threads'. Counted in waits. */
        size_t unstarted;
        bool resort; /* scratch: a process's growth changed after its ranking */
} Ranking;

/* Ranks the processes of b - a. A process only in b counts with its whole totals when it began
 * during the sample (born_in_sample, or from an exit record), and is left out otherwise (it moved
 * in, and its totals are not from this sample). A counter that went backwards counts as zero.
 * With a NULL, every process of b counts with its lifetime totals (a sample of 0 ms). No thread
 * is attached (ranking_add_threads). 0 or -ENOMEM. */
int ranking_build(Ranking *r, const Snapshot *a, const Snapshot *b, int resource);

/* Attaches to each ranked process its detailed threads, tb - ta (ta NULL: lifetime totals): a
 * thread only in tb counts whole when it began at or after ta was taken, and is left out
 * otherwise; begin times are compared with a second of slack, as the kernel recomputes them on
 * every query. 0 or -ENOMEM. */
int ranking_add_threads(Ranking *r, const Snapshot *ta, const Snapshot *tb, int resource);

/* Waits that have not ended (threads in D at the sample's last look, with how long each has been
 * blocked: sampling/onwhat.h) given to their processes. For io, memory and RANK_SCORE_ALL they
 * count in the score, so that a process stuck for 3 s outranks one that waited 50 ms, and a
 * process blocked without a delay in the sample is ranked; for cpu and irq (a D sleep is not a
 * wait for either) they are only noted on processes already ranked. A wait known to be for the
 * other of io and memory (sampling/waitfor.h: waitfor_counts_for()) is left out. 0 or -ENOMEM (r
 * keeps what it had). */
int ranking_add_blocked(Ranking *r, const BlockedThreadLook *threads, size_t n, int resource);

/* Where a process's longest wait ended, against the incident (ranking_process_worst()). */
typedef enum WorstWhen {
        WORST_WINDOW,         /* inside the incident's window */
        WORST_TRIGGER_WINDOW, /* before it, inside the trigger's window that ended at the wakeup */
        WORST_BEFORE,         /* before both: the longest of the thread's life, not this stall's */
        _WORST_WHEN_MAX,
} WorstWhen;

/* "window", "trigger_window", "before"; NULL out of range. */
const char *worst_when_to_string(WorstWhen w);

typedef struct ProcessWorst {
        TaskDelay delay;
        pid_t tid;
        uint64_t ns;    /* the wait's length */
        uint64_t at_ns; /* when it ended, CLOCK_REALTIME */
        WorstWhen when;
} ProcessWorst;

/* The longest single wait of the ranked resource's classes (rank_score()'s; every class for
 * RANK_SCORE_ALL) among p's attached threads whose maxima the kernel dates (taskstats v17,
 * kernel-facts.md: delay-maxima): the longest that ended inside the incident's window (from
 * window_start_ns on; CLOCK_REALTIME ns) or the trigger's window before it (from trigger_start_ns
 * on; 0: none), else the longest that ended before both. False when no thread of p has a dated
 * maximum (older kernels: the incident then says nothing rather than guess). */
bool ranking_process_worst(const Ranking *r, const ProcessDelta *p, int resource, uint64_t window_start_ns,
                           uint64_t trigger_start_ns, ProcessWorst *ret);

/* The tgids of the first n ranked processes into pids; returns how many. */
size_t ranking_top_pids(const Ranking *r, size_t n, pid_t *pids);

void ranking_done(Ranking *r);
/* Allocates r's buffers for n threads and p processes ahead of a sample. 0 or -ENOMEM. */
int ranking_reserve(Ranking *r, size_t n, size_t p);
