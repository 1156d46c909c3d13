/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "probes/cgmeta.h"
#include "probes/containers.h"

typedef struct Entry {
        char runtime[16]; /* the key: what the cgroup path said (runtime may be ""), */
        char id[72];
        int64_t user_uid; /* and whose storage a rootless container's is (-1 rootful) */
        uint64_t used;    /* the cache's clock at the last lookup: the smallest is evicted */
        usec_t read_mono_us;
        ContainerInfo info;
} Entry;

/* The last containers.json parsed, while one sample looks up its containers (a file of many
 * containers is parsed once, not once for each): until container_cache_done(). */
typedef struct StorageMemo {
        char path[PATH_MAX];
        struct stat st;
        CtrmetaStorage *parsed;
} StorageMemo;

struct ContainerCache {
        int root_fd;
        StorageMemo memo;
        size_t max, n;
        uint64_t clock;
        Entry *items; /* grown up to max */
        size_t cap;
        ContainerCacheStats stats;
};

int container_cache_new(int root_fd, size_t max, ContainerCache **ret) {
        ContainerCache *c;

        if (max == 0 || max > CONTAINER_CACHE_MAX)
                return -EINVAL;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->root_fd = root_fd;
        c->max = max;
        *ret = c;
        return 0;
}

ContainerCache *container_cache_free(ContainerCache *c) {
        if (c) {
                container_cache_done(c);
                free(c->items);
                free(c);
        }
        return NULL;
}

/* Reads root/path, a regular file of at most CTRMETA_FILE_MAX bytes owned by root or by owner
 * (>= 0: a rootless user's storage, whose files that user writes), into a malloc'ed buffer. Never
 * blocks on a FIFO planted in its place, never follows a symlink at its end. 0, -ENOENT, -EFBIG,
 * -EPERM (owned by someone else, or not a regular file), -errno. */
static int read_meta(int root_fd, const char *path, int64_t owner, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = openat(root_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return errno == ELOOP ? -EPERM : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* root's, ours (a test's tree), or the rootless user's whose storage it is */
        if (!S_ISREG(st.st_mode) ||
            (st.st_uid != 0 && st.st_uid != geteuid() && (owner < 0 || st.st_uid != (uid_t) owner)))
                return -EPERM;
        if (st.st_size > (off_t) CTRMETA_FILE_MAX)
                return -EFBIG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        n = read_fd_full(fd, buf, (size_t) st.st_size + 1);
        if (n < 0)
                return (int) n;
        *ret_len = (size_t) n;
        *ret = TAKE_PTR(buf);
        return 0;
}

static void say_unnamed(ContainerInfo *info, const char *what, int r) {
        if (r == -ENOENT)
                snprintf(info->unnamed, sizeof info->unnamed, "no %s: the container is gone or not this host's", what);
        else if (r == -EBADMSG)
                snprintf(info->unnamed, sizeof info->unnamed, "its %s is not the JSON expected", what);
        else if (r == -EFBIG)
                snprintf(info->unnamed, sizeof info->unnamed, "its %s is larger than %u MiB", what,
                         CTRMETA_FILE_MAX >> 20);
        else if (r == -EPERM)
                snprintf(info->unnamed, sizeof info->unnamed, "its %s is not a regular file of its owner", what);
        else
                snprintf(info->unnamed, sizeof info->unnamed, "its %s: %s", what, strerror(-r));
}

typedef int (*ParseFn)(const char *buf, size_t len, ContainerInfo *ret);

/* Reads and parses one file; r < 0 on failure (ENOENT: not there). */
static int read_parse(int root_fd, const char *path, int64_t owner, ParseFn parse, ContainerInfo *info) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        r = read_meta(root_fd, path, owner, &buf, &len);
        return r < 0 ? r : parse(buf, len, info);
}

static int docker_read(int root_fd, ContainerInfo *info) {
        char path[160];

        snprintf(path, sizeof path, "var/lib/docker/containers/%s/config.v2.json", info->id);
        return read_parse(root_fd, path, -1, ctrmeta_parse_docker, info);
}

/* A containerd task's bundle, in the namespace the CRI plugin uses, then the default one (ctr,
 * nerdctl). 1 named, 0 not named, < 0 not found. */
