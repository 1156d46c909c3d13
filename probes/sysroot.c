/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "probes/sysroot.h"

/* Unescapes mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static char *unescape_mount_field(const char *s, size_t len) {
        char *out = malloc(len + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char) ((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return out;
}

/* Walks mountinfo lines; for each calls match(fstype, superopts) and returns the mount point of the
 * first that matches. Format (proc(5)): id parent maj:min root mountpoint opts [optional...] - fstype
 * source superopts. */
static int mountinfo_find(const char *buf,
                          bool (*match)(const char *fstype, size_t flen, const char *sopts, size_t slen,
                                        const void *arg),
                          const void *arg, char **ret_path, char **ret_root) {
        const char *p = buf;

        while (p && *p) {
                const char *eol = strchr(p, '\n');
                const char *end = eol ? eol : p + strlen(p);
                const char *f[5];
                const char *q = p, *sep;
                size_t field = 0;

                /* First five space-separated fields. */
                while (field < 5 && q < end) {
                        f[field++] = q;
                        q = memchr(q, ' ', (size_t) (end - q));
                        if (!q)
                                break;
                        q++;
                }
                sep = field == 5 ? strstr(f[4], " - ") : NULL;
                if (sep && sep < end) {
                        const char *fstype = sep + 3;
                        const char *fend = memchr(fstype, ' ', (size_t) (end - fstype));
                        const char *source, *send, *sopts = "";
                        size_t slen = 0;

                        if (fend) {
                                source = fend + 1;
                                send = memchr(source, ' ', (size_t) (end - source));
                                if (send) {
                                        sopts = send + 1;
                                        slen = (size_t) (end - sopts);
                                }
                        } else
                                fend = end;

                        if (match(fstype, (size_t) (fend - fstype), sopts, slen, arg)) {
                                const char *mp = f[4];
                                const char *mpe = memchr(mp, ' ', (size_t) (end - mp));
                                char *path = unescape_mount_field(mp, (size_t) ((mpe ? mpe : end) - mp));
                                char *root = NULL;

                                if (!path)
                                        return -ENOMEM;
                                if (ret_root) {
                                        root = unescape_mount_field(f[3], (size_t) (f[4] - 1 - f[3]));
                                        if (!root) {
                                                free(path);
                                                return -ENOMEM;
                                        }
                                        *ret_root = root;
                                }
                                *ret_path = path;
                                return 0;
                        }
                }
                p = eol ? eol + 1 : NULL;
        }
        return -ENOENT;
}

static bool match_fstype(const char *fstype, size_t flen, const char *sopts, size_t slen, const void *arg) {
        (void) sopts;
        (void) slen;
        return strlen(arg) == flen && memcmp(fstype, arg, flen) == 0;
}

static bool match_cgroup1(const char *fstype, size_t flen, const char *sopts, size_t slen, const void *arg) {
        const char *controller = arg;
        size_t clen = strlen(controller);
        const char *p = sopts, *end = sopts + slen;

        if (flen != 6 || memcmp(fstype, "cgroup", 6) != 0)
                return false;
        while (p < end) {
                const char *comma = memchr(p, ',', (size_t) (end - p));
                const char *oe = comma ? comma : end;

                if ((size_t) (oe - p) == clen && memcmp(p, controller, clen) == 0)
                        return true;
                p = comma ? comma + 1 : end;
        }
        return false;
}

int mountinfo_find_fstype(const char *buf, const char *fstype, char **ret_path) {
        return mountinfo_find(buf, match_fstype, fstype, ret_path, NULL);
}

int mountinfo_find_fstype_root(const char *buf, const char *fstype, char **ret_path, char **ret_root) {
        return mountinfo_find(buf, match_fstype, fstype, ret_path, ret_root);
}

int mountinfo_find_cgroup1(const char *buf, const char *controller, char **ret_path) {
        return mountinfo_find(buf, match_cgroup1, controller, ret_path, NULL);
}

