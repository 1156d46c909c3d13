/* SPDX-License-Identifier: MIT */
/* Exit records heard while a sample runs, and what they add to its end snapshot: the final
 * counters of processes (and detailed threads) that ended during the sample, and processes that
 * started and ended inside it, placed by their parents or counted as unattributed
 * (kernel-facts.md: exit-records). Pure: no I/O, no logging; buffers are reused. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "probes/taskstats.h"
#include "sampling/snapshot.h"

/* One exit record: a thread's final counters, or a whole process's (process: tid is the tgid). */
typedef struct ExitRecord {
        ThreadDelays t;
        pid_t ppid;
        int64_t uid;
        uint64_t cpu_run_ns;
        bool has_cpu_run;
        bool process;
        /* A thread's record only (an AGGR_TGID record has none: kernel-facts.md: exit-records):
         * the address space's resident high-water mark, and the thread's own storage bytes. */
        uint64_t hiwater_rss_bytes;
        bool has_hiwater_rss;
        uint64_t read_bytes, write_bytes;
        bool has_io;
} ExitRecord;

/* Exit records gathered while a sample runs (taskstats_exit_listener_drain), reused. */
typedef struct ExitRecords {
        ExitRecord *items;
        size_t n, cap;
        unsigned lost;
        const ExitRecord **finals; /* scratch of snapshot_merge_exits(): each process's final record */
        size_t n_finals, cap_finals;
        const ExitRecord **threads; /* scratch of snapshot_merge_exits(): the thread records, by tgid */
        size_t n_threads, cap_threads;
} ExitRecords;

/* Keeps the records of one exit message: the thread's, and the process's when given (the last
 * thread of a multi-threaded process went). 0 or -ENOMEM. */
int exit_records_add(ExitRecords *e, const TaskStats *thread, const TaskStats *process);
/* The same as a taskstats_exit_listener_drain() callback (userdata: the ExitRecords); a record
 * that cannot be kept counts as lost. */
void exit_records_collect(const TaskStats *thread, const TaskStats *process, void *userdata);
void exit_records_clear(ExitRecords *e);
/* Forgets the first n records (all when n >= e->n), keeping the rest in order. */
void exit_records_drop_front(ExitRecords *e, size_t n);
/* Appends src's records from index from on to dst, and src's lost count. 0 or -ENOMEM (dst then
 * has part of them, and the rest counted as lost). */
int exit_records_append(ExitRecords *dst, const ExitRecords *src, size_t from);
void exit_records_done(ExitRecords *e);

/* The final delays of process pid (its AGGR_TGID exit record, else its threads' records summed)
 * when e has its records. False when it has none (ret_ns and ret_present untouched). */
bool exit_records_delays(const ExitRecords *e, pid_t pid, uint64_t ret_ns[_TASK_DELAY_MAX], uint32_t *ret_present);
/* The final counters of process tgid: its AGGR_TGID record, else the record of its only thread
 * (a single-threaded process sends no aggregate). NULL when none was heard. */
const ExitRecord *exit_records_find_process(const ExitRecords *e, pid_t tgid);

/* Completes the end snapshot b of a sample that began with a, with what the exit records say
 * (kernel-facts.md: exit-records):
 * - a process of a that b no longer has gets its final counters (origin ENDED); one with no
 *   record heard is counted in b->ended_unheard;
 * - a process that ended (ENDED or SHORT) gets the last use its thread records tell: storage bytes
 *   summed over them (has_io; for a process whose threads also ended before the sample, less than
 *   its /proc/<pid>/io said: those ended unheard) and the resident high-water mark as rss_bytes
 *   (has_mem; the size it had reached when it ended, an OOM victim's before the kill freed it);
 * - a process that started and ended inside the sample (in neither listing) is placed in the
 *   subtree when its parent is a process of a or b, or another such process (origin SHORT); the
 *   others are summed in b->unattributed: a record never says which cgroup its task was in;
 * - a detailed thread of threads_base (the snapshot the thread deltas start from; NULL: none)
 *   that b's threads no longer have gets its record's final counters.
 * Records of the rest of the host are ignored. With e NULL (no listener ran), only the ended
 * processes are counted. 0 or -ENOMEM. */
int snapshot_merge_exits(Snapshot *b, const Snapshot *a, const Snapshot *threads_base, ExitRecords *e);
