/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "kills/killtrust.h"
#include "probes/procfs.h"

static bool has_suffix(const char *s, size_t len, const char *suffix) {
        size_t n = strlen(suffix);

        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

int killtrust_cgroup_unit(const char *cgroup, const char **ret, size_t *ret_len) {
        const char *p = cgroup, *seg;
        size_t len;

        /* systemd's cg_path_get_unit(): the slices first, then the unit; what is below a unit
         * (a delegated subtree) is the unit's own. */
        while (p && cgpath_next(&p, &seg, &len)) {
                if (has_suffix(seg, len, ".slice"))
                        continue;
                *ret = seg;
                *ret_len = len;
                return 0;
        }
        return -ENOENT;
}

KillerKind killtrust_unit_killer(const char *unit, size_t len) {
        for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                const KillerInfo *i = killmarks_killer(k);

                for (size_t j = 0; j < ELEMENTSOF(i->units) && i->units[j]; j++)
                        if (strlen(i->units[j]) == len && memcmp(i->units[j], unit, len) == 0)
                                return k;
        }
        return KILLER_UNKNOWN;
}

/* Owned by owner and writable by no one else: no other user can have put or renamed what it holds. */
static bool owned_alone(const struct stat *st, uid_t owner) {
        return st->st_uid == owner && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static bool in_exe_dir(const char *path, size_t dir_len) {
        static const char *const dirs[] = KILLTRUST_EXE_DIRS;

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if (strlen(dirs[i]) == dir_len && memcmp(dirs[i], path, dir_len) == 0)
                        return true;
        return false;
}

int killtrust_exe_check(int root_fd, const char *path, int exe_fd, uid_t owner) {
        const char *slash = path ? strrchr(path, '/') : NULL, *p;
        struct stat running, st;
        int fd;

        if (!path || path[0] != '/' || !slash || !slash[1] || !in_exe_dir(path, (size_t) (slash - path)))
                return 0;
        if (fstat(exe_fd, &running) < 0)
                return -errno;
        fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* One component at a time from the root, never through a symlink: each directory, then the
         * file, is checked for who could have changed it. */
        for (p = path;;) {
                char name[NAME_MAX + 1];
                const char *seg;
                size_t len;
                bool last;
                int next;

                if (fstat(fd, &st) < 0) {
                        int r = -errno;
                        safe_close(fd);
                        return r;
                }
                if (!owned_alone(&st, owner)) {
                        safe_close(fd);
                        return 0;
                }
                if (!cgpath_next(&p, &seg, &len))
                        break;
                last = seg == slash + 1;
                if (len > NAME_MAX || (len == 1 && seg[0] == '.') || (len == 2 && memcmp(seg, "..", 2) == 0)) {
                        safe_close(fd);
                        return 0;
                }
                memcpy(name, seg, len);
                name[len] = '\0';
                next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                safe_close(fd);
                if (next < 0)
                        return -errno;
                fd = next;
                if (fstat(fd, &st) < 0 || !(last ? S_ISREG(st.st_mode) : S_ISDIR(st.st_mode))) {
                        safe_close(fd);
                        return 0; /* a symlink (O_NOFOLLOW opened the link itself), or no directory */
                }
                if (last) {
                        safe_close(fd);
                        return owned_alone(&st, owner) && st.st_dev == running.st_dev && st.st_ino == running.st_ino;
                }
        }
        safe_close(fd);
        return 0;
}

KillerKind killtrust_process(const Sysroot *s, pid_t pid, uid_t owner) {
        char name[32], exe[PATH_MAX], cg[1024];
        const char *unit;
        size_t unit_len;
        ssize_t n;

        snprintf(name, sizeof name, "%d/exe", (int) pid);
        /* EACCES for a process of another uid (ptrace access mode, CAP_SYS_PTRACE not held);
         * ENOENT for a kernel thread or one that has ended. */
        n = readlinkat(s->proc_fd, name, exe, sizeof exe - 1);
        if (n > 0) {
                const char *b;
                KillerKind k;

                exe[n] = '\0';
                b = strrchr(exe, '/');
                k = killmarks_known_executable(b ? b + 1 : exe);
                if (k != KILLER_UNKNOWN) {
                        /* The file itself, whatever its path shows: a pid reused since the readlink
                         * runs another file, which the inode comparison then refuses. */
                        int fd = openat(s->proc_fd, name, O_PATH | O_CLOEXEC), r;

                        if (fd >= 0) {
                                r = killtrust_exe_check(s->root_fd, exe, fd, owner);
                                safe_close(fd);
                                if (r > 0)
                                        return k;
                        }
                }
        }
        if (proc_read_cgroup(s->proc_fd, pid, cg, sizeof cg) < 0 || proc_cgroup_outside_namespace(cg) ||
            killtrust_cgroup_unit(cg, &unit, &unit_len) < 0)
                return KILLER_UNKNOWN;
        return killtrust_unit_killer(unit, unit_len);
}