/* Opens an absolute path from the mountinfo relative to the sysroot's root fd. */
static int open_beneath_root(int root_fd, const char *abs, int flags) {
        while (*abs == '/')
                abs++;
        return openat(root_fd, *abs ? abs : ".", flags | O_CLOEXEC);
}

/* /proc/self/mountinfo: a busy container host's can be large, so the buffer grows until it fits
 * (bounded at 16 MiB). */
static int read_mountinfo(int proc_fd, char **ret) {
        size_t size = 64 * 1024;

        for (;;) {
                _cleanup_free_ char *buf = malloc(size);
                ssize_t n;

                if (!buf)
                        return -ENOMEM;
                n = read_file_at(proc_fd, "self/mountinfo", buf, size);
                if (n < 0)
                        return (int) n;
                if ((size_t) n < size - 1 || size >= 16 * 1024 * 1024) {
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
                size *= 4;
        }
}

/* The cgroup mounts from mountinfo: cgroup2's (opened), the v1 hierarchies read, and the v1
 * controllers listed. -ENOMEM only: a mount not there is not an error. */
static int find_cgroup_mounts(Sysroot *s, const char *mountinfo) {
        static const char *const v1_listed[] = {
                "cpu", "cpuacct", "memory", "blkio", "io", "pids", "cpuset", "freezer"
        };
        struct {
                const char *controller;
                char **path;
        } v1[] = { { "memory", &s->memory_v1_path },
                   { "cpu", &s->cpu_v1_path },
                   { "cpuacct", &s->cpuacct_v1_path },
                   { "blkio", &s->blkio_v1_path } };
        int r = mountinfo_find_fstype_root(mountinfo, "cgroup2", &s->cgroup2_path, &s->cgroup2_root);

        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                s->cgroup2_fd = open_beneath_root(s->root_fd, s->cgroup2_path, O_DIRECTORY | O_RDONLY);
        for (size_t i = 0; i < ELEMENTSOF(v1); i++)
                if (mountinfo_find_cgroup1(mountinfo, v1[i].controller, v1[i].path) == -ENOMEM)
                        return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(v1_listed); i++) {
                _cleanup_free_ char *path = NULL;

                r = mountinfo_find_cgroup1(mountinfo, v1_listed[i], &path);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && strlen(s->v1_controllers) + strlen(v1_listed[i]) + 2 < sizeof s->v1_controllers) {
                        strcat(s->v1_controllers, s->v1_controllers[0] ? " " : "");
                        strcat(s->v1_controllers, v1_listed[i]);
                }
        }
        return 0;
}

