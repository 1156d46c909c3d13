/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/fileio.h"
#include "base/parse.h"
#include "probes/cgusage.h"

int cgroup_usage_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_us) {
        const char *p, *le;

        if (line_find(buf, len, "usage_usec ", &p, &le) < 0)
                return -ENOENT;
        return parse_u64_exact(p, (size_t) (le - p), ret_us) < 0 ? -EINVAL : 0;
}

/* The next line of [*p, end): [*ret_line, *ret_end), and *p past it. False at the end. */
static bool next_line(const char **p, const char *end, const char **ret_line, const char **ret_end) {
        const char *nl;

        if (*p >= end)
                return false;
        nl = memchr(*p, '\n', (size_t) (end - *p));
        *ret_line = *p;
        *ret_end = nl ? nl : end;
        *p = nl ? nl + 1 : end;
        return true;
}

/* "MAJ:MIN" at the start of [s, end), and *ret_rest after it. */
static int parse_device(const char *s, const char *end, const char **ret_rest) {
        uint64_t v;

        if (parse_u64_prefix(s, end, &v, &s) < 0 || s >= end || *s != ':' || parse_u64_prefix(s + 1, end, &v, &s) < 0)
                return -EINVAL;
        *ret_rest = s;
        return 0;
}

int cgroup_usage_parse_io_stat(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write) {
        const char *p = buf, *end = buf + len, *line, *le;
        uint64_t r = 0, w = 0;

        while (next_line(&p, end, &line, &le)) {
                const char *s;

                if (line == le)
                        continue;
                if (parse_device(line, le, &s) < 0)
                        return -EINVAL;
                /* Space-separated key=value tokens; only rbytes and wbytes matter (other keys,
                 * such as iocost's "cost.vrate=100.00", may hold anything). */
                while (s < le) {
                        const char *tok, *te, *eq;
                        uint64_t v;

                        while (s < le && *s == ' ')
                                s++;
                        tok = s;
                        te = memchr(s, ' ', (size_t) (le - s));
                        if (!te)
                                te = le;
                        s = te;
                        eq = memchr(tok, '=', (size_t) (te - tok));
                        if (!eq || eq - tok != 6 || (memcmp(tok, "rbytes", 6) != 0 && memcmp(tok, "wbytes", 6) != 0))
                                continue;
                        if (parse_u64_exact(eq + 1, (size_t) (te - eq - 1), &v) < 0)
                                return -EINVAL;
                        /* Sums of byte counters: saturate rather than wrap. */
                        if (tok[0] == 'r')
                                r = r + v < r ? UINT64_MAX : r + v;
                        else
                                w = w + v < w ? UINT64_MAX : w + v;
                }
        }
        *ret_read = r;
        *ret_write = w;
        return 0;
}

int cgroup_usage_parse_blkio_bytes(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write) {
        const char *p = buf, *end = buf + len, *line, *le;
        uint64_t r = 0, w = 0;

        while (next_line(&p, end, &line, &le)) {
                const char *s;
                uint64_t v;

                if (line == le || (le - line >= 6 && memcmp(line, "Total ", 6) == 0))
                        continue;
                if (parse_device(line, le, &s) < 0 || s >= le || *s != ' ')
                        return -EINVAL;
                s++;
                const char *name = s, *sp = memchr(s, ' ', (size_t) (le - s));
                if (!sp || parse_u64_exact(sp + 1, (size_t) (le - sp - 1), &v) < 0)
                        return -EINVAL;
                if (sp - name == 4 && memcmp(name, "Read", 4) == 0)
                        r = r + v < r ? UINT64_MAX : r + v;
                else if (sp - name == 5 && memcmp(name, "Write", 5) == 0)
                        w = w + v < w ? UINT64_MAX : w + v;
        }
        *ret_read = r;
        *ret_write = w;
        return 0;
}

/* Reads dirfd/name into buf. 1 when read, 0 when the file is missing (ENOENT: the controller is
 * not there), or -errno (-ENODEV: the cgroup is gone). */
static int read_counter(int dirfd, const char *name, char *buf, size_t size, ssize_t *ret_len) {
        ssize_t n;

        if (dirfd < 0)
                return 0;
        n = read_file_at(dirfd, name, buf, size);
        if (n == -ENOENT)
                return 0;
        if (n < 0)
                return (int) n;
        *ret_len = n;
        return 1;
}

/* A file holding one decimal and a newline (memory.current, cpuacct.usage): *ret and *has set
 * when it is there. 0 (also when missing), or -errno. */
static int read_single(int dirfd, const char *name, bool *has, uint64_t *ret) {
        char buf[64];
        ssize_t n = 0;
        size_t len;
        int r = read_counter(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        len = (size_t) n;
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        if (parse_u64_exact(buf, len, ret) < 0)
                return -EINVAL;
        *has = true;
        return 0;
}

/* A file of one of the multi-line formats: parse sets the two values. Same returns. */
static int read_pair(int dirfd, const char *name, int (*parse)(const char *, size_t, uint64_t *, uint64_t *), bool *has,
                     uint64_t *ret_a, uint64_t *ret_b) {
        char buf[16384];
        ssize_t n = 0;
        int r = read_counter(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        r = parse(buf, (size_t) n, ret_a, ret_b);
        if (r < 0)
                return r;
        *has = true;
        return 0;
}

int cgroup_usage_read_v2(int cgroup_fd, CgroupUsage *ret) {
        CgroupUsage u = {};
        char buf[4096];
        ssize_t n = 0;
        int r;

        r = read_counter(cgroup_fd, "cpu.stat", buf, sizeof buf, &n);
        if (r < 0)
                return r;
        if (r > 0) {
                r = cgroup_usage_parse_cpu_stat(buf, (size_t) n, &u.cpu_us);
                if (r < 0 && r != -ENOENT)
                        return r;
                u.has_cpu = r >= 0;
        }
        r = read_pair(cgroup_fd, "io.stat", cgroup_usage_parse_io_stat, &u.has_io, &u.read_bytes, &u.write_bytes);
        if (r >= 0)
                r = read_single(cgroup_fd, "memory.current", &u.has_memory, &u.memory_bytes);
        if (r < 0)
                return r;
        *ret = u;
        return 0;
}

int cgroup_usage_read_v1(int cpuacct_fd, int blkio_fd, int memory_fd, CgroupUsage *ret) {
        CgroupUsage u = *ret;
        uint64_t ns = 0;
        int r = 0;

        if (!u.has_cpu) {
                r = read_single(cpuacct_fd, "cpuacct.usage", &u.has_cpu, &ns);
                u.cpu_us = u.has_cpu ? ns / 1000 : u.cpu_us;
        }
        if (r >= 0 && !u.has_io) {
                r = read_pair(blkio_fd, "blkio.throttle.io_service_bytes_recursive", cgroup_usage_parse_blkio_bytes,
                              &u.has_io, &u.read_bytes, &u.write_bytes);
                if (r >= 0 && !u.has_io)
                        r = read_pair(blkio_fd, "blkio.throttle.io_service_bytes", cgroup_usage_parse_blkio_bytes,
                                      &u.has_io, &u.read_bytes, &u.write_bytes);
        }
        if (r >= 0 && !u.has_memory)
                r = read_single(memory_fd, "memory.usage_in_bytes", &u.has_memory, &u.memory_bytes);
        if (r < 0)
                return r;
        *ret = u;
        return 0;
}
