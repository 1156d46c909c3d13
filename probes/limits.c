/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/limits.h"

const char *limits_source_to_string(LimitsSource s) {
        switch (s) {
        case LIMITS_SOURCE_V2:
                return "cgroup2";
        case LIMITS_SOURCE_V1:
                return "cgroup-v1";
        default:
                return "none";
        }
}

/* [buf, buf+len) without trailing newlines. */
static size_t trim_len(const char *buf, size_t len) {
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        return len;
}

static int parse_value_or_max(const char *s, size_t len, uint64_t *ret) {
        if (len == 3 && memcmp(s, "max", 3) == 0) {
                *ret = LIMITS_UNLIMITED;
                return 0;
        }
        return parse_u64_exact(s, len, ret) < 0 ? -EINVAL : 0;
}

int limits_parse_value(const char *buf, size_t len, uint64_t *ret) {
        return parse_value_or_max(buf, trim_len(buf, len), ret);
}

int limits_parse_cpu_max(const char *buf, size_t len, uint64_t *ret_quota_us, uint64_t *ret_period_us) {
        const char *sp;
        uint64_t q, p;

        /* kernel/sched/core.c cpu_max_show(): "%s %llu\n", quota ("max" when RUNTIME_INF) then
         * period. */
        len = trim_len(buf, len);
        sp = memchr(buf, ' ', len);
        if (!sp || parse_value_or_max(buf, (size_t) (sp - buf), &q) < 0 ||
            parse_u64_exact(sp + 1, (size_t) (buf + len - sp - 1), &p) < 0)
                return -EINVAL;
        *ret_quota_us = q;
        *ret_period_us = p;
        return 0;
}

int limits_parse_cfs_quota(const char *buf, size_t len, uint64_t *ret_quota_us) {
        uint64_t q;

        len = trim_len(buf, len);
        /* tg_get_cfs_quota(): -1 when the quota is RUNTIME_INF; any other negative is impossible. */
        if (len == 2 && memcmp(buf, "-1", 2) == 0) {
                *ret_quota_us = LIMITS_UNLIMITED;
                return 0;
        }
        if (parse_u64_exact(buf, len, &q) < 0)
                return -EINVAL;
        *ret_quota_us = q;
        return 0;
}

int limits_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_nr_periods, uint64_t *ret_nr_throttled,
                          uint64_t *ret_throttled_us) {
        uint64_t periods, throttled, us, ns;
        bool has_periods = false, has_throttled = false, has_us = false, has_ns = false;
        const KeyedWant want[] = {
                { "nr_periods", &periods, &has_periods },
                { "nr_throttled", &throttled, &has_throttled },
                { "throttled_usec", &us, &has_us },
                /* cgroup-v1 cpu.stat (cpu_cfs_stat_show()): throttled_time in ns. */
                { "throttled_time", &ns, &has_ns },
        };

        parse_keyed(buf, len, UNPARSED_CPU_STAT, want, ELEMENTSOF(want));
        if (!has_periods)
                return -ENOENT;
        if (!has_throttled || (!has_us && !has_ns))
                return -EINVAL;
        *ret_nr_periods = periods;
        *ret_nr_throttled = throttled;
        *ret_throttled_us = has_us ? us : ns / 1000;
        return 0;
}

int limits_parse_memory_events(const char *buf, size_t len, MemoryEvents *ret) {
        MemoryEvents e = {};
        const KeyedWant want[] = {
                { "high", &e.high, &e.has_high },
                { "max", &e.max, &e.has_max },
                { "oom", &e.oom, &e.has_oom },
                { "oom_kill", &e.oom_kill, &e.has_oom_kill },
        };

        parse_keyed(buf, len, UNPARSED_MEMORY_EVENTS, want, ELEMENTSOF(want));
        *ret = e;
        return 0;
}

/* Keys of memory.stat, with the first of each row that the file has winning. */
typedef struct StatKey {
        const char *names[3];
        uint64_t *value;
        bool *has;
} StatKey;

