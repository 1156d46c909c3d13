/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/cgwalk.h"
#include "probes/limits-find.h"

/* Bounds of the search for a process in an empty cgroup's subtree. */
#define SEARCH_DIRS_MAX 64
#define SEARCH_DEPTH_MAX 8
#define SEARCH_PIDS_PER_DIR 8

/* Per PsiResource: the controller's name on cgroup2, on v1, and the Sysroot's v1 mount of it. */
static const char *const v2_names[_PSI_RESOURCE_MAX] = { "cpu", "memory", "io" };
static const char *const v1_names[_PSI_RESOURCE_MAX] = { "cpu", "memory", "blkio" };
static const CgroupV1Controller v1_mounts[_PSI_RESOURCE_MAX] = {
        [PSI_RESOURCE_CPU] = CGROUP_V1_CPU,
        [PSI_RESOURCE_MEMORY] = CGROUP_V1_MEMORY,
        [PSI_RESOURCE_IO] = CGROUP_V1_BLKIO,
};

static bool has_limits(PsiResource r) {
        return r == PSI_RESOURCE_CPU || r == PSI_RESOURCE_MEMORY || r == PSI_RESOURCE_IO;
}

const char *limits_kind_file(LimitsKind k) {
        static const char *const names[_LIMITS_KIND_MAX] = {
                [LIMITS_KIND_CPU_MAX] = "cpu.max",
                [LIMITS_KIND_CPU_CFS_QUOTA] = "cpu.cfs_quota_us",
                [LIMITS_KIND_MEMORY_MAX] = "memory.max",
                [LIMITS_KIND_MEMORY_HIGH] = "memory.high",
                [LIMITS_KIND_MEMORY_LIMIT_IN_BYTES] = "memory.limit_in_bytes",
                [LIMITS_KIND_IO_MAX] = "io.max",
                [LIMITS_KIND_BLKIO_THROTTLE] = "blkio.throttle",
        };
        return k > LIMITS_KIND_NONE && k < _LIMITS_KIND_MAX ? names[k] : NULL;
}

/* Whether the space-separated list [s, s+len) has word. */
static bool list_has(const char *s, size_t len, char sep, const char *word) {
        size_t wl = strlen(word);
        const char *p = s, *end = s + len;

        while (p < end) {
                const char *e = memchr(p, sep, (size_t) (end - p));
                size_t n = (size_t) ((e ? e : end) - p);

                if (n == wl && memcmp(p, word, wl) == 0)
                        return true;
                p = e ? e + 1 : end;
        }
        return false;
}

int limits_hierarchy_open(const Sysroot *s, LimitsHierarchy **ret) {
        LimitsHierarchy *h;
        char controllers[512];
        ssize_t n = -ENOENT;

        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        h->sysroot = s;
        for (size_t i = 0; i < _PSI_RESOURCE_MAX; i++)
                h->v1_fd[i] = -EBADF;

        if (s->cgroup2_fd >= 0)
                n = read_file_at(s->cgroup2_fd, "cgroup.controllers", controllers, sizeof controllers);
        for (PsiResource res = 0; res < _PSI_RESOURCE_MAX; res++) {
                if (!has_limits(res))
                        continue;
                if (n >= 0 &&
                    list_has(controllers, (size_t) n - (n > 0 && controllers[n - 1] == '\n'), ' ', v2_names[res])) {
                        h->source[res] = LIMITS_SOURCE_V2;
                        continue;
                }
                /* A mount we cannot open (another mount namespace's leftovers) is no controller. */
                if (sysroot_open_v1_mount(s, v1_mounts[res], &h->v1_fd[res]) >= 0)
                        h->source[res] = LIMITS_SOURCE_V1;
        }
        *ret = h;
        return 0;
}

LimitsHierarchy *limits_hierarchy_free(LimitsHierarchy *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < _PSI_RESOURCE_MAX; i++)
                safe_close(h->v1_fd[i]);
        free(h);
        return NULL;
}

