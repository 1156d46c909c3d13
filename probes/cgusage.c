/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"

#include "base/fileio.h"
#include "base/parse.h"
#include "base/unparsed.h"
#include "probes/cgusage.h"
#include "probes/cgwalk.h"
#include "probes/sysroot.h"

int cgroup_usage_parse_cpu_stat(const char *buf, size_t len, uint64_t *ret_us) {
        bool has = false;
        uint64_t v;

        parse_keyed(buf, len, UNPARSED_CPU_STAT, &(KeyedWant) { "usage_usec", &v, &has }, 1);
        if (!has)
                return -ENOENT;
        *ret_us = v;
        return 0;
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

        while (line_next(&p, end, &line, &le)) {
                const char *s;

                if (line == le)
                        continue;
                uint64_t lr = 0, lw = 0;
                bool bad = parse_device(line, le, &s) < 0;

                /* Space-separated key=value tokens; only rbytes and wbytes matter (other keys,
                 * such as iocost's "cost.vrate=100.00", may hold anything). */
                while (!bad && s < le) {
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
                                bad = true;
                        else if (tok[0] == 'r')
                                lr = v;
                        else
                                lw = v;
                }
                /* A line it cannot read costs that line (a device without a name reads
                 * "(unknown) " on 6.12 and later: kernel-facts.md: unknown-lines). */
                if (bad) {
                        unparsed_note(UNPARSED_IO_STAT, line, le);
                        continue;
                }
                /* Sums of byte counters: saturate rather than wrap. */
                r = r + lr < r ? UINT64_MAX : r + lr;
                w = w + lw < w ? UINT64_MAX : w + lw;
        }
        *ret_read = r;
        *ret_write = w;
        return 0;
}

int cgroup_usage_parse_blkio_bytes(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write) {
        const char *p = buf, *end = buf + len, *line, *le;
        uint64_t r = 0, w = 0;

        while (line_next(&p, end, &line, &le)) {
                const char *s, *name = NULL, *sp = NULL;
                uint64_t v;

                if (line == le || (le - line >= 6 && memcmp(line, "Total ", 6) == 0))
                        continue;
                if (parse_device(line, le, &s) < 0 || s >= le || *s != ' ' ||
                    !(sp = memchr(name = s + 1, ' ', (size_t) (le - s - 1))) ||
                    parse_u64_exact(sp + 1, (size_t) (le - sp - 1), &v) < 0) {
                        unparsed_note(UNPARSED_BLKIO, line, le);
                        continue;
                }
                if (sp - name == 4 && memcmp(name, "Read", 4) == 0)
                        r = r + v < r ? UINT64_MAX : r + v;
                else if (sp - name == 5 && memcmp(name, "Write", 5) == 0)
                        w = w + v < w ? UINT64_MAX : w + v;
        }
        *ret_read = r;
        *ret_write = w;
        return 0;
}

/* A file holding one decimal and a newline (memory.current, cpuacct.usage): *ret and *has set
 * when it is there. 0 (also when missing), or -errno. */
static int read_single(int dirfd, const char *name, bool *has, uint64_t *ret) {
        char buf[64];
        size_t n = 0;
        size_t len;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

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
        size_t n = 0;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        r = parse(buf, (size_t) n, ret_a, ret_b);
        if (r < 0)
                return r;
        *has = true;
        return 0;
}

int cgroup_usage_parse_dirty(const char *buf, size_t len, uint64_t *ret) {
        uint64_t dirty = 0, wb = 0;
        bool has_dirty = false, has_wb = false;
        const KeyedWant want[] = { { "file_dirty", &dirty, &has_dirty }, { "file_writeback", &wb, &has_wb } };

        parse_keyed(buf, len, UNPARSED_MEMORY_STAT, want, ELEMENTSOF(want));
        if (!has_dirty || !has_wb)
                return -ENOENT;
        *ret = dirty + wb;
        return 0;
}

/* The page cache of the cgroup that waits for the disks (io: who dirtied the writeback). A cgroup
 * without the memory controller has no memory.stat: has_dirty stays false. */
static void read_dirty(int cgroup_fd, CgroupUsage *u) {
        char buf[16384];
        size_t n = 0;

        if (read_file_optional_at(cgroup_fd, "memory.stat", buf, sizeof buf, &n) > 0)
                u->has_dirty = cgroup_usage_parse_dirty(buf, n, &u->dirty_bytes) >= 0;
}

/* The cgroup2 file of one resource's counter into u (missing: has_* stays false). 0 or -errno. */
static int read_v2_counter(int cgroup_fd, PsiResource resource, CgroupUsage *u) {
        char buf[4096];
        size_t n = 0;
        int r;

        switch (resource) {
        case PSI_RESOURCE_CPU:
                r = read_file_optional_at(cgroup_fd, "cpu.stat", buf, sizeof buf, &n);
                if (r <= 0)
                        return r;
                r = cgroup_usage_parse_cpu_stat(buf, n, &u->cpu_us);
                u->has_cpu = r >= 0;
                return r == -ENOENT ? 0 : r;
        case PSI_RESOURCE_IO:
                read_dirty(cgroup_fd, u);
                return read_pair(cgroup_fd, "io.stat", cgroup_usage_parse_io_stat, &u->has_io, &u->read_bytes,
                                 &u->write_bytes);
        case PSI_RESOURCE_MEMORY:
                return read_single(cgroup_fd, "memory.current", &u->has_memory, &u->memory_bytes);
        default:
                return 0;
        }
}

