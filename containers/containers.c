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
#include "base/log.h"
#include "containers/boltdb.h"
#include "containers/cgmeta.h"
#include "containers/containers.h"
#include "containers/ctrfile.h"
#include "containers/ctrmemo.h"
#include "containers/ctrroots.h"
#include "containers/ctrverify.h"
#include "containers/libpod.h"

/* What a cgroup path says a container is; for plain containerd's, ns is its namespace. */
typedef struct Key {
        char runtime[16]; /* what the cgroup path said (may be "") */
        char id[80];
        char ns[80];      /* "" unless a plain containerd path (/<ns>/<id>) */
        int64_t user_uid; /* whose storage a rootless container's is (-1 rootful) */
        char cgroup[512]; /* its own ("" longer): named only where verified (containers/ctrverify.h) */
} Key;

typedef struct Entry {
        Key key;
        uint64_t used; /* the cache's clock at the last lookup: the smallest is evicted */
        usec_t read_mono_us;
        bool none;             /* a plain containerd path with no task bundle: no container, said NULL */
        bool pod_unread;       /* podman's state was busy or torn: its pod is asked again */
        bool pod_busy;         /* and the last time busy (a commit under way) */
        unsigned pod_failures; /* in a row: see pod_retry_us() */
        usec_t pod_mono_us;
        ContainerInfo info;
} Entry;

struct ContainerCache {
        int root_fd, proc_fd, cgroup2_fd;
        CtrMemo memo; /* the storage files parsed for one sample, those that failed lately */
        size_t max, n;
        uint64_t clock;
        Entry *items; /* grown up to max */
        size_t cap;
        ContainerCacheStats stats;
};