static int containerd_read(int root_fd, ContainerInfo *info) {
        static const char *const namespaces[] = { "k8s.io", "default" };
        char path[192];
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(namespaces) && r == -ENOENT; i++) {
                snprintf(path, sizeof path, "run/containerd/io.containerd.runtime.v2.task/%s/%s/config.json",
                         namespaces[i], info->id);
                r = read_parse(root_fd, path, -1, ctrmeta_parse_oci, info);
        }
        return r;
}

static int crio_read(int root_fd, ContainerInfo *info) {
        char path[192];

        snprintf(path, sizeof path, "run/containers/storage/overlay-containers/%s/userdata/config.json", info->id);
        return read_parse(root_fd, path, -1, ctrmeta_parse_oci, info);
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The parsed containers.json at path, from the memo while the file is the same one unchanged. */
static int storage_parsed(ContainerCache *c, const char *path, int64_t owner, const CtrmetaStorage **ret) {
        _cleanup_free_ char *buf = NULL;
        CtrmetaStorage *s = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        if (fstatat(c->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (c->memo.parsed && strcmp(c->memo.path, path) == 0 && same_file(&c->memo.st, &st)) {
                *ret = c->memo.parsed;
                return 0;
        }
        r = read_meta(c->root_fd, path, owner, &buf, &len);
        if (r < 0)
                return r;
        r = ctrmeta_storage_parse(buf, len, &s);
        if (r < 0)
                return r;
        container_cache_done(c);
        snprintf(c->memo.path, sizeof c->memo.path, "%s", path);
        c->memo.st = st;
        c->memo.parsed = s;
        *ret = s;
        return 0;
}

static int storage_read(ContainerCache *c, const char *dir, int64_t owner, ContainerInfo *info) {
        _cleanup_free_ char *buf = NULL;
        const CtrmetaStorage *s = NULL;
        char path[PATH_MAX];
        size_t len = 0;
        int r;

        snprintf(path, sizeof path, "%s/overlay-containers/containers.json", dir);
        r = storage_parsed(c, path, owner, &s);
        if (r >= 0 && (r = ctrmeta_storage_find(s, info->id, info)) != 0)
                return r;
        /* containers/storage keeps the containers of a transient store in volatile-containers.json */
        snprintf(path, sizeof path, "%s/overlay-containers/volatile-containers.json", dir);
        if (read_meta(c->root_fd, path, owner, &buf, &len) >= 0 && ctrmeta_parse_storage(buf, len, info->id, info) > 0)
                return 1;
        return r < 0 ? r : -ENOENT;
}

/* podman's containers/storage: /var/lib/containers/storage rootful, ~/.local/share/containers/storage
 * of the user whose systemd instance holds the scope rootless. */
static int podman_read(ContainerCache *c, int64_t user_uid, ContainerInfo *info) {
        char passwd[65536], home[PATH_MAX], dir[PATH_MAX + 64];
        ssize_t n;
        int r;

        if (user_uid <= 0)
                return storage_read(c, "var/lib/containers/storage", -1, info);
        n = read_file_at(c->root_fd, "etc/passwd", passwd, sizeof passwd);
        if (n < 0)
                return (int) n;
        r = ctrmeta_passwd_home(passwd, (size_t) n, (unsigned) user_uid, home, sizeof home);
        if (r < 0)
                return r;
        snprintf(dir, sizeof dir, "%s/.local/share/containers/storage", home + 1);
        return storage_read(c, dir, user_uid, info);
}

/* Fills e->info from the runtime's files. */
static void resolve(ContainerCache *c, Entry *e) {
        ContainerInfo *info = &e->info;
        const char *file = "metadata file";
        int r = -ENOENT;

        *info = (ContainerInfo) {};
        snprintf(info->runtime, sizeof info->runtime, "%s", e->runtime);
        snprintf(info->id, sizeof info->id, "%s", e->id);
        if (strcmp(e->runtime, "docker") == 0) {
                r = docker_read(c->root_fd, info);
                file = "config.v2.json";
        } else if (strcmp(e->runtime, "containerd") == 0) {
                r = containerd_read(c->root_fd, info);
                file = "task bundle";
        } else if (strcmp(e->runtime, "crio") == 0) {
                r = crio_read(c->root_fd, info);
                file = "config.json";
        } else if (strcmp(e->runtime, "podman") == 0) {
                r = podman_read(c, e->user_uid, info);
                file = "containers.json entry";
        } else {
                /* the kubelet's cgroupfs driver names no runtime: whichever has the id */
                static const char *const runtimes[] = { "containerd", "crio", "docker" };
                for (size_t i = 0; i < ELEMENTSOF(runtimes) && r == -ENOENT; i++) {
                        snprintf(info->runtime, sizeof info->runtime, "%s", runtimes[i]);
                        r = i == 0   ? containerd_read(c->root_fd, info)
                            : i == 1 ? crio_read(c->root_fd, info)
                                     : docker_read(c->root_fd, info);
                }
                if (r == -ENOENT)
                        info->runtime[0] = '\0';
        }
        if (r == 0 && strcmp(info->runtime, "containerd") == 0 && !info->name[0])
                snprintf(info->unnamed, sizeof info->unnamed, "containerd names a container only through Kubernetes");
        else if (r < 0)
                say_unnamed(info, file, r);
        else if (!info->name[0] && !info->pod_container[0] && !info->pod_name[0])
                snprintf(info->unnamed, sizeof info->unnamed, "its %s names no container", file);
}

static bool key_of(const char *cgroup_path, CgroupMeta *m) {
        return cgroup_path && cgroup_meta_parse(cgroup_path, m) && m->container_id[0];
}

static Entry *find(const ContainerCache *c, const CgroupMeta *m) {
        for (size_t i = 0; i < c->n; i++) {
                Entry *e = &c->items[i];
                if (e->user_uid == m->user_uid && strcmp(e->id, m->container_id) == 0 &&
                    strcmp(e->runtime, m->runtime) == 0)
                        return e;
        }
        return NULL;
}

/* A slot for a new entry: a new one while below max, else the least recently used one's. */
static Entry *slot(ContainerCache *c) {
        Entry *lru = NULL;

        if (c->n < c->max) {
                if (c->n == c->cap) {
                        size_t cap = c->cap ? MIN(c->cap * 2, c->max) : MIN((size_t) 8, c->max);
                        Entry *items = realloc(c->items, cap * sizeof *items);
                        if (items) {
                                c->items = items;
                                c->cap = cap;
                        }
                }
                if (c->n < c->cap)
                        return &c->items[c->n++];
                if (c->n == 0)
                        return NULL;
        }
        for (size_t i = 0; i < c->n; i++)
                if (!lru || c->items[i].used < lru->used)
                        lru = &c->items[i];
        c->stats.evictions++;
        return lru;
}

const ContainerInfo *container_cache_lookup(ContainerCache *c, const char *cgroup_path) {
        CgroupMeta m;
        Entry *e;
        usec_t now;

        if (!c || !key_of(cgroup_path, &m))
                return NULL;
        c->stats.lookups++;
        now = now_usec(CLOCK_MONOTONIC);
        e = find(c, &m);
        if (!e) {
                e = slot(c);
                if (!e) /* out of memory for even one: nothing is named */
                        return NULL;
                snprintf(e->runtime, sizeof e->runtime, "%s", m.runtime);
                snprintf(e->id, sizeof e->id, "%s", m.container_id);
                e->user_uid = m.user_uid;
                e->read_mono_us = 0;
        }
        if (e->read_mono_us == 0 || (e->info.unnamed[0] && now - e->read_mono_us >= CONTAINER_CACHE_RETRY_US)) {
                c->stats.reads++;
                resolve(c, e);
                e->read_mono_us = now ? now : 1;
        }
        e->used = ++c->clock;
        if (e->info.unnamed[0])
                c->stats.unknown++;
        return &e->info;
}

const ContainerInfo *container_cache_peek(const ContainerCache *c, const char *cgroup_path) {
        CgroupMeta m;
        const Entry *e;

        if (!c || !key_of(cgroup_path, &m))
                return NULL;
        e = find(c, &m);
        return e && e->read_mono_us ? &e->info : NULL;
}

void container_cache_stats(const ContainerCache *c, ContainerCacheStats *ret) {
        *ret = c->stats;
        ret->cached = c->n;
}

void container_cache_done(ContainerCache *c) {
        if (c) {
                c->memo.parsed = ctrmeta_storage_free(c->memo.parsed);
                c->memo.path[0] = '\0';
        }
}