int limits_parse_memory_stat(const char *buf, size_t len, bool v1, MemoryLimits *m) {
        MemoryLimits c = *m;
        /* cgroup2: before 5.9 (commit 170b04b7ae49) one refault counter, of file refaults only.
         * cgroup-v1 (memcg1_stat_format()): the local counters, then "total_" ones for the
         * subtree, which win. */
        const StatKey v2[] = {
                { { "anon" }, &c.anon_bytes, &c.has_anon },
                { { "file" }, &c.file_bytes, &c.has_file },
                { { "workingset_refault_anon" }, &c.refault_anon, &c.has_refault_anon },
                { { "workingset_refault_file", "workingset_refault" }, &c.refault_file, &c.has_refault_file },
        };
        const StatKey v1_keys[] = {
                { { "total_rss", "rss" }, &c.anon_bytes, &c.has_anon },
                { { "total_cache", "cache" }, &c.file_bytes, &c.has_file },
                { { "total_workingset_refault_anon" }, &c.refault_anon, &c.has_refault_anon },
                { { "total_workingset_refault_file", "total_workingset_refault" },
                  &c.refault_file,
                  &c.has_refault_file },
        };
        const StatKey *keys = v1 ? v1_keys : v2;
        uint64_t values[4][3];
        bool has[4][3] = {};
        KeyedWant want[12];
        size_t n = 0;

        for (size_t i = 0; i < 4; i++)
                for (size_t j = 0; j < 3 && keys[i].names[j]; j++)
                        want[n++] = (KeyedWant) { keys[i].names[j], &values[i][j], &has[i][j] };
        parse_keyed(buf, len, UNPARSED_MEMORY_STAT, want, n);
        for (size_t i = 0; i < 4; i++)
                for (size_t j = 0; j < 3 && keys[i].names[j]; j++)
                        if (has[i][j]) {
                                *keys[i].value = values[i][j];
                                *keys[i].has = true;
                                break;
                        }
        *m = c;
        return 0;
}

uint64_t limits_v1_memory_limit(uint64_t bytes, uint64_t page_size) {
        uint64_t max;

        if (page_size == 0)
                page_size = 4096;
        max = (uint64_t) (INT64_MAX / (int64_t) page_size) * page_size;
        return bytes >= max ? LIMITS_UNLIMITED : bytes;
}

/* A one-value file into *v and *has (absent: left alone). 0 or -errno. */
static int read_value(int dirfd, const char *name, bool *has, uint64_t *v) {
        char buf[64];
        size_t n = 0;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        if (limits_parse_value(buf, n, v) < 0)
                return -EINVAL;
        *has = true;
        return 0;
}

/* cpu.stat's throttling lines into c (cgroup2 throttled_usec or v1 throttled_time; the core-only
 * cgroup2 file has none: has_stat stays false). 0 or -errno. */
