/* SPDX-License-Identifier: MIT */
#include "containers/ctrfile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "containers/ctrmeta.h"

/* A symlink at name in dir is followed only when it and dir are root's and dir is writable by no
 * one else: a user can make neither (and fs.protected_hardlinks keeps root's link out of theirs). */
static bool link_trusted(int dir_fd, const struct stat *link_st) {
        struct stat dir_st;

        if (link_st->st_uid != 0 || fstat(dir_fd, &dir_st) < 0)
                return false;
        return dir_st.st_uid == 0 && (dir_st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

int ctrfile_open_parent(int root_fd, const char *path, int64_t owner, const char **ret_base) {
        _cleanup_close_ int fd = -EBADF;
        const char *base = strrchr(path, '/'), *p = path;
        char name[NAME_MAX + 1];

        base = base ? base + 1 : path;
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || path[0] == '/')
                return -EINVAL;
        if (owner < 0) {
                size_t n = (size_t) (base - path);
                char dir[PATH_MAX];

                if (n >= sizeof dir)
                        return -ENAMETOOLONG;
                memcpy(dir, path, n);
                dir[n] = '\0';
                fd = openat(root_fd, n ? dir : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                *ret_base = base;
                return TAKE_FD(fd);
        }
        fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (p < base) {
                const char *end = strchr(p, '/');
                size_t n = (size_t) (end - p);
                struct stat st;
                int next;

                p = end + 1;
                if (n == 0)
                        continue;
                if (n > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(name, end - n, n);
                name[n] = '\0';
                if (strcmp(name, ".") == 0)
                        continue;
                if (strcmp(name, "..") == 0)
                        return -EINVAL;
                if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode) && !link_trusted(fd, &st))
                        return -ELOOP;
                /* O_NOFOLLOW unless the link was judged: one swapped in since fails with ENOTDIR */
                next = openat(fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | (S_ISLNK(st.st_mode) ? 0 : O_NOFOLLOW));
                if (next < 0)
                        return errno == ENOTDIR && S_ISDIR(st.st_mode) ? -ELOOP : -errno;
                close(fd);
                fd = next;
        }
        *ret_base = base;
        return TAKE_FD(fd);
}

int ctrfile_openat(int root_fd, const char *path, int64_t owner, int flags) {
        _cleanup_close_ int dir = -EBADF;
        const char *base;
        int fd;

        dir = ctrfile_open_parent(root_fd, path, owner, &base);
        if (dir < 0)
                return dir;
        fd = openat(dir, base, flags | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int ctrfile_read(int root_fd, const char *path, int64_t owner, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        fd = ctrfile_openat(root_fd, path, owner, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fd == -ELOOP ? -EPERM : fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!ctrmeta_file_trusted(&st, owner))
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
