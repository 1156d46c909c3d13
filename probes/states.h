/* SPDX-License-Identifier: MIT */
/* Task state counts of a cgroup, from CGROUPSTATS_CMD_GET (cgroup v1 only) or from the state
 * letters of /proc/<tid>/stat. Pure counting and payload parsing; never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum TaskStateSource {
        TASK_STATE_SOURCE_CGROUPSTATS,
        TASK_STATE_SOURCE_PROCFS,
} TaskStateSource;

typedef struct TaskStateCounts {
        TaskStateSource source;
        uint64_t running, sleeping, uninterruptible, stopped;
        int64_t io_wait; /* cgroupstats only; -1 when unknown (procfs has no io-wait flag) */
        uint64_t read;   /* procfs: threads whose state letter was read (0 for cgroupstats) */
        bool scaled;     /* procfs: counts scaled up from an evenly spaced sample of `read` threads */
} TaskStateCounts;

const char *task_state_source_to_string(TaskStateSource s);

/* Starts a procfs count (io_wait unknown). */
void task_state_counts_init_procfs(TaskStateCounts *c);

/* Adds one thread by its /proc state letter. Mirrors cgroupstats_build(): R running, S sleeping,
 * D uninterruptible, T/t stopped. I (idle kernel threads, TASK_IDLE) counts as sleeping;
 * Z, X and unknown letters are not counted. */
void task_state_counts_add(TaskStateCounts *c, char state);

/* Scales procfs counts read from a sample of c->read threads up to total threads (rounded), and
 * marks them scaled. No-op when every thread was read or none was. */
void task_state_counts_scale(TaskStateCounts *c, uint64_t total);

/* A procfs count from a weighted sample (each thread read stands for weight threads), summed in
 * doubles and rounded into a TaskStateCounts at the end. */
typedef struct TaskStateWeights {
        double running, sleeping, uninterruptible, stopped, all;
        uint64_t read;
} TaskStateWeights;

void task_state_weights_add(TaskStateWeights *w, char state, double weight);
/* Procfs counts of total threads from w: each state's share of the weight read, times total,
 * rounded; read is the threads read, scaled is set when that is fewer than total. */
void task_state_weights_finish(const TaskStateWeights *w, uint64_t total, TaskStateCounts *ret);

/* The processes with a thread in uninterruptible sleep (D), distinct, the first
 * TASK_STATE_BLOCKED_MAX seen. */
#define TASK_STATE_BLOCKED_MAX 16
typedef struct TaskStateBlocked {
        int pids[TASK_STATE_BLOCKED_MAX];
        size_t n;
} TaskStateBlocked;

/* Keeps pid when state is 'D' (and it is not kept yet, and there is room). */
void task_state_blocked_note(TaskStateBlocked *b, char state, int pid);

/* Parses a struct cgroupstats payload (5 x u64: sleeping, running, stopped, uninterruptible,
 * io_wait). Returns 0 or -EBADMSG when shorter than that. */
int cgroupstats_parse_payload(const void *data, size_t len, TaskStateCounts *ret);
