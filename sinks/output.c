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
#include "sinks/journal.h"
#include "sinks/otlp.h"
#include "sinks/output.h"

static bool is_stdout(const OutputSink *o) {
        return strcmp(o->path, "-") == 0;
}

static bool is_journal(const OutputSink *o) {
        return strcmp(o->path, OUTPUT_JOURNAL) == 0;
}

/* Sinks without a file of their own: nothing to open, follow or reopen. */
static bool is_stream(const OutputSink *o) {
        return is_stdout(o) || is_journal(o);
}

static const char *display_name(const OutputSink *o) {
        return strcmp(o->path, "-") == 0 ? "stdout" : o->path;
}

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

int output_open(const char *path, OutputSink **ret, char *why, size_t why_size) {
        OutputSink *o = calloc(1, sizeof *o);
        struct stat st;
        int fd;

        snprintf(why, why_size, "out of memory");
        if (!o)
                return -ENOMEM;
        o->complaints.interval_us = OUTPUT_COMPLAINT_INTERVAL_US;
        o->path = strdup(path);
        if (!o->path) {
                free(o);
                return -ENOMEM;
        }
        if (is_stdout(o))
                fd = STDOUT_FILENO;
        else if (is_journal(o)) {
                if (!journal_supported()) {
                        snprintf(why, why_size, "%s",
                                 HAVE_JOURNAL ? "libsystemd.so.0 cannot be loaded"
                                              : "psidiag was built without journald support (libsystemd)");
                        free(o->path);
                        free(o);
                        return -EOPNOTSUPP;
                }
                fd = -EBADF;
        } else {
                fd = open_file(path, &st, why, why_size);
                if (fd < 0) {
                        free(o->path);
                        free(o);
                        return fd;
                }
                o->dev = st.st_dev;
                o->ino = st.st_ino;
        }
        o->fd = fd;
        *ret = o;
        return 0;
}

int output_reopen(OutputSink *o, char *why, size_t why_size) {
        struct stat st;
        int fd;

        if (is_stream(o))
                return 0;
        fd = open_file(o->path, &st, why, why_size);
        if (fd < 0)
                return fd;
        safe_close(o->fd);
        o->fd = fd;
        o->dev = st.st_dev;
        o->ino = st.st_ino;
        return 0;
}

/* The path no longer leads to the file we have open (removed, or renamed away with no SIGHUP):
 * open it afresh, so lines do not vanish into an unlinked inode. */
static int follow_path(OutputSink *o) {
        struct stat st;
        char why[160];
        int r;

        if (is_stream(o))
                return 0;
        if (fstatat(AT_FDCWD, o->path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == o->dev && st.st_ino == o->ino)
                return 0;
        r = output_reopen(o, why, sizeof why);
        if (r < 0) {
                log_debug_errno(r, "cannot recreate %s: %s", o->path, why);
                return r;
        }
        log_info("%s was removed or replaced; writing to a new file there", o->path);
        return 0;
}

static int write_all(OutputSink *o, const char *line, size_t len) {
        struct stat st;
        bool regular = fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode);
        size_t done;
        int r = write_all_fd(o->fd, line, len, &done);

        if (r == 0 || done == 0)
                return r;

        /* Part of the line got in. Take it back from a regular file, unless someone else appended
         * meanwhile (then cutting would lose their data). */
        struct stat now;
        if (regular && fstat(o->fd, &now) == 0 && now.st_size == st.st_size + (off_t) done &&
            ftruncate(o->fd, st.st_size) == 0) {
                log_debug("took back %zu bytes of a partial line from %s", done, o->path);
                return r;
        }
        /* A pipe or a file someone else appends to: the reader may see a partial line, which the
         * next line's newline ends; counted as failed like any line not written whole. */
        log_debug("a partial line may have reached %s", o->path);
        return r;
}

static void complain(OutputSink *o, int r) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        o->failed_since_complaint++;
        if (!log_ratelimit_pass(&o->complaints, now))
                return;
        log_error_errno(r, "cannot write incident to %s (%llu lost since the last report, %llu in all)",
                        display_name(o), (unsigned long long) o->failed_since_complaint,
                        (unsigned long long) o->failed);
        o->failed_since_complaint = 0;
}

int output_write(OutputSink *o, const char *line, size_t len) {
        _cleanup_free_ char *converted = NULL;
        int r = 0;

        if (o->otlp && !is_journal(o)) {
                r = otlp_format_line(line, len, now_usec(CLOCK_REALTIME) * NSEC_PER_USEC, &converted, &len);
                line = converted;
        }
        if (r >= 0)
                r = follow_path(o);
        if (r >= 0)
                r = is_journal(o) ? journal_send_incident(line, len) : write_all(o, line, len);
        if (r < 0) {
                o->failed++;
                o->failed_since_success++;
                complain(o, r);
                return r;
        }
        o->written++;
        if (o->failed_since_success > 0) {
                log_info("writing incidents to %s again (%llu lost meanwhile)", display_name(o),
                         (unsigned long long) o->failed_since_success);
                o->failed_since_success = 0;
                o->failed_since_complaint = 0;
                log_ratelimit_reset(&o->complaints);
        }
        return 0;
}

OutputSink *output_free(OutputSink *o) {
        if (!o)
                return NULL;
        if (!is_stream(o))
                safe_close(o->fd);
        free(o->path);
        free(o);
        return NULL;
}
