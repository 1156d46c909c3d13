/* SPDX-License-Identifier: MIT */
/* A cgroup's cpu and memory limits and the counters that say how hard it hit them (the incident's
 * "limits", sampling/onwhat.h): cgroup2 cpu.max, cpu.stat, memory.{max,high,current,events,events.local,
 * stat}, or their cgroup-v1 equivalents on hybrid hosts (cpu.cfs_{quota,period}_us, cpu.stat,
 * memory.{limit_in_bytes,soft_limit_in_bytes,usage_in_bytes,failcnt,oom_control,stat}). A missing
 * file is "absent" (has_* false), never a failure. Parsers are pure; readers read beneath a
 * directory fd. Io lives in limits-io.h, finding the cgroup that sets a limit in limits-find.h.
 * Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "max" in cgroup2, -1 in cpu.cfs_quota_us, PAGE_COUNTER_MAX pages in v1 memory limits. */
#define LIMITS_UNLIMITED UINT64_MAX

typedef enum LimitsSource {
        LIMITS_SOURCE_NONE, /* no hierarchy has the controller */
        LIMITS_SOURCE_V2,   /* the cgroup2 files */
        LIMITS_SOURCE_V1,   /* the cgroup-v1 controller's files */
} LimitsSource;

const char *limits_source_to_string(LimitsSource s);

typedef struct CpuLimits {
        LimitsSource source;
        bool has_quota;    /* cpu.max (v2), cpu.cfs_quota_us and cpu.cfs_period_us (v1) */
        uint64_t quota_us; /* LIMITS_UNLIMITED when there is none */
        uint64_t period_us;
        bool has_stat; /* cpu.stat with the cpu controller's lines (v2 core cpu.stat lacks them) */
        uint64_t nr_periods, nr_throttled;
        uint64_t throttled_us; /* v2 throttled_usec; v1 throttled_time is ns, divided by 1000 */
} CpuLimits;

typedef struct MemoryEvents {
        bool has_high, has_max, has_oom, has_oom_kill;
        uint64_t high;     /* v2: times reclaim was forced by memory.high; v1: never */
        uint64_t max;      /* v2: times usage was about to go over memory.max; v1: memory.failcnt,
                            * times a charge hit limit_in_bytes (the closest v1 has) */
        uint64_t oom;      /* v2 only: times the cgroup hit its limit and reclaim failed */
        uint64_t oom_kill; /* v2 memory.events, v1 memory.oom_control */
} MemoryEvents;

typedef struct MemoryLimits {
        LimitsSource source;
        bool has_max, has_high, has_soft_limit, has_current;
        uint64_t max_bytes;        /* v2 memory.max, v1 memory.limit_in_bytes; LIMITS_UNLIMITED */
        uint64_t high_bytes;       /* v2 memory.high only: v1's soft limit is not a throttle (it only
                                    * orders global reclaim), so a v1 cgroup never has a high */
        uint64_t soft_limit_bytes; /* v1 memory.soft_limit_in_bytes, for what it is worth */
        uint64_t current_bytes;    /* v2 memory.current, v1 memory.usage_in_bytes */
        /* v2 memory.events counts the events of the whole subtree (unless the cgroup2 mount has
         * memory_localevents), memory.events.local those raised at the cgroup itself: the max and
         * high events of a limit are raised where the limit is, oom_kill where the victim was.
         * v1 memcgs have only local counts, given in events. */
        MemoryEvents events, events_local;
        /* memory.stat: v2 anon/file/workingset_refault_{anon,file}; v1 total_rss/total_cache (the
         * subtree; rss/cache without use_hierarchy's totals) and total_workingset_refault_*;
         * kernels before 5.9 have one workingset_refault, of file pages only. */
        bool has_anon, has_file, has_refault_anon, has_refault_file;
        uint64_t anon_bytes, file_bytes, refault_anon, refault_file;
} MemoryLimits;