int limits_parse_proc_cgroup_v1(const char *buf, size_t len, const char *controller, char *out, size_t size) {
        const char *p = buf, *end = buf + len, *found = NULL, *found_end = NULL;
        size_t n;

        /* cgroup(7): "hierarchy-ID:controller-list:cgroup-path"; a path may contain ':', and a
         * newline (the kernel escapes nothing), which adds a line of its owner's choosing: a
         * controller listed twice is such a forgery, and refused. */
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                const char *c1 = memchr(p, ':', (size_t) (le - p));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (le - c1 - 1)) : NULL;

                if (c2 && list_has(c1 + 1, (size_t) (c2 - c1 - 1), ',', controller)) {
                        if (found)
                                return -EBADMSG;
                        found = c2 + 1;
                        found_end = le;
                }
                p = nl ? nl + 1 : end;
        }
        if (!found)
                return -ENOENT;
        n = (size_t) (found_end - found);
        if (n + 1 > size)
                return -ENOBUFS;
        memcpy(out, found, n);
        out[n] = '\0';
        return 0;
}

static int mount_fd_of(const LimitsHierarchy *h, PsiResource res, LimitsSource source) {
        if (source == LIMITS_SOURCE_V2)
                return h->sysroot->cgroup2_fd >= 0 ? h->sysroot->cgroup2_fd : -ENODEV;
        if (source == LIMITS_SOURCE_V1 && has_limits(res) && h->v1_fd[res] >= 0)
                return h->v1_fd[res];
        return -ENODEV;
}

int limits_open_cgroup(const LimitsHierarchy *h, PsiResource resource, LimitsSource source, const char *path,
                       int *ret_fd) {
        int mfd = mount_fd_of(h, resource, source);
        int r;

        if (mfd < 0)
                return mfd;
        r = cgroup_path_validate(path);
        if (r < 0)
                return r;
        /* No symlink, no other mount on the way, as sysroot_open_cgroup(). */
        return cgroup_open_walk(mfd, path, ret_fd);
}

/* The limit on res that the cgroup at fd sets itself, NONE when it sets none. 0, or -errno. */
static int read_setting(int fd, PsiResource res, LimitsSource source, LimitsSetting *ret) {
        bool v1 = source == LIMITS_SOURCE_V1;
        CpuLimits c;
        MemoryLimits m;
        IoLimits io;
        int r;

        *ret = (LimitsSetting) {};
        switch (res) {
        case PSI_RESOURCE_CPU:
                r = v1 ? limits_read_cpu_v1(fd, &c) : limits_read_cpu_v2(fd, &c);
                if (r >= 0 && limits_cpu_is_limited(&c))
                        *ret = (LimitsSetting) { .kind = v1 ? LIMITS_KIND_CPU_CFS_QUOTA : LIMITS_KIND_CPU_MAX,
                                                 .value = c.quota_us,
                                                 .period_us = c.period_us };
                return r;
        case PSI_RESOURCE_MEMORY:
                r = v1 ? limits_read_memory_v1(fd, &m) : limits_read_memory_v2(fd, &m);
                if (r >= 0 && m.has_max && m.max_bytes != LIMITS_UNLIMITED)
                        *ret = (LimitsSetting) { .kind = v1 ? LIMITS_KIND_MEMORY_LIMIT_IN_BYTES
                                                            : LIMITS_KIND_MEMORY_MAX,
                                                 .value = m.max_bytes };
                else if (r >= 0 && m.has_high && m.high_bytes != LIMITS_UNLIMITED)
                        *ret = (LimitsSetting) { .kind = LIMITS_KIND_MEMORY_HIGH, .value = m.high_bytes };
                return r;
        case PSI_RESOURCE_IO:
                r = v1 ? limits_read_io_v1(fd, &io) : limits_read_io_v2(fd, &io);
                if (r >= 0 && limits_io_is_limited(&io))
                        *ret = (LimitsSetting) { .kind = v1 ? LIMITS_KIND_BLKIO_THROTTLE : LIMITS_KIND_IO_MAX };
                return r;
        default:
                return 0;
        }
}

