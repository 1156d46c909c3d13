/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/safepath.h"
#include "sinks/file.h"

static int open_file(const char *path, struct stat *ret_st, char *why, size_t why_size) {
        _cleanup_close_ int dirfd = -EBADF, fd = -EBADF;
        struct stat dir_st, st;
        const char *base;
        int flags;

        dirfd = safepath_open_parent(path, &base, why, why_size);
        if (dirfd < 0)
                return dirfd;
        /* O_NONBLOCK so a FIFO without a reader fails (ENXIO) instead of blocking the loop. */
        fd = openat(dirfd, base, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0640);
        if (fd < 0) {
                int r = negative_errno();
                snprintf(why, why_size,
                         r == -ELOOP    ? "it is a symlink, which psidiag never follows for its output"
                         : r == -ENXIO  ? "it is a FIFO with no reader"
                         : r == -EISDIR ? "it is a directory"
                                        : "cannot open it");
                return r;
        }
        if (fstat(fd, &st) < 0 || fstat(dirfd, &dir_st) < 0) {
                snprintf(why, why_size, "cannot stat it");
                return negative_errno();
        }
        if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
                snprintf(why, why_size, "it is neither a regular file, a FIFO nor a character device");
                return -EINVAL;
        }
        if (safepath_dir_untrusted(&dir_st) && st.st_uid != geteuid()) {
                snprintf(why, why_size, "it is owned by uid %u in a world-writable directory", (unsigned) st.st_uid);
                return -EPERM;
        }
        if (safepath_dir_untrusted(&dir_st) && S_ISREG(st.st_mode) && st.st_nlink > 1) {
                snprintf(why, why_size, "it has other hard links and sits in a world-writable directory");
                return -EPERM;
        }
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
                snprintf(why, why_size, "cannot make it blocking");
                return negative_errno();
        }
        *ret_st = st;
        return TAKE_FD(fd);
}

static int file_open(Sink *s, char *why, size_t why_size) {
        struct stat st;
        int fd = open_file(s->path, &st, why, why_size);

        if (fd < 0)
                return fd;
        s->fd = fd;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        return 0;
}

static int file_reopen(Sink *s, char *why, size_t why_size) {
        struct stat st;
        int fd = open_file(s->path, &st, why, why_size);

        if (fd < 0)
                return fd;
        safe_close(s->fd);
        s->fd = fd;
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        return 0;
}

/* The path no longer leads to the file we have open (removed, or renamed away with no SIGHUP):
 * open it afresh, so lines do not vanish into an unlinked inode. */
static int follow_path(Sink *s) {
        struct stat st;
        char why[160];
        int r;

        if (fstatat(AT_FDCWD, s->path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
                return 0;
        r = file_reopen(s, why, sizeof why);
        if (r < 0) {
                log_debug_errno(r, "cannot recreate %s: %s", s->path, why);
                return r;
        }
        log_info("%s was removed or replaced; writing to a new file there", s->path);
        return 0;
}

static int write_all(Sink *s, const char *line, size_t len) {
        struct stat st;
        bool regular = fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode);
        size_t done;
        int r = write_all_fd(s->fd, line, len, &done);

        if (r == 0 || done == 0)
                return r;

        /* Part of the line got in. Take it back from a regular file, unless someone else appended
         * meanwhile (then cutting would lose their data). */
        struct stat now;
        if (regular && fstat(s->fd, &now) == 0 && now.st_size == st.st_size + (off_t) done &&
            ftruncate(s->fd, st.st_size) == 0) {
                log_debug("took back %zu bytes of a partial line from %s", done, s->path);
                return r;
        }
        /* A pipe or a file someone else appends to: the reader may see a partial line, which the
         * next line's newline ends; counted as failed like any line not written whole. */
        log_debug("a partial line may have reached %s", s->path);
        return r;
}

static int file_write(Sink *s, json_t *doc, SinkDumpLine dump_line) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = dump_line(doc, &line, &len);

        if (r >= 0)
                r = follow_path(s);
        if (r >= 0)
                r = write_all(s, line, len);
        return r;
}

static void file_close(Sink *s) {
        safe_close(s->fd);
}

static int stdout_open(Sink *s, char *why, size_t why_size) {
        s->fd = STDOUT_FILENO;
        return 0;
}

static int stdout_write(Sink *s, json_t *doc, SinkDumpLine dump_line) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = dump_line(doc, &line, &len);

        return r < 0 ? r : write_all(s, line, len);
}

static void stdout_close(Sink *s) {
}

const SinkOps sink_stdout_ops = {
        .name = "stdout",
        .open = stdout_open,
        .write = stdout_write,
        .close = stdout_close,
};

const SinkOps sink_file_ops = {
        .name = "file",
        .named_by_path = true,
        .open = file_open,
        .write = file_write,
        .reopen = file_reopen,
        .close = file_close,
};
