/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "containers/cgmeta.h"
#include "probes/cgwalk.h"
#include "containers/ctrselect.h"

/* The deepest a container's cgroup is found: rootless podman's
 * user.slice/user-<uid>.slice/user@<uid>.service/user.slice/libpod-<id>.scope is 5, a Kubernetes
 * container's 4, with room for cgroup parents of one's own. */
#define CTRSELECT_MAX_DEPTH 16

bool ctrselect_is_set(const ContainerSelector *s) {
        return s && (s->name || s->image || s->pod_namespace || s->pod_name);
}

static bool glob_matches(const char *glob, const char *s) {
        return !glob || (s[0] && fnmatch(glob, s, 0) == 0);
}

bool ctrselect_match(const ContainerSelector *s, const ContainerInfo *ci) {
        /* A pod's container goes by its name in the pod spec; the runtime's name of it is made up
         * (cri-dockerd's "k8s_web_pod_ns_uid_0"). */
        const char *name = ci->pod_container[0] ? ci->pod_container : ci->name;

        if (!ctrselect_is_set(s) || ci->unnamed[0] || ci->unverified[0] || ci->sandbox)
                return false;
        if ((s->pod_namespace || s->pod_name) && !ci->pod_name[0])
                return false;
        return glob_matches(s->name, name) && glob_matches(s->image, ci->image) &&
               glob_matches(s->pod_namespace, ci->pod_namespace) && glob_matches(s->pod_name, ci->pod_name);
}

int ctrselect_glob_check(const char *glob, bool slash_ok, const char **ret_why) {
        size_t n = strlen(glob);

        if (n == 0)
                *ret_why = "is empty";
        else if (n > CTRSELECT_GLOB_MAX)
                *ret_why = "is longer than 255 bytes";
        else if (!slash_ok && strchr(glob, '/'))
                *ret_why = "has a '/' (a namespace or a pod name never has one)";
        else {
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) glob[i] < 0x20 || glob[i] == 0x7f) {
                                *ret_why = "has a control character";
                                return -EINVAL;
                        }
                return 0;
        }
        return -EINVAL;
}

char *ctrselect_format(const ContainerSelector *s, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s%s%s%s%s%s%s%s%s", s->name ? "container=" : "", s->name ? s->name : "",
                         s->name && s->image ? " " : "", s->image ? "image=" : "", s->image ? s->image : "",
                         (s->name || s->image) && s->pod_namespace ? " " : "", s->pod_namespace ? "pod=" : "",
                         s->pod_namespace ? s->pod_namespace : "", s->pod_namespace ? "/" : "");
        if (n >= 0 && (size_t) n < size && s->pod_name)
                snprintf(buf + n, size - (size_t) n, "%s", s->pod_name);
        return buf;
}

typedef struct Walk {
        CtrselectVisit visit;
        void *userdata;
} Walk;

static bool ends_with(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);
        return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Whether a proper ancestor of path (its components but the last) is a user@<uid>.service. */
static bool below_user_manager(const char *path) {
        for (const char *c = path, *slash; (slash = strchr(c, '/')); c = slash + 1) {
                size_t n = (size_t) (slash - c);
                if (n > 13 && strncmp(c, "user@", 5) == 0 && strncmp(slash - 8, ".service", 8) == 0)
                        return true;
        }
        return false;
}

static int parent(Walk *k, const char *path) {
        int r = k->visit(path, CTRSELECT_PARENT, k->userdata);
        return r == CTRSELECT_PRUNE ? CGROUP_WALK_PRUNE : r;
}

static int visit(CgroupWalkNode *node, void *userdata) {
        Walk *k = userdata;
        const char *name = strrchr(node->path, '/');
        CgroupMeta m;

        name = name ? name + 1 : node->path;
        if (node->path_len == 0)
                return parent(k, node->path);
        /* A container's monitor (conmon) carries its id but runs none of its processes. */
        if (strstr(name, "-conmon-"))
                return CGROUP_WALK_PRUNE;
        if (cgroup_meta_parse(node->path, &m) && m.container_id[0]) {
                /* The walk stops at a container's outermost cgroup: what is below is its own. */
                int r = k->visit(node->path, CTRSELECT_CONTAINER, k->userdata);
                return r < 0 ? r : CGROUP_WALK_PRUNE;
        }
        /* Containers are made in slices and cgroupfs parents, never in a service or scope, except
         * systemd's user instance (rootless podman's scopes are under user@<uid>.service). */
        if (ends_with(name, ".scope") || (ends_with(name, ".service") && strncmp(name, "user@", 5) != 0))
                return CGROUP_WALK_PRUNE;
        /* Below systemd's user instance, the directories a user made by hand (its tree is delegated
         * to them) hold no container a runtime made: only its slices do. */
        if (below_user_manager(node->path) && !ends_with(name, ".slice"))
                return CGROUP_WALK_PRUNE;
        /* ctr's and nerdctl's "/<namespace>/<id>": neither part a slice. */
        if (node->depth == 2 && !ends_with(name, ".slice") && strstr(node->path, ".slice/") == NULL) {
                int r = k->visit(node->path, CTRSELECT_MAYBE, k->userdata);
                if (r != 0)
                        return r < 0 ? r : CGROUP_WALK_PRUNE;
        }
        return parent(k, node->path);
}

int ctrselect_walk(int cgroup2_fd, CtrselectVisit fn, void *userdata) {
        Walk k = { .visit = fn, .userdata = userdata };

        return cgroup_walk(cgroup2_fd,
                           &(CgroupWalk) { .visit = visit, .max_depth = CTRSELECT_MAX_DEPTH, .userdata = &k });
}

int ctrselect_walk_below(int cgroup2_fd, const char *path, CtrselectVisit fn, void *userdata) {
        Walk k = { .visit = fn, .userdata = userdata };
        unsigned depth = 1;
        int fd, r;

        if (!path[0])
                return ctrselect_walk(cgroup2_fd, fn, userdata);
        for (const char *c = path; (c = strchr(c, '/')); c++)
                depth++;
        if (depth > CTRSELECT_MAX_DEPTH)
                return 0; /* deeper than the whole walk goes */
        fd = openat(cgroup2_fd, path, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = cgroup_walk(fd, &(CgroupWalk) { .visit = visit,
                                            .max_depth = CTRSELECT_MAX_DEPTH,
                                            .root_path = path,
                                            .root_depth = depth,
                                            .userdata = &k });
        close(fd);
        return r;
}