int sysroot_open(const char *root, Sysroot **ret) {
        _cleanup_free_ char *mountinfo = NULL;
        struct statfs sfs;
        Sysroot *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->proc_fd = s->pressure_fd = s->cgroup2_fd = -EBADF;

        s->root_fd = open(root, O_DIRECTORY | O_PATH | O_CLOEXEC);
        if (s->root_fd < 0) {
                r = negative_errno();
                goto fail;
        }
        s->proc_fd = openat(s->root_fd, "proc", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        if (s->proc_fd < 0) {
                r = negative_errno();
                goto fail;
        }
        s->proc_is_procfs = fstatfs(s->proc_fd, &sfs) >= 0 && sfs.f_type == PROC_SUPER_MAGIC;
        s->pressure_fd = openat(s->proc_fd, "pressure", O_DIRECTORY | O_PATH | O_CLOEXEC);
        r = read_mountinfo(s->proc_fd, &mountinfo);
        if (r >= 0)
                r = find_cgroup_mounts(s, mountinfo);
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        sysroot_free(s);
        return r;
}

Sysroot *sysroot_free(Sysroot *s) {
        if (!s)
                return NULL;
        safe_close(s->root_fd);
        safe_close(s->proc_fd);
        safe_close(s->pressure_fd);
        safe_close(s->cgroup2_fd);
        free(s->cgroup2_path);
        free(s->cgroup2_root);
        free(s->memory_v1_path);
        free(s->cpu_v1_path);
        free(s->cpuacct_v1_path);
        free(s->blkio_v1_path);
        free(s);
        return NULL;
}

int cgroup_path_validate(const char *path) {
        const char *p = path;

        if (!path)
                return -EINVAL;
        if (*p == '/')
                p++;
        if (*p == '\0')
                return 0;
        for (;;) {
                size_t len = strcspn(p, "/");

                if (len == 0)
                        return -EINVAL; /* "a//b" or a trailing "/" */
                if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
                        return -EINVAL;
                if (len > 255)
                        return -ENAMETOOLONG;
                p += len;
                if (*p == '\0')
                        return 0;
                p++;
                if (*p == '\0')
                        return -EINVAL;
        }
}

int cgroup_open_walk(int dirfd, const char *path, int *ret_fd) {
        _cleanup_close_ int cur = -EBADF;
        const char *p = path;
        struct stat root, st;

        if (fstat(dirfd, &root) < 0)
                return negative_errno();
        cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return negative_errno();
        while (*p == '/')
                p++;
        while (*p) {
                char name[256];
                size_t len = strcspn(p, "/");
                int next;

                if (len >= sizeof name)
                        return -ENAMETOOLONG;
                memcpy(name, p, len);
                name[len] = '\0';
                next = openat(cur, name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0) {
                        int r = negative_errno();
                        /* O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR; say what openat2 says. */
                        if (r == -ENOTDIR && fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                                r = -ELOOP;
                        return r;
                }
                safe_close(cur);
                cur = next;
                if (fstat(cur, &st) < 0)
                        return negative_errno();
                if (st.st_dev != root.st_dev)
                        return -EXDEV; /* another mount on the way, as RESOLVE_NO_XDEV refuses */
                p += len;
                while (*p == '/')
                        p++;
        }
        *ret_fd = TAKE_FD(cur);
        return 0;
}

int sysroot_open_cgroup(const Sysroot *s, const char *path, int *ret_fd) {
        struct open_how how = {
                .flags = O_DIRECTORY | O_RDONLY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        int fd, r;

        if (s->cgroup2_fd < 0)
                return -ENODEV;
        r = cgroup_path_validate(path);
        if (r < 0)
                return r;
        while (*path == '/')
                path++;

        fd = (int) syscall(SYS_openat2, s->cgroup2_fd, *path ? path : ".", &how, sizeof how);
        if (fd >= 0) {
                *ret_fd = fd;
                return 0;
        }
        if (errno != ENOSYS && errno != EPERM)
                return negative_errno();
        /* Kernels before 5.6 (or seccomp filters that refuse openat2): the path was validated to have
         * no "..", so a component-wise O_NOFOLLOW walk cannot leave the mount through a symlink. */
        return cgroup_open_walk(s->cgroup2_fd, path, ret_fd);
}

int sysroot_open_v1_mount(const Sysroot *s, CgroupV1Controller c, int *ret_fd) {
        const char *mounts[_CGROUP_V1_MAX] = {
                [CGROUP_V1_MEMORY] = s->memory_v1_path,
                [CGROUP_V1_CPU] = s->cpu_v1_path,
                [CGROUP_V1_CPUACCT] = s->cpuacct_v1_path,
                [CGROUP_V1_BLKIO] = s->blkio_v1_path,
        };
        const char *m;
        int fd;

        assert(c < _CGROUP_V1_MAX);
        m = mounts[c];
        if (!m)
                return -ENOENT;
        fd = open_beneath_root(s->root_fd, m, O_DIRECTORY | O_RDONLY);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

int sysroot_open_v1(const Sysroot *s, CgroupV1Controller c, const char *path, int *ret_fd) {
        _cleanup_close_ int mount_fd = -EBADF;
        int r;

        r = sysroot_open_v1_mount(s, c, &mount_fd);
        if (r < 0)
                return r;
        return cgroup_open_walk(mount_fd, path, ret_fd);
}
