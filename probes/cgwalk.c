/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "probes/cgwalk.h"
#include "probes/sysroot.h"

typedef struct Walk {
        const CgroupWalk *w;
        unsigned max_depth;
        int n_unreadable;
        bool stopped;
        char path[CGROUP_WALK_PATH_MAX + 1];
} Walk;

/* The policy on one child of parent that failed with error. 0, or -ENOMEM to end the walk. */
static int child_failed(Walk *k, const CgroupWalkNode *parent, const char *name, int error) {
        /* Removed between the listing and our reads of it: cgroups come and go while we walk. */
        if (cgroup_is_gone(error))
                return 0;
        if (error == -ENOMEM)
                return error;
        if (k->n_unreadable < INT_MAX)
                k->n_unreadable++;
        if (k->w->unreadable)
                k->w->unreadable(parent, name, error, k->w->userdata);
        return 0;
}

static int visit_node(Walk *k, CgroupWalkNode *node);

static int visit_child(Walk *k, const CgroupWalkNode *parent, const char *name, unsigned char type) {
        size_t n = strlen(name), at = parent->path_len + (parent->path_len > 0);
        CgroupWalkNode node;
        int fd, r;

        if (parent->depth >= k->max_depth)
                return child_failed(k, parent, name, -ELOOP);
        if (at + n > CGROUP_WALK_PATH_MAX)
                return child_failed(k, parent, name, -ENAMETOOLONG);
        fd = openat(parent->fd, name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                r = negative_errno();
                /* A file system without d_type: what does not open as a directory is no cgroup. */
                if (type == DT_UNKNOWN && (r == -ENOTDIR || r == -ELOOP))
                        return 0;
                return child_failed(k, parent, name, r);
        }
        if (at > parent->path_len)
                k->path[parent->path_len] = '/';
        memcpy(k->path + at, name, n + 1);
        node = (CgroupWalkNode) {
                .fd = fd,
                .path = k->path,
                .path_len = at + n,
                .depth = parent->depth + 1,
                .parent = parent,
        };
        r = visit_node(k, &node);
        safe_close(fd);
        k->path[parent->path_len] = '\0';
        return r < 0 ? child_failed(k, parent, name, r) : 0;
}

/* Visits node, then its children unless told to stop. 0, or -errno: the visitor's on node, node's
 * listing's, or -ENOMEM from below. */
static int visit_node(Walk *k, CgroupWalkNode *node) {
        struct dirent *de;
        DIR *d;
        int r;

        r = k->w->visit(node, k->w->userdata);
        if (r < 0)
                return r;
        if (r == CGROUP_WALK_STOP) {
                k->stopped = true;
                return 0;
        }
        if (r == CGROUP_WALK_PRUNE)
                return 0;
        r = opendir_at(node->fd, ".", &d);
        if (r < 0)
                return r;
        while (!k->stopped) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = errno > 0 ? -errno : 0;
                        break;
                }
                if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
                        continue;
                r = visit_child(k, node, de->d_name, de->d_type);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

int cgroup_walk(int root_fd, const CgroupWalk *w) {
        Walk k = { .w = w };
        CgroupWalkNode root = { .fd = root_fd, .path = k.path };
        int r;

        assert(w && w->visit);
        if (root_fd < 0)
                return -EBADF;
        k.max_depth = w->max_depth > 0 ? w->max_depth : CGROUP_WALK_MAX_DEPTH;
        if (w->root_path) {
                root.path_len = strlen(w->root_path);
                if (root.path_len > CGROUP_WALK_PATH_MAX)
                        return -ENAMETOOLONG;
                memcpy(k.path, w->root_path, root.path_len + 1);
                root.depth = w->root_depth;
        }
        r = visit_node(&k, &root);
        return r < 0 ? r : k.n_unreadable;
}