static int read_cpu_stat(int fd, CpuLimits *c) {
        char buf[1024];
        size_t n = 0;
        int r = read_file_optional_at(fd, "cpu.stat", buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        r = limits_parse_cpu_stat(buf, n, &c->nr_periods, &c->nr_throttled, &c->throttled_us);
        if (r < 0 && r != -ENOENT)
                return r;
        c->has_stat = r >= 0;
        return 0;
}

int limits_read_cpu_v2(int cgroup_fd, CpuLimits *ret) {
        CpuLimits c = { .source = LIMITS_SOURCE_V2 };
        char buf[1024];
        size_t n = 0;
        int r;

        r = read_file_optional_at(cgroup_fd, "cpu.max", buf, sizeof buf, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                if (limits_parse_cpu_max(buf, n, &c.quota_us, &c.period_us) < 0)
                        return -EINVAL;
                c.has_quota = true;
        }
        r = read_cpu_stat(cgroup_fd, &c);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

int limits_read_cpu_v1(int cpu_fd, CpuLimits *ret) {
        CpuLimits c = { .source = LIMITS_SOURCE_V1 };
        char buf[1024];
        size_t n = 0;
        bool has_period = false;
        int r;

        r = read_file_optional_at(cpu_fd, "cpu.cfs_quota_us", buf, sizeof buf, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                if (limits_parse_cfs_quota(buf, n, &c.quota_us) < 0)
                        return -EINVAL;
                r = read_value(cpu_fd, "cpu.cfs_period_us", &has_period, &c.period_us);
                if (r < 0)
                        return r;
                c.has_quota = has_period;
        }
        r = read_cpu_stat(cpu_fd, &c);
        if (r < 0)
                return r;
        *ret = c;
        return 0;
}

/* memory.events-like file into *e (absent: left alone). 0 or -errno. */
static int read_events(int dirfd, const char *name, MemoryEvents *e) {
        char buf[1024];
        size_t n = 0;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        return limits_parse_memory_events(buf, n, e);
}

/* memory.stat into m. 0 or -errno. v1's is long (about 2.5 KiB with its total_ lines). */
static int read_memory_stat(int dirfd, bool v1, MemoryLimits *m) {
        char buf[8192];
        size_t n = 0;
        int r = read_file_optional_at(dirfd, "memory.stat", buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        return limits_parse_memory_stat(buf, n, v1, m);
}

int limits_read_memory_v2(int cgroup_fd, MemoryLimits *ret) {
        MemoryLimits m = { .source = LIMITS_SOURCE_V2 };
        int r;

        r = read_value(cgroup_fd, "memory.max", &m.has_max, &m.max_bytes);
        if (r >= 0)
                r = read_value(cgroup_fd, "memory.high", &m.has_high, &m.high_bytes);
        if (r >= 0)
                r = read_value(cgroup_fd, "memory.current", &m.has_current, &m.current_bytes);
        if (r >= 0)
                r = read_events(cgroup_fd, "memory.events", &m.events);
        if (r >= 0)
                r = read_events(cgroup_fd, "memory.events.local", &m.events_local);
        if (r >= 0)
                r = read_memory_stat(cgroup_fd, false, &m);
        if (r < 0)
                return r;
        *ret = m;
        return 0;
}

int limits_read_memory_v1(int memory_fd, MemoryLimits *ret) {
        MemoryLimits m = { .source = LIMITS_SOURCE_V1 };
        MemoryEvents oom = {};
        uint64_t page_size = (uint64_t) sysconf(_SC_PAGESIZE);
        int r;

        r = read_value(memory_fd, "memory.limit_in_bytes", &m.has_max, &m.max_bytes);
        if (r >= 0)
                r = read_value(memory_fd, "memory.soft_limit_in_bytes", &m.has_soft_limit, &m.soft_limit_bytes);
        if (r >= 0)
                r = read_value(memory_fd, "memory.usage_in_bytes", &m.has_current, &m.current_bytes);
        if (r >= 0)
                r = read_value(memory_fd, "memory.failcnt", &m.events.has_max, &m.events.max);
        if (r >= 0)
                r = read_events(memory_fd, "memory.oom_control", &oom);
        if (r >= 0)
                r = read_memory_stat(memory_fd, true, &m);
        if (r < 0)
                return r;
        m.max_bytes = m.has_max ? limits_v1_memory_limit(m.max_bytes, page_size) : 0;
        m.soft_limit_bytes = m.has_soft_limit ? limits_v1_memory_limit(m.soft_limit_bytes, page_size) : 0;
        /* oom_control's other lines (oom_kill_disable, under_oom) are states, not events. */
        m.events.has_oom_kill = oom.has_oom_kill;
        m.events.oom_kill = oom.oom_kill;
        *ret = m;
        return 0;
}

bool limits_cpu_is_limited(const CpuLimits *c) {
        return c->has_quota && c->quota_us != LIMITS_UNLIMITED;
}

bool limits_memory_is_limited(const MemoryLimits *m) {
        return (m->has_max && m->max_bytes != LIMITS_UNLIMITED) || (m->has_high && m->high_bytes != LIMITS_UNLIMITED);
}

uint64_t limits_counter_delta(uint64_t start, uint64_t end) {
        return end >= start ? end - start : 0;
}

/* One counter of a delta: there only when both readings have it. */
static void counter_delta(bool has_start, uint64_t start, bool has_end, uint64_t end, bool *ret_has, uint64_t *ret) {
        *ret_has = has_start && has_end;
        *ret = *ret_has ? limits_counter_delta(start, end) : 0;
}

void limits_cpu_delta(const CpuLimits *start, const CpuLimits *end, CpuLimits *ret) {
        CpuLimits d = *end;

        d.has_stat = start->has_stat && end->has_stat;
        d.nr_periods = d.has_stat ? limits_counter_delta(start->nr_periods, end->nr_periods) : 0;
        d.nr_throttled = d.has_stat ? limits_counter_delta(start->nr_throttled, end->nr_throttled) : 0;
        d.throttled_us = d.has_stat ? limits_counter_delta(start->throttled_us, end->throttled_us) : 0;
        *ret = d;
}

static void events_delta(const MemoryEvents *a, const MemoryEvents *b, MemoryEvents *ret) {
        counter_delta(a->has_high, a->high, b->has_high, b->high, &ret->has_high, &ret->high);
        counter_delta(a->has_max, a->max, b->has_max, b->max, &ret->has_max, &ret->max);
        counter_delta(a->has_oom, a->oom, b->has_oom, b->oom, &ret->has_oom, &ret->oom);
        counter_delta(a->has_oom_kill, a->oom_kill, b->has_oom_kill, b->oom_kill, &ret->has_oom_kill, &ret->oom_kill);
}

void limits_memory_delta(const MemoryLimits *start, const MemoryLimits *end, MemoryLimits *ret) {
        MemoryLimits d = *end;

        events_delta(&start->events, &end->events, &d.events);
        events_delta(&start->events_local, &end->events_local, &d.events_local);
        counter_delta(start->has_refault_anon, start->refault_anon, end->has_refault_anon, end->refault_anon,
                      &d.has_refault_anon, &d.refault_anon);
        counter_delta(start->has_refault_file, start->refault_file, end->has_refault_file, end->refault_file,
                      &d.has_refault_file, &d.refault_file);
        *ret = d;
}
