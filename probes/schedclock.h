/* SPDX-License-Identifier: MIT */
/* How long a sleeping thread has slept: /proc/<tid>/sched's se.exec_start (when it last ran, in
 * the clock of the cpu it ran on) against that same cpu's clock now, read by moving the calling
 * thread there for one read of its own /proc/thread-self/sched (kernel-facts.md: blocked-since).
 * No capability and no sysctl: /proc/<tid>/sched is world-readable, and the agent may run on every
 * cpu of its cpuset. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* se.exec_start in ns from a /proc/<tid>/sched buffer (its line "se.exec_start : 12216084.115060",
 * milliseconds with six decimals). 0, or -EINVAL when the line is missing or malformed. */
int schedclock_parse_exec_start(const char *buf, size_t len, uint64_t *ret_ns);

/* Reads se.exec_start of thread tid (/proc/<tid>/sched: a thread's own, not its leader's). 0;
 * -ESRCH when it is gone; -EINVAL; other -errno. */
int schedclock_read_exec_start(int proc_fd, pid_t tid, uint64_t *ret_ns);

/* The clock of cpu now, as se.exec_start counts it: the calling thread moved to cpu (and given up
 * the cpu once, so that its own se.exec_start is this moment's), read, and moved back to the cpus
 * it had. 0; -EINVAL when cpu is not one the caller may run on (its cpuset); other -errno. */
int schedclock_now_on(int proc_fd, int cpu, uint64_t *ret_ns);

/* The clocks of the cpus asked for during one look, each read once. */
#define SCHEDCLOCK_CPUS_MAX 64
typedef struct SchedClockCache {
        int proc_fd;
        size_t n;
        struct {
                int cpu;
                int error; /* 0, or schedclock_now_on()'s error */
                uint64_t now_ns;
        } cpus[SCHEDCLOCK_CPUS_MAX];
} SchedClockCache;

void schedclock_cache_init(SchedClockCache *c, int proc_fd);

/* How long thread tid, which last ran on cpu, has not run: the clock of cpu now minus its
 * se.exec_start. 0; -ESRCH (gone); -ENODATA when the kernel reset its se.exec_start (0, after a
 * migration) or it lies ahead of the clock; -EINVAL (cpu not ours); -E2BIG past
 * SCHEDCLOCK_CPUS_MAX cpus in one look; other -errno. */
int schedclock_idle_ns(SchedClockCache *c, pid_t tid, int cpu, uint64_t *ret_ns);
