/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"

int opendir_at(int dirfd, const char *path, DIR **ret) {
        int fd = openat(dirfd, path, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                int r = negative_errno();
                safe_close(fd);
                return r;
        }
        *ret = d;
        return 0;
}

ssize_t read_fd_full(int fd, char *buf, size_t size) {
        size_t n = 0;

        if (size == 0)
                return -EINVAL;

        while (n < size - 1) {
                ssize_t k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        return (ssize_t) n;
}

ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_fd_full(fd, buf, size);
}

ssize_t read_record_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t k;

        if (size == 0)
                return -EINVAL;
        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        do
                k = read(fd, buf, size - 1);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return negative_errno();
        buf[k] = '\0';
        return k;
}

int write_string_at(int dirfd, const char *path, const char *s) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(s);
        ssize_t k;

        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        k = write(fd, s, len);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != len)
                return -EIO;
        return 0;
}

int write_all_fd(int fd, const void *buf, size_t len, size_t *ret_done) {
        size_t done = 0;
        int r = 0;

        while (done < len) {
                ssize_t k = write(fd, (const char *) buf + done, len - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? negative_errno() : -EIO;
                        break;
                }
                done += (size_t) k;
        }
        if (ret_done)
                *ret_done = done;
        return r;
}

int read_file_optional_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len) {
        ssize_t n;

        if (dirfd < 0)
                return 0;
        n = read_file_at(dirfd, name, buf, size);
        if (n == -ENOENT)
                return 0;
        if (n < 0)
                return (int) n;
        *ret_len = (size_t) n;
        return 1;
}
