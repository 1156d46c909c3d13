/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/limits-find.h"

/* Bounds of the search for a process in an empty cgroup's subtree. */
#define SEARCH_DIRS_MAX 64
#define SEARCH_DEPTH_MAX 8
#define SEARCH_PIDS_PER_DIR 8

static const char *const v2_names[_LIMITS_RESOURCE_MAX] = { "cpu", "memory", "io" };
static const char *const v1_names[_LIMITS_RESOURCE_MAX] = { "cpu", "memory", "blkio" };

const char *limits_resource_to_string(LimitsResource r) {
        return (int) r >= 0 && (int) r < _LIMITS_RESOURCE_MAX ? v2_names[r] : "?";
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
        _cleanup_free_ char *mountinfo = NULL;
        LimitsHierarchy *h;
        char controllers[512];
        ssize_t n = -ENOENT;
        size_t size = 64 * 1024;
        int r = 0;

        h = calloc(1, sizeof *h);
        if (!h)
                return -ENOMEM;
        h->sysroot = s;
        for (size_t i = 0; i < _LIMITS_RESOURCE_MAX; i++)
                h->v1_fd[i] = -EBADF;

        if (s->cgroup2_fd >= 0)
                n = read_file_at(s->cgroup2_fd, "cgroup.controllers", controllers, sizeof controllers);
        for (;;) {
                ssize_t m;

                free(mountinfo);
                mountinfo = malloc(size);
                if (!mountinfo) {
                        r = -ENOMEM;
                        goto fail;
                }
                m = read_file_at(s->proc_fd, "self/mountinfo", mountinfo, size);
                if (m < 0) {
                        r = (int) m;
                        goto fail;
                }
                if ((size_t) m < size - 1 || size >= 16 * 1024 * 1024)
                        break;
                size *= 4;
        }
        for (LimitsResource res = 0; res < _LIMITS_RESOURCE_MAX; res++) {
                _cleanup_free_ char *mp = NULL;
                const char *rel;

                if (n >= 0 &&
                    list_has(controllers, (size_t) n - (n > 0 && controllers[n - 1] == '\n'), ' ', v2_names[res])) {
                        h->source[res] = LIMITS_SOURCE_V2;
                        continue;
                }
                r = mountinfo_find_cgroup1(mountinfo, v1_names[res], &mp);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        goto fail;
                for (rel = mp; *rel == '/'; rel++)
                        ;
                h->v1_fd[res] = openat(s->root_fd, *rel ? rel : ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
                /* A mount we cannot open (another mount namespace's leftovers) is no controller. */
                h->source[res] = h->v1_fd[res] >= 0 ? LIMITS_SOURCE_V1 : LIMITS_SOURCE_NONE;
        }
        *ret = h;
        return 0;
fail:
        limits_hierarchy_free(h);
        return r;
}

LimitsHierarchy *limits_hierarchy_free(LimitsHierarchy *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < _LIMITS_RESOURCE_MAX; i++)
                safe_close(h->v1_fd[i]);
        free(h);
        return NULL;
}

int limits_parse_proc_cgroup_v1(const char *buf, size_t len, const char *controller, char *out, size_t size) {
        const char *p = buf, *end = buf + len;

        /* cgroup(7): "hierarchy-ID:controller-list:cgroup-path"; a path may contain ':'. */
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                const char *c1 = memchr(p, ':', (size_t) (le - p));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (le - c1 - 1)) : NULL;

                if (c2 && list_has(c1 + 1, (size_t) (c2 - c1 - 1), ',', controller)) {
                        size_t n = (size_t) (le - c2 - 1);

                        if (n + 1 > size)
                                return -ENOBUFS;
                        memcpy(out, c2 + 1, n);
                        out[n] = '\0';
                        return 0;
                }
                p = nl ? nl + 1 : end;
        }
        return -ENOENT;
}

static int mount_fd_of(const LimitsHierarchy *h, LimitsResource res, LimitsSource source) {
        if (source == LIMITS_SOURCE_V2)
                return h->sysroot->cgroup2_fd >= 0 ? h->sysroot->cgroup2_fd : -ENODEV;
        if (source == LIMITS_SOURCE_V1 && h->v1_fd[res] >= 0)
                return h->v1_fd[res];
        return -ENODEV;
}

