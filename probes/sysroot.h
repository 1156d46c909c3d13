/* SPDX-License-Identifier: MIT */
/* Where the kernel's files are: a root directory (normally "/", a fixture tree in tests) with fds
 * for /proc, /proc/pressure and the cgroup2 mount, and the cgroup-v1 controller mounts, all found
 * in the one read of /proc/self/mountinfo (kernel-facts.md: cgroup2-mount; hybrid hosts mount
 * cgroup2 at /sys/fs/cgroup/unified). Everything else asks the sysroot for those mounts. Also
 * resolves watch paths safely beneath the mount. Never logs above debug. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/macro.h"

typedef struct Sysroot {
        int root_fd;
        int proc_fd;         /* <root>/proc */
        bool proc_is_procfs; /* proc_fd is procfs itself (not a test's tree): directory offsets are indexes */
        int pressure_fd;     /* <root>/proc/pressure, -1 when the kernel has no PSI */
        int cgroup2_fd;      /* the cgroup2 mount, -1 when none is mounted */
        char *cgroup2_path;  /* its mount point as seen from the root, e.g. "/sys/fs/cgroup/unified" */
        /* its root in mountinfo, relative to our cgroup namespace's root: "/", or "/../.." for a
         * mount of the host's tree seen from a namespace two levels down (kernel-facts.md:
         * cgroupns-paths) */
        char *cgroup2_root;
        char *memory_v1_path; /* a cgroup-v1 memory controller mount, or NULL (hybrid hosts) */
        char *cpu_v1_path;    /* the same for cpu (cpu.cfs_quota_us), cpuacct and blkio */
        char *cpuacct_v1_path;
        char *blkio_v1_path;
        char v1_controllers[128]; /* which of cpu cpuacct memory blkio io pids cpuset freezer are
                                   * mounted as cgroup v1, space-separated ("" none): `psidiag check` */
} Sysroot;

/* The cgroup-v1 controllers whose directories stand in for cgroup2 files on hybrid hosts. */
typedef enum CgroupV1Controller {
        CGROUP_V1_MEMORY,
        CGROUP_V1_CPU,
        CGROUP_V1_CPUACCT,
        CGROUP_V1_BLKIO,
        _CGROUP_V1_MAX,
} CgroupV1Controller;

/* Opens root (e.g. "/") and its /proc; finds the cgroup2 mount and the v1 mounts of memory, cpu,
 * cpuacct and blkio (one mountinfo read). A missing cgroup2
 * mount or /proc/pressure is not an error (their fds are -1). Returns 0 or -errno. */
int sysroot_open(const char *root, Sysroot **ret);
Sysroot *sysroot_free(Sysroot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sysroot *, sysroot_free);

/* Finds mount points in a mountinfo buffer. Mount points are unescaped (\040 -> space).
 * mountinfo_find_fstype: the first mount of fstype ("cgroup2"); mountinfo_find_cgroup1: the first
 * "cgroup" mount whose super options list the controller. Return 0 and a malloc'ed path, -ENOENT
 * if none, -ENOMEM. */
int mountinfo_find_fstype(const char *buf, const char *fstype, char **ret_path);
/* The same, with the mount's root field (unescaped, malloc'ed) in *ret_root. */
int mountinfo_find_fstype_root(const char *buf, const char *fstype, char **ret_path, char **ret_root);
int mountinfo_find_cgroup1(const char *buf, const char *controller, char **ret_path);

/* Checks a configured cgroup path: relative to the cgroup2 mount, no "." or ".." segments, no
 * empty segments, no NUL. "" and "/" mean the root. Returns 0 or -EINVAL. */
int cgroup_path_validate(const char *path);

/* Opens a cgroup directory beneath the cgroup2 mount (O_DIRECTORY), refusing symlinks and
 * anything that would leave the mount (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|NO_XDEV, with a
 * component-by-component O_NOFOLLOW walk where openat2 is missing). "" opens the root.
 * Returns 0 or -errno: ENOENT (no such cgroup), ENODEV (no cgroup2 mount), EINVAL (bad path),
 * ELOOP/EXDEV (a symlink or another mount in the way). */
int sysroot_open_cgroup(const Sysroot *s, const char *path, int *ret_fd);

/* The fallback of sysroot_open_cgroup for kernels (and valgrind) without openat2: one
 * openat(O_NOFOLLOW) per component, with the same errors (ELOOP for a symlink, EXDEV for another
 * mount). Exposed for tests. */
int cgroup_open_walk(int dirfd, const char *path, int *ret_fd);

/* Opens the root directory of controller c's cgroup-v1 mount. -ENOENT when c is not mounted on v1,
 * or -errno (a mount point we cannot open: another mount namespace's leftovers). */
int sysroot_open_v1_mount(const Sysroot *s, CgroupV1Controller c, int *ret_fd);

/* Opens the cgroup-v1 directory of controller c at path ("a/b" relative to that hierarchy's root,
 * "" the root), beneath its mount like sysroot_open_cgroup(). Hybrid hosts managed by systemd keep
 * the same paths in every hierarchy, so a cgroup2 path names its v1 twin. -ENOENT when the
 * controller is not mounted on v1 or the directory does not exist, or -errno. */
int sysroot_open_v1(const Sysroot *s, CgroupV1Controller c, const char *path, int *ret_fd);

/* The one test for "the cgroup went away" while we looked: ENOENT (no such directory or file any
 * more) or ENODEV (a pressure file or directory of a cgroup being removed). An expected race,
 * handled by name and never logged as an error. r is a negative errno. */
static inline bool cgroup_is_gone(int r) {
        return r == -ENOENT || r == -ENODEV;
}