int container_cache_new(int root_fd, int proc_fd, int cgroup2_fd, size_t max, ContainerCache **ret) {
        ContainerCache *c;

        if (max == 0 || max > CONTAINER_CACHE_MAX)
                return -EINVAL;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->root_fd = root_fd;
        c->proc_fd = proc_fd;
        c->cgroup2_fd = cgroup2_fd;
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

static void say_unnamed(ContainerInfo *info, const char *what, int r) {
        if (r == -ENOENT)
                snprintf(info->unnamed, sizeof info->unnamed, "no %s: the container is gone or not this host's", what);
        else if (r == -EBADMSG)
                snprintf(info->unnamed, sizeof info->unnamed, "its %s is not the JSON expected", what);
        else if (r == -E2BIG)
                snprintf(info->unnamed, sizeof info->unnamed, "its %s holds more JSON than a %llu MiB parse", what,
                         (unsigned long long) CTRMETA_PARSE_BUDGET >> 20);
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

        r = ctrfile_read(root_fd, path, owner, &buf, &len);
        return r < 0 ? r : parse(buf, len, info);
}

static int docker_read(int root_fd, ContainerInfo *info) {
        char path[160];

        snprintf(path, sizeof path, "var/lib/docker/containers/%s/config.v2.json", info->id);
        return read_parse(root_fd, path, -1, ctrmeta_parse_docker, info);
}

/* A containerd task's bundle in namespace ns. 1 named, 0 not named, < 0 not found. */
static int containerd_read_in(int root_fd, const char *ns, ContainerInfo *info) {
        char path[256];
        int r;

        snprintf(path, sizeof path, "run/containerd/io.containerd.runtime.v2.task/%s/%s/config.json", ns, info->id);
        r = read_parse(root_fd, path, -1, ctrmeta_parse_oci, info);
        if (r >= 0) {
                snprintf(info->runtime_namespace, sizeof info->runtime_namespace, "%s", ns);
                /* the shim's init.pid beside it: the task's init, while it runs */
                snprintf(path, sizeof path, "run/containerd/io.containerd.runtime.v2.task/%s/%s/init.pid", ns,
                         info->id);
                info->pid = ctrverify_read_pid(root_fd, path, -1);
        }
        return r;
}

/* The image containerd keeps for a container only in its metadata database (bbolt): bucket v1,
 * the namespace, "containers", the id, key "image". Left empty when the database does not say. */
static void containerd_image(int root_fd, ContainerInfo *info) {
        const char *const keys[] = { "v1", info->runtime_namespace, "containers", info->id, "image" };
        char why[BOLTDB_REASON_MAX];
        int r = boltdb_get_at(root_fd, "var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db", keys,
                              ELEMENTSOF(keys), info->image, sizeof info->image, why);

        if (r < 0) {
                info->image[0] = '\0';
                log_debug("containerd container %s/%s: no image from meta.db: %s", info->runtime_namespace, info->id,
                          why);
        }
}

/* In the namespace the CRI plugin uses, then the default one (ctr, nerdctl). */
static int containerd_read(int root_fd, ContainerInfo *info) {
        int r = containerd_read_in(root_fd, "k8s.io", info);

        return r == -ENOENT ? containerd_read_in(root_fd, "default", info) : r;
}

/* Whether cgroup (a container's own, "/a/b") is its monitor's, by its last component: conmon's
 * scope, "crio-conmon-<id>.scope" or "libpod-conmon-<id>.scope", whose process is conmon, not the
 * container's init. */
static bool is_conmon(const char *cgroup) {
        const char *last = strrchr(cgroup, '/');

        return strstr(last ? last : cgroup, "-conmon-") != NULL;
}

/* CRI-O's bundle: the OCI spec it wrote, config.json, and beside it the pids conmon wrote
 * (kernel-facts.md: runtime-pidfiles): the container's init in pidfile, conmon's own, for its
 * crio-conmon-<id>.scope, in conmon-pidfile. */
static int crio_read(int root_fd, bool conmon, ContainerInfo *info) {
        char path[192];
        int r;

        snprintf(path, sizeof path, "run/containers/storage/overlay-containers/%s/userdata/config.json", info->id);
        r = read_parse(root_fd, path, -1, ctrmeta_parse_oci, info);
        if (r >= 0) {
                snprintf(path, sizeof path, "run/containers/storage/overlay-containers/%s/userdata/%s", info->id,
                         conmon ? "conmon-pidfile" : "pidfile");
                info->pid = ctrverify_read_pid(root_fd, path, -1);
        }
        return r;
}

/* The parsed containers/storage file at path: from the memo while the file is the same one
 * unchanged; not read again for CTRMEMO_FAILED_US after it failed (the error it failed with). */
static int storage_parsed(ContainerCache *c, const char *path, int64_t owner, const CtrmetaStorage **ret) {
        _cleanup_free_ char *buf = NULL;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        CtrmetaStorage *s = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        if (fstatat(c->root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if ((*ret = ctrmemo_parsed(&c->memo, path, &st)))
                return 0;
        r = ctrmemo_failed(&c->memo, path, now);
        if (r < 0)
                return r;
        r = ctrfile_read(c->root_fd, path, owner, &buf, &len);
        if (r >= 0)
                r = ctrmeta_storage_parse(buf, len, &s);
        ctrmemo_fail(&c->memo, path, r == -ENOENT ? 0 : MIN(r, 0), now);
        if (r < 0)
                return r;
        ctrmemo_keep(&c->memo, path, &st, s);
        *ret = s;
        return 0;
}

/* One storage driver's containers.json (and volatile-containers.json, where containers/storage
 * keeps the containers of a transient store). */
static int storage_read_driver(ContainerCache *c, const char *dir, const char *driver, int64_t owner,
                               ContainerInfo *info) {
        const CtrmetaStorage *s = NULL;
        char path[PATH_MAX];
        int r, v;

        if (snprintf(path, sizeof path, "%s/%s-containers/containers.json", dir, driver) >= (int) sizeof path)
                return -ENAMETOOLONG;
        r = storage_parsed(c, path, owner, &s);
        if (r >= 0 && (r = ctrmeta_storage_find(s, info->id, info)) != 0)
                return r;
        if (snprintf(path, sizeof path, "%s/%s-containers/volatile-containers.json", dir, driver) >= (int) sizeof path)
                return -ENAMETOOLONG;
        v = storage_parsed(c, path, owner, &s);
        if (v >= 0 && ctrmeta_storage_find(s, info->id, info) > 0)
                return 1;
        return r < 0 ? r : -ENOENT;
}

/* containers/storage keeps containers.json in <graph root>/<driver>-containers/: overlay where the
 * kernel or fuse-overlayfs gives it, vfs where not (rootless podman 4.3 on Debian 12 with no
 * storage.conf chose vfs on a hybrid host). */
static int storage_read(ContainerCache *c, const char *dir, int64_t owner, ContainerInfo *info) {
        static const char *const drivers[] = { "overlay", "vfs", "btrfs", "zfs" };
        int r = -ENOENT;

        for (size_t i = 0; i < ELEMENTSOF(drivers) && r == -ENOENT; i++)
                r = storage_read_driver(c, dir, drivers[i], owner, info);
        return r;
}

/* When a pod unread is asked again: a torn or failing state a second later, then once a minute; a
 * busy one (a podman committing, which a node starting containers does for seconds on end) after
 * 1, 2, 4 ... s, up to a minute. */
static usec_t pod_retry_us(const Entry *e) {
        if (e->pod_failures <= 1)
                return CONTAINER_CACHE_POD_RETRY_US;
        if (!e->pod_busy)
                return CONTAINER_CACHE_FAILED_RETRY_US;
        return MIN(CONTAINER_CACHE_POD_RETRY_US << MIN(e->pod_failures - 1, 6u), CONTAINER_CACHE_FAILED_RETRY_US);
}

/* A podman container's `podman pod` from libpod's state database in dir: a database missing or
 * unreadable leaves the pod unsaid (the reason at debug level); one busy (a podman committing) or
 * torn (a bbolt file read while written) is asked again, keeping what was named. */
static void podman_pod(ContainerCache *c, Entry *e, const char *dir, int64_t owner) {
        ContainerInfo *info = &e->info;
        char why[LIBPOD_REASON_MAX], name[sizeof info->runtime_pod], state[PATH_MAX + 80];
        usec_t now = now_usec(CLOCK_MONOTONIC), took;
        bool skipped;
        int r;

        /* a state that failed twice in a row (busy: CONTAINER_CACHE_BUSY_TRIES times) is not read
         * again for a minute, whichever asks */
        snprintf(state, sizeof state, "%s/libpod state", dir);
        r = ctrmemo_failed(&c->memo, state, now);
        skipped = r < 0;
        if (skipped)
                snprintf(why, sizeof why, "failed less than a minute ago: %s", strerror(-r));
        else
                r = libpod_pod_name(c->root_fd, dir, owner, info->id, name, sizeof name, why);
        took = now_usec(CLOCK_MONOTONIC) - now;
        e->pod_unread = r == -EBUSY || r == -EBADMSG || r == -ETIME;
        e->pod_busy = r == -EBUSY;
        e->pod_failures = e->pod_unread ? e->pod_failures + 1 : 0;
        e->pod_mono_us = now;
        if (!skipped &&
            (!e->pod_unread || (e->pod_failures > 1 && !e->pod_busy) || e->pod_failures >= CONTAINER_CACHE_BUSY_TRIES))
                ctrmemo_fail(&c->memo, state, e->pod_unread ? r : 0, now);
        if (r < 0) {
                log_debug("podman container %s: no pod from /%s/libpod/bolt_state.db or db.sql (%llu us): %s", info->id,
                          dir, (unsigned long long) took, why);
                return;
        }
        log_debug("podman container %s: pod %s from /%s/libpod's state (%llu us)", info->id, r > 0 ? name : "(none)",
                  dir, (unsigned long long) took);
        snprintf(info->runtime_pod, sizeof info->runtime_pod, "%s", r > 0 ? name : "");
}

/* A podman container named from containers/storage, then its `podman pod` (podman_pod()); with
 * pod_only, the pod alone, what was named kept. */
static int podman_read(ContainerCache *c, Entry *e, bool pod_only) {
        int64_t owner = e->key.user_uid > 0 ? e->key.user_uid : -1;
        char dir[PATH_MAX + 64], run[PATH_MAX + 64];
        int r = ctrroots_podman(c->root_fd, e->key.user_uid, dir, sizeof dir, pod_only ? NULL : run, sizeof run);

        /* the pid podman wrote in its run root: none where that root is unknown */
        if (r >= 0 && !pod_only && (r = storage_read(c, dir, owner, &e->info)) >= 0 && run[0])
                e->info.pid = ctrverify_podman_pid(c->root_fd, run, e->key.id, is_conmon(e->key.cgroup), owner);
        if (r >= 0)
                podman_pod(c, e, dir, owner);
        return r;
}

/* Fills e->info from the runtime's files, for a cgroup verified as the runtime's. */
static void resolve(ContainerCache *c, Entry *e) {
        ContainerInfo *info = &e->info;
        const char *file = "metadata file";
        int r = -ENOENT;

        *info = (ContainerInfo) {};
        e->none = e->pod_unread = false;
        e->pod_failures = 0;
        e->pod_busy = false;
        snprintf(info->runtime, sizeof info->runtime, "%s", e->key.runtime);
        snprintf(info->id, sizeof info->id, "%s", e->key.id);
        if (!e->key.ns[0] && !ctrverify_container(c->cgroup2_fd, e->key.cgroup, e->key.runtime, e->key.user_uid, info))
                return;
        if (e->key.ns[0]) {
                /* plain containerd's /<ns>/<id>: a container only if containerd has that task */
                r = containerd_read_in(c->root_fd, e->key.ns, info);
                e->none = r == -ENOENT;
                file = "task bundle";
        } else if (strcmp(e->key.runtime, "docker") == 0) {
                r = docker_read(c->root_fd, info);
                file = "config.v2.json";
        } else if (strcmp(e->key.runtime, "containerd") == 0) {
                r = containerd_read(c->root_fd, info);
                file = "task bundle";
        } else if (strcmp(e->key.runtime, "crio") == 0) {
                r = crio_read(c->root_fd, is_conmon(e->key.cgroup), info);
                file = "config.json";
        } else if (strcmp(e->key.runtime, "podman") == 0) {
                r = podman_read(c, e, false);
                file = "containers.json entry";
        } else {
                /* the kubelet's cgroupfs driver names no runtime: whichever has the id */
                static const char *const runtimes[] = { "containerd", "crio", "docker" };
                for (size_t i = 0; i < ELEMENTSOF(runtimes) && r == -ENOENT; i++) {
                        snprintf(info->runtime, sizeof info->runtime, "%s", runtimes[i]);
                        r = i == 0   ? containerd_read(c->root_fd, info)
                            : i == 1 ? crio_read(c->root_fd, is_conmon(e->key.cgroup), info)
                                     : docker_read(c->root_fd, info);
                }
                if (r == -ENOENT)
                        info->runtime[0] = '\0';
        }
        if (e->key.ns[0] && !e->none &&
            !ctrverify_container(c->cgroup2_fd, e->key.cgroup, e->key.runtime, e->key.user_uid, info))
                return;
        if (r >= 0 && !ctrverify_container_process(c->proc_fd, e->key.cgroup, info))
                return;
        if (r == 0 && strcmp(info->runtime, "containerd") == 0) {
                /* Outside Kubernetes containerd keeps no name but the id, which ctr's user chose
                 * (`ctr run IMAGE web`); its image is only in containerd's metadata database. */
                snprintf(info->name, sizeof info->name, "%s", info->id);
                if (!info->image[0])
                        containerd_image(c->root_fd, info);
        } else if (r < 0)
                say_unnamed(info, file, r);
        else if (!info->name[0] && !info->pod_container[0] && !info->pod_name[0])
                snprintf(info->unnamed, sizeof info->unnamed, "its %s names no container", file);
}

/* containerd's identifiers (its identifiers.Validate): letters and digits, with '.', '_' and '-'
 * between them, at most 76 bytes. */
static bool is_alnum(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool is_identifier(const char *s, size_t len) {
        if (len == 0 || len > 76 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_alnum(s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
                        return false;
        return true;
}

/* ctr's default cgroup: "/<namespace>/<id>" (containerd's oci.populateDefaultUnixSpec sets
 * CgroupsPath to filepath.Join("/", ns, id)), two identifiers at the hierarchy's root that only
 * the task bundle's presence tells from any other cgroup. */
static bool plain_containerd_key(const char *path, Key *k) {
        const char *slash;
        size_t ns_len, id_len;

        while (*path == '/')
                path++;
        slash = strchr(path, '/');
        if (!slash)
                return false;
        ns_len = (size_t) (slash - path);
        id_len = strlen(slash + 1);
        if (!is_identifier(path, ns_len) || !is_identifier(slash + 1, id_len))
                return false;
        *k = (Key) { .runtime = "containerd", .user_uid = -1 };
        memcpy(k->ns, path, ns_len);
        memcpy(k->id, slash + 1, id_len);
        return true;
}

static bool key_of(const char *cgroup_path, Key *k) {
        CgroupMeta m;

        if (!cgroup_path)
                return false;
        if (cgroup_meta_parse(cgroup_path, &m)) {
                if (!m.container_id[0])
                        return false;
                *k = (Key) { .user_uid = m.user_uid };
                snprintf(k->runtime, sizeof k->runtime, "%s", m.runtime);
                snprintf(k->id, sizeof k->id, "%s", m.container_id);
        } else if (!plain_containerd_key(cgroup_path, k))
                return false;
        if (ctrverify_own_cgroup(cgroup_path, k->id, k->cgroup, sizeof k->cgroup) < 0)
                k->cgroup[0] = '\0';
        return true;
}

static Entry *find(const ContainerCache *c, const Key *k) {
        for (size_t i = 0; i < c->n; i++) {
                Entry *e = &c->items[i];
                if (e->key.user_uid == k->user_uid && strcmp(e->key.id, k->id) == 0 &&
                    strcmp(e->key.runtime, k->runtime) == 0 && strcmp(e->key.ns, k->ns) == 0 &&
                    strcmp(e->key.cgroup, k->cgroup) == 0)
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
        Key k;
        Entry *e;
        usec_t now;

        if (!c || !key_of(cgroup_path, &k))
                return NULL;
        now = now_usec(CLOCK_MONOTONIC);
        e = find(c, &k);
        if (!e) {
                e = slot(c);
                if (!e) /* out of memory for even one: nothing is named */
                        return NULL;
                e->key = k;
                e->read_mono_us = 0;
        }
        e->used = ++c->clock;
        if (e->read_mono_us == 0 ||
            ((e->info.unnamed[0] || e->none) && now - e->read_mono_us >= CONTAINER_CACHE_RETRY_US)) {
                resolve(c, e);
                e->read_mono_us = now ? now : 1;
                /* a path that turned out to name no container is neither a lookup nor a read */
                if (!e->none)
                        c->stats.reads++;
        } else if (e->pod_unread && now - e->pod_mono_us >= pod_retry_us(e))
                (void) podman_read(c, e, true);
        if (e->none)
                return NULL;
        c->stats.lookups++;
        if (e->info.unnamed[0])
                c->stats.unknown++;
        c->stats.unverified += e->info.unverified[0] != '\0';
        return &e->info;
}

const ContainerInfo *container_cache_peek(const ContainerCache *c, const char *cgroup_path) {
        Key k;
        const Entry *e;

        if (!c || !key_of(cgroup_path, &k))
                return NULL;
        e = find(c, &k);
        return e && e->read_mono_us && !e->none ? &e->info : NULL;
}

void container_cache_stats(const ContainerCache *c, ContainerCacheStats *ret) {
        *ret = c->stats;
        ret->cached = c->n;
}

void container_cache_done(ContainerCache *c) {
        if (c)
                ctrmemo_done(&c->memo);
}
