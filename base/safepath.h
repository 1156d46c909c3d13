/* SPDX-License-Identifier: MIT */
/* Resolving a path that an attacker may have a hand in: a root agent writing to /tmp/x or
 * /var/tmp/dir/x must not follow a symlink someone else planted in a world-writable directory
 * (the kernel's fs.protected_symlinks rule, applied whatever that sysctl is set to). Never logs. */
#pragma once

#include <stddef.h>
#include <sys/stat.h>

/* Walks every directory component of path one openat(O_NOFOLLOW) at a time. A symlink met on the
 * way is followed only when its directory is not world-writable, or the symlink belongs to us or
 * to that directory's owner. Returns an O_PATH directory fd and points *ret_base at the last
 * component inside path; -ELOOP for a refused symlink (why says which), -EINVAL when path has no
 * last component ("", "/", ending in "/", ".", ".."), or -errno. why gets a sentence on failure. */
int safepath_open_parent(const char *path, const char **ret_base, char *why, size_t why_size);

/* True when a file in a directory with mode dir_st may have been put there by someone else. */
static inline int safepath_dir_untrusted(const struct stat *dir_st) {
        return (dir_st->st_mode & S_IWOTH) != 0;
}
