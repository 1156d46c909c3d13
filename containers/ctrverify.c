/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "containers/ctrfile.h"
#include "containers/ctrmeta.h"
#include "containers/ctrverify.h"
#include "probes/procfs.h"

_Static_assert(sizeof(((ContainerInfo *) 0)->unverified) == CTRVERIFY_REASON_MAX, "the reason's size");

int ctrverify_own_cgroup(const char *path, const char *id, char *out, size_t size) {
        const char *p = path ? path : "", *seg, *end = NULL;
        size_t len, n = strlen(id);
        int w;

        if (n == 0)
                return -ENOENT;
        while (cgpath_next(&p, &seg, &len))
                if (len >= n && memmem(seg, len, id, n))
                        end = seg + len;
        if (!end)
                return -ENOENT;
        path = cgpath_trim(path);
        w = snprintf(out, size, "/%.*s", (int) (end - path), path);
        return w < 0 || (size_t) w >= size ? -ENAMETOOLONG : 0;
}

static bool seg_is(const char *seg, size_t len, const char *s) {
        return len == strlen(s) && memcmp(seg, s, len) == 0;
}

/* "user@<anything>.service": systemd's user instance, whose subtree is its user's to shape. */
static bool is_user_instance(const char *seg, size_t len) {
        return len > 13 && memcmp(seg, "user@", 5) == 0 && memcmp(seg + len - 8, ".service", 8) == 0;
}

int ctrverify_place(const char *cgroup, const char *runtime, int64_t user_uid, char *why, size_t size) {
        const char *p = cgroup, *seg, *first = NULL;
        char want[3][40];
        unsigned depth = 0, instances = 0;
        size_t len, first_len = 0;
        bool standard = true;

        snprintf(want[0], sizeof want[0], "user.slice");
        snprintf(want[1], sizeof want[1], "user-%" PRId64 ".slice", user_uid);
        snprintf(want[2], sizeof want[2], "user@%" PRId64 ".service", user_uid);
        while (cgpath_next(&p, &seg, &len)) {
                if (is_user_instance(seg, len) && instances++ == 0) {
                        first = seg;
                        first_len = len;
                }
                if (depth < 3)
                        standard &= seg_is(seg, len, want[depth]);
                depth++;
        }
        if (!runtime[0])
                runtime = "the kubelet";
        if (user_uid < 0) {
                if (instances == 0)
                        return 0;
                snprintf(why, size, "%s's cgroup below a user's systemd instance (%.*s)", runtime,
                         (int) MIN(first_len, (size_t) 40), first);
                return -EPERM;
        }
        /* Rootful runtimes and the kubelet make their containers' cgroups as root, never in a
         * user's delegated subtree; only podman's are read from the user's own storage. */
        if (strcmp(runtime, "podman") != 0)
                snprintf(why, size, "%s's cgroup below user@%" PRId64 ".service, a user's delegated subtree", runtime,
                         user_uid);
        else if (instances > 1)
                snprintf(why, size, "user@%" PRId64 ".service nested in another systemd instance (%.*s)", user_uid,
                         (int) MIN(first_len, (size_t) 40), first);
        else if (!standard || depth < 4)
                snprintf(why, size,
                         "user@%" PRId64 ".service is not at its place, /user.slice/user-%" PRId64
                         ".slice/user@%" PRId64 ".service",
                         user_uid, user_uid, user_uid);
        else
                return 0;
        return -EPERM;
}

/* Root's, or ours: a unit test's tree is its runner's (as containers/ctrmeta.h's files are). */
static bool is_root(uid_t uid) {
        return uid == 0 || uid == geteuid();
}

int ctrverify_owners(int cgroup2_fd, const char *cgroup, int64_t user_uid, char *why, size_t size) {
        _cleanup_close_ int dir = -EBADF;
        const char *p = cgroup, *seg, *next;
        char name[NAME_MAX + 1];
        bool users = false;
        size_t len;
        unsigned depth = 0;

        if (cgroup2_fd < 0) {
                snprintf(why, size, "no cgroup2 mount to check its owner in");
                return -EPERM;
        }
        if (!cgpath_next(&p, &seg, &len)) {
                snprintf(why, size, "the cgroup2 root is no container's");
                return -EPERM;
        }
        for (;; seg = next, depth++) {
                bool last;
                struct stat st;
                int fd;

                if (len > NAME_MAX)
                        return -ENAMETOOLONG;
                if (seg_is(seg, len, ".") || seg_is(seg, len, "..")) {
                        /* a path left outside our cgroup namespace (probes/cgns.h): not beneath the mount */
                        snprintf(why, size, "its cgroup's path leaves the cgroup2 mount");
                        return -EPERM;
                }
                memcpy(name, seg, len);
                name[len] = '\0';
                last = !cgpath_next(&p, &next, &len);
                /* O_PATH: no read of the directory, and nothing to block on; O_NOFOLLOW: a symlink
                 * (none in a real cgroupfs, any in a planted tree) is refused, not followed. */
                fd = openat(dir >= 0 ? dir : cgroup2_fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        int r = errno == ELOOP ? -ENOTDIR : -errno;
                        if (r == -ENOTDIR)
                                snprintf(why, size, "%s is not a directory", name);
                        return r == -ENOTDIR ? -EPERM : r;
                }
                if (dir >= 0)
                        close(dir);
                dir = fd;
                if (fstat(dir, &st) < 0)
                        return -errno;
                if (last)
                        return 0;
                /* systemd chowns user@<uid>.service to the user (Delegate=yes): from there down,
                 * the user's tree, made by the user or by their systemd. */
                if (user_uid > 0 && depth == 2)
                        users = true;
                if (users ? st.st_uid != (uid_t) user_uid : !is_root(st.st_uid)) {
                        snprintf(why, size, "%s is owned by uid %u, not %s", name, (unsigned) st.st_uid,
                                 users ? "the user's" : "root");
                        return -EPERM;
                }
                if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                        snprintf(why, size, "%s is writable by others than its owner", name);
                        return -EPERM;
                }
        }
}