/* A file holding one value and maybe a newline: a decimal, or "max" (LIMITS_UNLIMITED). 0 or
 * -EINVAL. */
int limits_parse_value(const char *buf, size_t len, uint64_t *ret);

/* cgroup2 cpu.max: "max 100000" or "50000 100000" (quota then period, in us). 0 or -EINVAL. */
int limits_parse_cpu_max(const char *buf, size_t len, uint64_t *ret_quota_us, uint64_t *ret_period_us);

/* cgroup-v1 cpu.cfs_quota_us: a decimal, or -1 for none (LIMITS_UNLIMITED). 0 or -EINVAL. */
int limits_parse_cfs_quota(const char *buf, size_t len, uint64_t *ret_quota_us);

/* cpu.stat's throttling lines: nr_periods, nr_throttled, and throttled_usec (cgroup2) or
 * throttled_time in ns (cgroup-v1), in us. 0; -ENOENT when they are missing (a cgroup2 cpu.stat
 * without the cpu controller has only the usage lines); -EINVAL when nr_throttled or the
 * throttled time could not be read (a line that is not "key N" costs that line). */
int limits_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_nr_periods, uint64_t *ret_nr_throttled,
                          uint64_t *ret_throttled_us);

/* cgroup2 memory.events(.local) or cgroup-v1 memory.oom_control ("oom_kill N" is all they share):
 * each of the high, max, oom and oom_kill lines that is there. A line that is not "key N" costs
 * that line (base/parse.h: parse_keyed()). 0. */
int limits_parse_memory_events(const char *buf, size_t len, MemoryEvents *ret);

/* The stat lines of MemoryLimits from a memory.stat buffer (v1 when v1): each key that is there
 * sets its has_*, the others are left alone; a line that is not "key N" costs that line. 0. */
int limits_parse_memory_stat(const char *buf, size_t len, bool v1, MemoryLimits *m);

/* A cgroup-v1 memory limit in bytes as a limit: LIMITS_UNLIMITED when it is PAGE_COUNTER_MAX
 * pages (LONG_MAX / page_size, what an unset limit reads as: 9223372036854771712 with 4 KiB
 * pages, include/linux/page_counter.h), else bytes. */
uint64_t limits_v1_memory_limit(uint64_t bytes, uint64_t page_size);

/* Read the cgroup directory at fd (cgroup2) or the controller's v1 directory of the cgroup: every
 * file that is there; missing ones leave their has_* false (fd < 0 reads nothing). *ret is set
 * to what was read, source included. 0, or -errno when the cgroup is gone (-ENOENT/-ENODEV via
 * cgroup_is_gone(), for the directory itself) or a file is malformed (-EINVAL). */
int limits_read_cpu_v2(int cgroup_fd, CpuLimits *ret);
int limits_read_cpu_v1(int cpu_fd, CpuLimits *ret);
int limits_read_memory_v2(int cgroup_fd, MemoryLimits *ret);
int limits_read_memory_v1(int memory_fd, MemoryLimits *ret);

/* Whether the reading sets a limit: a cpu quota; a finite memory max or high. */
bool limits_cpu_is_limited(const CpuLimits *c);
bool limits_memory_is_limited(const MemoryLimits *m);

/* end - start for a counter, 0 when it went backwards (the cgroup was removed and made again
 * between the readings): a delta is never negative. */
uint64_t limits_counter_delta(uint64_t start, uint64_t end);

/* The readings of a sample's start and end as one: limits and levels (quota, max, high,
 * current, anon, file) as at the end, counters (nr_periods, nr_throttled, throttled_us, events,
 * refaults) as their growth. A counter is there only when both readings have it. Never fails. */
void limits_cpu_delta(const CpuLimits *start, const CpuLimits *end, CpuLimits *ret);
void limits_memory_delta(const MemoryLimits *start, const MemoryLimits *end, MemoryLimits *ret);