/* From loc->path up to the root of its hierarchy: the first cgroup that sets a limit. */
static int walk_up(const LimitsHierarchy *h, LimitsLocation *loc) {
        char cur[LIMITS_PATH_MAX];

        memcpy(cur, loc->path, sizeof cur);
        for (;;) {
                _cleanup_close_ int fd = -EBADF;
                char *slash;
                int r;

                r = limits_open_cgroup(h, loc->resource, loc->source, cur, &fd);
                if (r < 0)
                        return r;
                r = read_setting(fd, loc->resource, loc->source, &loc->limit);
                if (r < 0)
                        return r;
                if (loc->limit.kind != LIMITS_KIND_NONE) {
                        loc->limited = true;
                        memcpy(loc->limited_path, cur, sizeof cur);
                        return 0;
                }
                if (!cur[0])
                        return 0; /* the root: nothing limits it */
                slash = strrchr(cur, '/');
                if (slash)
                        *slash = '\0';
                else
                        cur[0] = '\0';
        }
}

/* The v1 cgroup of one of the first processes listed in the cgroup2 directory at fd, with
 * suffix ("" or "/child/...", the directory's place below the trigger cgroup) taken off when the
 * v1 path ends with it. 1 found, 0 none there, -errno. */
static int v1_path_of_dir(const LimitsHierarchy *h, int fd, const char *controller, const char *suffix,
                          LimitsLocation *loc) {
        char procs[256], buf[4096], path[LIMITS_PATH_MAX];
        const char *p, *end;
        ssize_t n;
        int tried = 0;

        n = read_file_at(fd, "cgroup.procs", procs, sizeof procs);
        if (n < 0)
                return (int) n == -ENOENT ? 0 : (int) n;
        /* A truncated last line is cut, not misread as a shorter pid. */
        end = procs + n;
        if (n == (ssize_t) sizeof procs - 1)
                while (end > procs && end[-1] != '\n')
                        end--;
        for (p = procs; p < end && tried < SEARCH_PIDS_PER_DIR; tried++) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *le = nl ? nl : end, *rest, *v1;
                char name[64];
                uint64_t pid;
                ssize_t m;
                size_t sl = strlen(suffix), pl;

                if (parse_u64_prefix(p, le, &pid, &rest) < 0 || rest != le || pid == 0 || pid > INT32_MAX)
                        return -EINVAL;
                p = nl ? nl + 1 : end;
                snprintf(name, sizeof name, "%" PRIu64 "/cgroup", pid);
                m = read_file_at(h->sysroot->proc_fd, name, buf, sizeof buf);
                if (m == -ENOENT || m == -ESRCH)
                        continue; /* the process ended since cgroup.procs was read */
                if (m < 0)
                        return (int) m;
                if (limits_parse_proc_cgroup_v1(buf, (size_t) m, controller, path, sizeof path) < 0)
                        continue;
                pl = strlen(path);
                if (sl && pl >= sl && strcmp(path + pl - sl, suffix) == 0)
                        path[pl - sl] = '\0';
                for (v1 = path; *v1 == '/'; v1++)
                        ;
                memmove(loc->path, v1, strlen(v1) + 1);
                loc->via_pid = (pid_t) pid;
                return 1;
        }
        return 0;
}

typedef struct V1Search {
        const LimitsHierarchy *h;
        const char *controller;
        int budget; /* directories still to visit */
        bool found;
        LimitsLocation *loc;
} V1Search;

/* One cgroup2 directory of the search for a process to learn the v1 cgroup from. */
static int visit_v1_search(CgroupWalkNode *node, void *userdata) {
        V1Search *vs = userdata;
        char suffix[LIMITS_PATH_MAX] = "";
        int r;

        if (vs->budget <= 0)
                return CGROUP_WALK_STOP;
        vs->budget--;
        if (node->path_len > 0) {
                if (node->path_len + 2 > sizeof suffix)
                        return -ENAMETOOLONG;
                suffix[0] = '/';
                memcpy(suffix + 1, node->path, node->path_len + 1);
        }
        r = v1_path_of_dir(vs->h, node->fd, vs->controller, suffix, vs->loc);
        if (r <= 0)
                return r;
        vs->found = true;
        return CGROUP_WALK_STOP;
}

