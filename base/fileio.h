/* SPDX-License-Identifier: MIT */
/* Bounded reads of small kernel files relative to a directory fd, so a sysroot (or a test fixture)
 * stands in for / , and whole writes. Never logs. Allocates only in opendir_at() (the DIR); every
 * read and write works in the caller's buffer. */
#pragma once

#include <dirent.h>
#include <stddef.h>
#include <sys/types.h>

/* Reads at most size-1 bytes of dirfd/path into buf and NUL-terminates it. Returns the number of
 * bytes read (truncated silently at size-1; callers that must see the whole file compare with
 * size-1), or -errno: ENOENT/ESRCH when the file or task is gone. */
ssize_t read_file_at(int dirfd, const char *path, char *buf, size_t size);

/* The same in one read(2), for a kernel file that hands all it has to one read with room for it
 * (a procfs record such as /proc/<pid>/task/<tid>/stat, made whole by seq_file's single_open):
 * saves the read that would only find the end. */
ssize_t read_record_at(int dirfd, const char *path, char *buf, size_t size);

/* read_file_at() for a file that may not be there (a controller's file of a cgroup that lacks the
 * controller, a file of an older kernel): 1 and *ret_len when read, 0 when it is missing (ENOENT,
 * or dirfd < 0: no directory), or -errno (-ENODEV: the cgroup is being removed). */
int read_file_optional_at(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len);

/* opendir() of dirfd/path (path "." for dirfd itself: a new fd, so dirfd stays the caller's); the
 * DIR owns its fd. 0 or -errno. */
int opendir_at(int dirfd, const char *path, DIR **ret);

/* The same from an open fd, from its current offset. */
ssize_t read_fd_full(int fd, char *buf, size_t size);

/* Writes all of buf[0..len) to fd, continuing short writes and EINTR. Returns 0, or -errno (-EIO
 * when write returns 0); *ret_done (may be NULL) says how much got in either way. */
int write_all_fd(int fd, const void *buf, size_t len, size_t *ret_done);

/* Writes the string s (without its NUL) to dirfd/path in one write(2). 0, or -errno (-EIO on a
 * short write). */
int write_string_at(int dirfd, const char *path, const char *s);