int cgroup_usage_read_v2(int cgroup_fd, CgroupUsage *ret) {
        static const PsiResource resources[] = { PSI_RESOURCE_CPU, PSI_RESOURCE_IO, PSI_RESOURCE_MEMORY };
        CgroupUsage u = {};

        for (size_t i = 0; i < ELEMENTSOF(resources); i++) {
                int r = read_v2_counter(cgroup_fd, resources[i], &u);
                if (r < 0)
                        return r;
        }
        *ret = u;
        return 0;
}

bool cgroup_usage_has(const CgroupUsage *u, PsiResource resource) {
        switch (resource) {
        case PSI_RESOURCE_CPU:
                return u->has_cpu;
        case PSI_RESOURCE_IO:
                return u->has_io;
        case PSI_RESOURCE_MEMORY:
                return u->has_memory;
        default:
                return false;
        }
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

/* Cgroups one walk reads at most (a node of many thousands: the rest count in their parents). */
#define CGROUP_USAGES_MAX 8192

void cgroup_usages_clear(CgroupUsages *t) {
        t->n = 0;
        t->names_len = 0;
        tid_list_clear(&t->pids);
        t->self = 0;
        t->has_self = false;
}

bool cgroup_usages_complete(const CgroupUsages *t) {
        for (size_t i = 0; i < t->n; i++)
                if (t->items[i].children_missing)
                        return false;
        return true;
}

void cgroup_usages_done(CgroupUsages *t) {
        free(t->items);
        free(t->names);
        tid_list_done(&t->pids);
        *t = (CgroupUsages) {};
}

/* Only the counter of resource: a culprit pass ranks on one. */
static int read_one(int fd, int v1_fd, PsiResource resource, CgroupUsage *ret) {
        CgroupUsage u = {};
        int r;

        r = read_v2_counter(fd, resource, &u);
        if (r < 0)
                return r;
        if (!cgroup_usage_has(&u, resource)) {
                r = cgroup_usage_read_v1(resource == PSI_RESOURCE_CPU ? v1_fd : -1,
                                         resource == PSI_RESOURCE_IO ? v1_fd : -1,
                                         resource == PSI_RESOURCE_MEMORY ? v1_fd : -1, &u);
                /* A v1 twin being removed is as good as absent. */
                if (r < 0 && !(r == -ENODEV || r == -ENOENT))
                        return r;
        }
        *ret = u;
        return 0;
}

static int push_entry(CgroupUsages *t, int fd, int v1_fd, PsiResource resource, const char *path, size_t len,
                      size_t parent) {
        CgroupUsage u;
        size_t first = t->pids.n;
        int r;

        r = read_one(fd, v1_fd, resource, &u);
        if (r < 0)
                return r;
        r = cgroup_list_own_processes(fd, &t->pids);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                t->pids.n = first; /* being removed: no processes */
        if (array_grow((void **) &t->items, &t->cap, t->n, 64, sizeof *t->items) < 0 ||
            array_reserve((void **) &t->names, &t->names_cap, t->names_len + len + 1, 1) < 0)
                return -ENOMEM;
        t->items[t->n++] = (CgroupUsageEntry) {
                .path = t->names_len,
                .parent = parent,
                .first_pid = first,
                .n_pids = t->pids.n - first,
                .usage = u,
        };
        memcpy(t->names + t->names_len, path, len);
        t->names[t->names_len + len] = '\0';
        t->names_len += len + 1;
        return 0;
}

typedef struct UsageWalk {
        int v1_fd;
        PsiResource resource;
        CgroupUsages *t;
} UsageWalk;

static int visit_usage(CgroupWalkNode *node, void *userdata) {
        UsageWalk *uw = userdata;
        _cleanup_close_ int v1_child = -EBADF;
        int v1 = uw->v1_fd;

        if (node->depth == 0) {
                node->tag = uw->t->n;
                return push_entry(uw->t, node->fd, v1, uw->resource, "", 0, CGROUP_USAGE_NO_PARENT);
        }
        if (uw->t->n >= CGROUP_USAGES_MAX)
                return -E2BIG; /* a node of many thousands: the rest counts in their parents */
        /* The v1 twin at the same path, or none: then only cgroup2's counter. */
        if (v1 >= 0)
                v1 = v1_child = openat(v1, node->path, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        node->tag = uw->t->n;
        return push_entry(uw->t, node->fd, v1, uw->resource, node->path, node->path_len, node->parent->tag);
}

static void mark_unreadable(const CgroupWalkNode *parent, const char *name, int error, void *userdata) {
        UsageWalk *uw = userdata;

        uw->t->items[parent->tag].children_missing = true; /* what is below counts in parent */
}

int cgroup_usages_read(int dirfd, int v1_fd, PsiResource resource, CgroupUsages *t) {
        UsageWalk uw = { .v1_fd = v1_fd, .resource = resource, .t = t };
        int r;

        r = cgroup_walk(dirfd, &(CgroupWalk) {
                                       .visit = visit_usage,
                                       .unreadable = mark_unreadable,
                                       .userdata = &uw,
                               });
        return r < 0 ? r : 0;
}
