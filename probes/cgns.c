/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/cgns.h"
#include "probes/cgwalk.h"

int cgns_parse_mount_root(const char *root, unsigned *ret_up) {
        unsigned up = 0;
        const char *p = root;

        if (!root || root[0] != '/')
                return -EINVAL;
        if (strcmp(root, "/") == 0) {
                *ret_up = 0;
                return 0;
        }
        while (*p) {
                if (strncmp(p, "/..", 3) != 0 || (p[3] != '/' && p[3] != '\0'))
                        return -EOPNOTSUPP;
                up++;
                p += 3;
        }
        *ret_up = up;
        return 0;
}

/* Whether the cgroup.procs at dirfd/path lists pid, read in chunks (a cgroup may hold thousands). */
static bool procs_list(int dirfd, const char *path, pid_t pid) {
        char buf[8192], want[16];
        size_t keep = 0, wlen;
        bool found = false;
        int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

        if (fd < 0)
                return false;
        wlen = (size_t) snprintf(want, sizeof want, "%d", (int) pid);
        for (;;) {
                ssize_t n = read(fd, buf + keep, sizeof buf - keep);
                size_t len, start = 0;

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len = keep + (size_t) n;
                for (size_t i = 0; i < len && !found; i++)
                        if (buf[i] == '\n') {
                                found = i - start == wlen && memcmp(buf + start, want, wlen) == 0;
                                start = i + 1;
                        }
                if (found)
                        break;
                keep = len - start;
                if (keep >= sizeof buf / 2) /* no pid is that long: not a cgroup.procs */
                        break;
                memmove(buf, buf + start, keep);
        }
        close(fd);
        return found;
}

typedef struct FindRoot {
        unsigned up, max_dirs, seen;
        const char *self; /* without its leading '/', "" for the namespace's root itself */
        pid_t pid;
        char *ret;
        size_t size;
        int result;
} FindRoot;

static int find_visit(CgroupWalkNode *node, void *userdata) {
        FindRoot *f = userdata;
        char path[CGROUP_WALK_PATH_MAX + 32];

        if (++f->seen > f->max_dirs) {
                f->result = -E2BIG;
                return CGROUP_WALK_STOP;
        }
        if (node->depth < f->up)
                return 0;
        snprintf(path, sizeof path, "%s%scgroup.procs", f->self, f->self[0] ? "/" : "");
        if (!procs_list(node->fd, path, f->pid))
                return 0;
        if (node->path_len >= f->size) {
                f->result = -ENOBUFS;
                return CGROUP_WALK_STOP;
        }
        memcpy(f->ret, node->path, node->path_len);
        f->ret[node->path_len] = '\0';
        f->result = 0;
        return CGROUP_WALK_STOP;
}

int cgns_find_root(int cgroup2_fd, unsigned up, const char *self_cgroup, pid_t pid, unsigned max_dirs, char *ret,
                   size_t size) {
        FindRoot f = { .up = up, .max_dirs = max_dirs, .pid = pid, .ret = ret, .size = size, .result = -ENOENT };
        CgroupWalk w = { .visit = find_visit, .max_depth = up, .userdata = &f };
        int r;

        if (!self_cgroup || self_cgroup[0] != '/' || strstr(self_cgroup, "/.."))
                return -EINVAL;
        f.self = self_cgroup + 1;
        if (up == 0) {
                if (size == 0)
                        return -ENOBUFS;
                ret[0] = '\0';
                return 0;
        }
        r = cgroup_walk(cgroup2_fd, &w);
        return r < 0 ? r : f.result;
}

int cgns_resolve(const char *root, const char *path, char *out, size_t size) {
        char buf[4096];
        size_t n = 0, len;
        const char *p;

        if (!path || path[0] != '/')
                return -EINVAL;
        len = (size_t) snprintf(buf, sizeof buf, "%s%s", root && root[0] ? "/" : "", root ? root : "");
        if (len >= sizeof buf)
                return -ENOBUFS;
        n = len;
        /* Each segment of path: ".." drops the last of buf, "." and empty ones are nothing. */
        const char *seg;
        size_t sl;

        for (p = path; cgpath_next(&p, &seg, &sl);) {
                if (sl == 1 && seg[0] == '.')
                        continue;
                if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
                        char *slash;

                        if (n == 0)
                                return -EINVAL;
                        buf[n] = '\0';
                        slash = strrchr(buf, '/');
                        n = (size_t) (slash - buf);
                        continue;
                }
                if (n + 1 + sl >= sizeof buf)
                        return -ENOBUFS;
                buf[n++] = '/';
                memcpy(buf + n, seg, sl);
                n += sl;
        }
        if (n == 0)
                buf[n++] = '/';
        if (n >= size)
                return -ENOBUFS;
        memcpy(out, buf, n);
        out[n] = '\0';
        return 0;
}

/* Directories a search may look at: more than any node's cgroups at one depth. */
#define CGNS_MAX_DIRS 100000

void cgns_locate(const Sysroot *s, const char *self, CgroupNamespace *ret) {
        CgroupNamespace ns = {};
        int r;

        if (s->cgroup2_fd < 0 || !s->cgroup2_root) {
                *ret = ns;
                return;
        }
        r = cgns_parse_mount_root(s->cgroup2_root, &ns.up);
        if (r < 0 || ns.up > 0) {
                ns.private_root = true;
                if (r >= 0)
                        r = cgns_find_root(s->cgroup2_fd, ns.up, self, getpid(), CGNS_MAX_DIRS, ns.root,
                                           sizeof ns.root);
                ns.resolved = r >= 0;
                ns.error = r < 0 ? r : 0;
        }
        *ret = ns;
}