int limits_open_cgroup(const LimitsHierarchy *h, LimitsResource resource, LimitsSource source, const char *path,
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

/* Whether the cgroup at fd sets a limit on res. 0/1, or -errno. */
static int sets_limit(int fd, LimitsResource res, LimitsSource source) {
        CpuLimits c;
        MemoryLimits m;
        IoLimits io;
        int r;

        switch (res) {
        case LIMITS_RESOURCE_CPU:
                r = source == LIMITS_SOURCE_V2 ? limits_read_cpu_v2(fd, &c) : limits_read_cpu_v1(fd, &c);
                return r < 0 ? r : limits_cpu_is_limited(&c);
        case LIMITS_RESOURCE_MEMORY:
                r = source == LIMITS_SOURCE_V2 ? limits_read_memory_v2(fd, &m) : limits_read_memory_v1(fd, &m);
                return r < 0 ? r : limits_memory_is_limited(&m);
        default:
                r = source == LIMITS_SOURCE_V2 ? limits_read_io_v2(fd, &io) : limits_read_io_v1(fd, &io);
                return r < 0 ? r : limits_io_is_limited(&io);
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
                r = sets_limit(fd, loc->resource, loc->source);
                if (r < 0)
                        return r;
                if (r > 0) {
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

/* Depth-first through the cgroup2 subtree at fd for a process to learn the v1 cgroup from.
 * *budget bounds the directories visited. 1, 0, -errno. */
static int search_v1_path(const LimitsHierarchy *h, int fd, const char *controller, char *suffix, size_t depth,
                          int *budget, LimitsLocation *loc) {
        DIR *d;
        struct dirent *de;
        int r;

        if ((*budget)-- <= 0)
                return 0;
        r = v1_path_of_dir(h, fd, controller, suffix, loc);
        if (r != 0 || depth >= SEARCH_DEPTH_MAX)
                return r;
        r = opendir_at(fd, ".", &d);
        if (r < 0)
                return r;
        while (r == 0 && *budget > 0 && (de = readdir(d))) {
                _cleanup_close_ int child = -EBADF;
                size_t sl = strlen(suffix);

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (sl + 1 + strlen(de->d_name) + 1 > LIMITS_PATH_MAX)
                        continue;
                child = openat(fd, de->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        continue; /* removed meanwhile */
                suffix[sl] = '/';
                strcpy(suffix + sl + 1, de->d_name);
                r = search_v1_path(h, child, controller, suffix, depth + 1, budget, loc);
                suffix[sl] = '\0';
        }
        closedir(d);
        return r;
}

int limits_locate(const LimitsHierarchy *h, const char *v2_path, LimitsResource resource, LimitsLocation *ret) {
        LimitsLocation loc = { .resource = resource, .source = h->source[resource] };
        const char *p = v2_path;
        int r;

        while (*p == '/')
                p++;
        if (strlen(p) >= sizeof loc.path)
                return -ENAMETOOLONG;
        if (loc.source == LIMITS_SOURCE_V2)
                strcpy(loc.path, p);
        else if (loc.source == LIMITS_SOURCE_V1) {
                _cleanup_close_ int fd = -EBADF;
                char suffix[LIMITS_PATH_MAX] = "";
                int budget = SEARCH_DIRS_MAX;

                r = limits_open_cgroup(h, resource, LIMITS_SOURCE_V2, p, &fd);
                if (r < 0)
                        return r;
                r = search_v1_path(h, fd, v1_names[resource], suffix, 0, &budget, &loc);
                if (r < 0)
                        return r;
                if (r == 0)
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

int limits_read_cpu_at(const LimitsHierarchy *h, LimitsSource source, const char *path, CpuLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r = limits_open_cgroup(h, LIMITS_RESOURCE_CPU, source, path, &fd);

        if (r < 0)
                return r;
        return source == LIMITS_SOURCE_V2 ? limits_read_cpu_v2(fd, ret) : limits_read_cpu_v1(fd, ret);
}

int limits_read_memory_at(const LimitsHierarchy *h, LimitsSource source, const char *path, MemoryLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r = limits_open_cgroup(h, LIMITS_RESOURCE_MEMORY, source, path, &fd);

        if (r < 0)
                return r;
        return source == LIMITS_SOURCE_V2 ? limits_read_memory_v2(fd, ret) : limits_read_memory_v1(fd, ret);
}

int limits_read_io_at(const LimitsHierarchy *h, LimitsSource source, const char *path, IoLimits *ret) {
        _cleanup_close_ int fd = -EBADF;
        IoLimits io;
        int r = limits_open_cgroup(h, LIMITS_RESOURCE_IO, source, path, &fd);

        if (r < 0)
                return r;
        r = source == LIMITS_SOURCE_V2 ? limits_read_io_v2(fd, &io) : limits_read_io_v1(fd, &io);
        if (r < 0)
                return r;
        (void) limits_io_name_devices(h->sysroot->root_fd, &io); /* a device without a name is "" */
        *ret = io;
        return 0;
}
