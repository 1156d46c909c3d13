/* SPDX-License-Identifier: MIT */
/* A read-only lookup of one value in a bbolt database file (go.etcd.io/bbolt's format, version 2,
 * as containerd keeps its metadata in /var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db;
 * docs/kernel-facts.md: containerd-metadata says what each field is and where in the
 * bbolt source it is read). A path of nested buckets and a key: {"v1", "default", "containers",
 * "web", "image"}. The newer valid meta page of the two (magic, version, FNV-1a checksum), then
 * each bucket's B+tree from its root page or its inline page, following branch pages to a leaf.
 * Every offset is checked against its page and every page against the file and the meta page's
 * high water mark; a page must say it is the page asked for; a lookup visits at most
 * BOLTDB_PAGES_MAX pages, descends at most BOLTDB_DEPTH_MAX branch levels per bucket and reads at
 * most BOLTDB_READ_MAX bytes, so a corrupt, truncated or hostile file gives an error, never a crash
 * or a loop. Reads with pread what it visits (never the whole file); never writes, never locks
 * (bbolt's own lock is advisory: a reader racing a commit may read a torn page, which is an
 * error like any corruption). Never logs. Integers are read in the host's byte order, as bbolt
 * writes them. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define BOLTDB_PAGES_MAX 512        /* pages visited in one lookup */
#define BOLTDB_DEPTH_MAX 32         /* branch levels in one bucket's tree */
#define BOLTDB_READ_MAX (64u << 20) /* bytes read in one lookup; a page with its overflow at most this */
#define BOLTDB_REASON_MAX 128

/* Looks keys[0..n-1] up in the file at path beneath dir_fd (opened with O_NOFOLLOW, O_NONBLOCK;
 * it must be a regular file): keys[0..n-2] nested buckets, keys[n-1] a plain key in the last.
 * Copies its value into value (size > 0; cut to size - 1 bytes, always NUL-terminated) and
 * returns its whole length (>= 0). Errors: -ENOENT (the file, a bucket or the key is absent),
 * -EBADMSG (not a bbolt file, or corrupt or truncated), -EFBIG (the lookup would read more than
 * BOLTDB_READ_MAX bytes or visit more than BOLTDB_PAGES_MAX pages), -EPERM (not a regular file,
 * or a symlink), -EINVAL (n == 0), -ENOMEM, -errno. reason (may be NULL, else
 * BOLTDB_REASON_MAX bytes) says what was wrong, "" on success. */
int boltdb_get_at(int dir_fd, const char *path, const char *const *keys, size_t n, char *value, size_t size,
                  char *reason);

/* Opens path beneath dir_fd for boltdb_get_fd() as boltdb_get_at() does (O_NOFOLLOW, O_NONBLOCK,
 * O_CLOEXEC; a regular file) and fills *ret_st from the descriptor it opened, so that a caller
 * checks the file it reads (its owner) and looks several keys up in one open. Returns the
 * descriptor, or -errno (-EPERM: a symlink or not a regular file) with reason as above. */
int boltdb_open_at(int dir_fd, const char *path, struct stat *ret_st, char *reason);

/* boltdb_get_at() in a file boltdb_open_at() opened, st what it filled. Each lookup reads the
 * meta pages again: a commit between two lookups is seen by the second. */
int boltdb_get_fd(int fd, const struct stat *st, const char *const *keys, size_t n, char *value, size_t size,
                  char *reason);

/* boltdb_get_fd() within a budget that several lookups share: it reads at most *budget_bytes
 * (and at most BOLTDB_READ_MAX), -EFBIG past it, and takes what it read off *budget_bytes
 * whatever it returns. NULL: BOLTDB_READ_MAX for this lookup. */
int boltdb_get_fd_budget(int fd, const struct stat *st, const char *const *keys, size_t n, char *value, size_t size,
                         uint64_t *budget_bytes, char *reason);

/* The same in a file held in memory (len bytes at buf). */
int boltdb_get_buf(const void *buf, size_t len, const char *const *keys, size_t n, char *value, size_t size,
                   char *reason);