int ctrverify_process(int proc_fd, pid_t pid, const char *cgroup, char *why, size_t size) {
        char path[PATH_MAX];
        size_t n;
        int r;

        r = proc_read_cgroup(proc_fd, pid, path, sizeof path);
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH; /* the container ended: its files outlive its init */
        if (r < 0)
                return r;
        n = strlen(path);
        if (n >= 10 && strcmp(path + n - 10, " (deleted)") == 0)
                return -ESRCH; /* a zombie whose cgroup is removed: kernel-facts.md: cgroup-owner */
        if (!cgpath_covers_untrimmed(cgroup, path)) {
                snprintf(why, size, "its init process %d (as its runtime says) is in %.80s", (int) pid, path);
                return -EPERM;
        }
        return 0;
}

int ctrverify_cgroup(int cgroup2_fd, const char *cgroup, const char *runtime, int64_t user_uid, char *why,
                     size_t size) {
        int r = ctrverify_place(cgroup, runtime, user_uid, why, size);

        if (r >= 0)
                r = ctrverify_owners(cgroup2_fd, cgroup, user_uid, why, size);
        if (r == -ENOENT)
                snprintf(why, size, "its cgroup is gone: its owner was not checked");
        else if (r < 0 && r != -EPERM)
                snprintf(why, size, "its cgroup's owner could not be checked: %s", strerror(-r));
        return r < 0 ? -EPERM : 0;
}

/* Nothing named but the runtime and the id, and why. */
static void unverify(ContainerInfo *info, const char *why) {
        ContainerInfo v = {};

        snprintf(v.runtime, sizeof v.runtime, "%s", info->runtime);
        snprintf(v.id, sizeof v.id, "%s", info->id);
        snprintf(v.unverified, sizeof v.unverified, "%s", why);
        snprintf(v.unnamed, sizeof v.unnamed, "its cgroup is not verified as its runtime's");
        *info = v;
}

bool ctrverify_container(int cgroup2_fd, const char *cgroup, const char *runtime, int64_t user_uid,
                         ContainerInfo *info) {
        char why[CTRVERIFY_REASON_MAX];

        if (!cgroup[0])
                snprintf(why, sizeof why, "its cgroup's path is too long to check");
        else if (ctrverify_cgroup(cgroup2_fd, cgroup, runtime, user_uid, why, sizeof why) >= 0)
                return true;
        unverify(info, why);
        return false;
}

bool ctrverify_container_process(int proc_fd, const char *cgroup, ContainerInfo *info) {
        char why[CTRVERIFY_REASON_MAX];

        if (info->pid <= 0 || proc_fd < 0 || ctrverify_process(proc_fd, info->pid, cgroup, why, sizeof why) != -EPERM)
                return true;
        unverify(info, why);
        return false;
}

pid_t ctrverify_read_pid(int root_fd, const char *path, int64_t owner) {
        _cleanup_close_ int fd = -EBADF;
        char buf[16];
        struct stat st;
        long v = 0;
        ssize_t n;

        /* as containers/containers.c reads a runtime's files: never a FIFO, never through a symlink */
        fd = ctrfile_openat(root_fd, path, owner, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &st) < 0 || !ctrmeta_file_trusted(&st, owner))
                return 0;
        n = read_fd_full(fd, buf, sizeof buf);
        if (n <= 0 || n >= (ssize_t) sizeof buf)
                return 0;
        for (ssize_t i = 0; i < n && !(buf[i] == '\n' && i + 1 == n); i++) {
                if (buf[i] < '0' || buf[i] > '9' || v > INT32_MAX / 10)
                        return 0;
                v = v * 10 + (buf[i] - '0');
        }
        return v <= INT32_MAX ? (pid_t) v : 0;
}

pid_t ctrverify_podman_pid(int root_fd, const char *runroot, const char *id, bool conmon, int64_t owner) {
        static const char *const drivers[] = { "overlay", "vfs", "btrfs", "zfs" };
        char path[PATH_MAX];
        pid_t pid = 0;

        for (size_t i = 0; i < ELEMENTSOF(drivers) && pid == 0; i++)
                if (snprintf(path, sizeof path, "%s/%s-containers/%s/userdata/%s", runroot, drivers[i], id,
                             conmon ? "conmon.pid" : "pidfile") < (int) sizeof path)
                        pid = ctrverify_read_pid(root_fd, path, owner);
        return pid;
}