int limits_locate(const LimitsHierarchy *h, const char *v2_path, PsiResource resource, LimitsLocation *ret) {
        LimitsLocation loc = { .resource = resource };
        const char *p = v2_path;
        int r;

        if (!has_limits(resource))
                return -EOPNOTSUPP;
        loc.source = h->source[resource];
        while (*p == '/')
                p++;
        if (strlen(p) >= sizeof loc.path)
                return -ENAMETOOLONG;
        if (loc.source == LIMITS_SOURCE_V2)
                strcpy(loc.path, p);
        else if (loc.source == LIMITS_SOURCE_V1) {
                _cleanup_close_ int fd = -EBADF;
                V1Search vs = { .h = h, .controller = v1_names[resource], .budget = SEARCH_DIRS_MAX, .loc = &loc };

                r = limits_open_cgroup(h, resource, LIMITS_SOURCE_V2, p, &fd);
                if (r < 0)
                        return r;
                /* Depth-first through the cgroup2 subtree, bounded, for a process in it. */
                r = cgroup_walk(fd, &(CgroupWalk) {
                                            .visit = visit_v1_search,
                                            .max_depth = SEARCH_DEPTH_MAX,
                                            .userdata = &vs,
                                    });
                if (r < 0)
                        return r;
                if (!vs.found)
                        return -ESRCH;
        }
        if (loc.source != LIMITS_SOURCE_NONE) {
                r = walk_up(h, &loc);
                if (r < 0)
                        return r;
        }
        *ret = loc;
        return 0;
}

/* The number of '/'-separated components of path ("" has none). */
static size_t depth_of(const char *path) {
        size_t n = *path ? 1 : 0;

        for (; *path; path++)
                n += *path == '/';
        return n;
}

int limits_location_scope(const LimitsLocation *loc, const char *v2_path, size_t *ret_len) {
        const char *p = v2_path;
        size_t len, ll = strlen(loc->limited_path);

        if (!loc->limited || ll == 0)
                return -ENOENT; /* the root: the node is the scope */
        while (*p == '/')
                p++;
        len = strlen(p);
        while (len > 0 && p[len - 1] == '/')
                len--;
        if (ll <= len && memcmp(p, loc->limited_path, ll) == 0 && (ll == len || p[ll] == '/')) {
                /* cgroup2 (the limited cgroup is v2_path or an ancestor), or a v1 hierarchy that
                 * mirrors cgroup2 there. */
                *ret_len = (size_t) (p - v2_path) + ll;
                return 0;
        }
        if (loc->source != LIMITS_SOURCE_V1)
                return -ENOENT; /* not an ancestor: cannot be, the walk went up from v2_path */
        /* The v1 cgroups have other names: as many levels up on cgroup2 as on v1. */
        for (size_t up = depth_of(loc->path) - depth_of(loc->limited_path); up > 0 && len > 0; up--) {
                while (len > 0 && p[len - 1] != '/')
                        len--;
                while (len > 0 && p[len - 1] == '/')
                        len--;
        }
        if (len == 0)
                return -ENOENT;
        *ret_len = (size_t) (p - v2_path) + len;
        return 0;
}

int limits_read_cpu_at(const LimitsHierarchy *h, LimitsSource source, const char *path, CpuLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r = limits_open_cgroup(h, PSI_RESOURCE_CPU, source, path, &fd);

        if (r < 0)
                return r;
        return source == LIMITS_SOURCE_V2 ? limits_read_cpu_v2(fd, ret) : limits_read_cpu_v1(fd, ret);
}

int limits_read_memory_at(const LimitsHierarchy *h, LimitsSource source, const char *path, MemoryLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r = limits_open_cgroup(h, PSI_RESOURCE_MEMORY, source, path, &fd);

        if (r < 0)
                return r;
        return source == LIMITS_SOURCE_V2 ? limits_read_memory_v2(fd, ret) : limits_read_memory_v1(fd, ret);
}

int limits_read_io_at(const LimitsHierarchy *h, LimitsSource source, const char *path, IoLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        IoLimits io;
        int r = limits_open_cgroup(h, PSI_RESOURCE_IO, source, path, &fd);

        if (r < 0)
                return r;
        r = source == LIMITS_SOURCE_V2 ? limits_read_io_v2(fd, &io) : limits_read_io_v1(fd, &io);
        if (r < 0)
                return r;
        (void) limits_io_name_devices(h->sysroot->root_fd, &io); /* a device without a name is "" */
        *ret = io;
        return 0;
}
