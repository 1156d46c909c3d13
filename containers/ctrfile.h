/* SPDX-License-Identifier: MIT */
/* The way to a runtime's file that a rootless user may have a hand in. Below a user's storage or
 * run directory every component is the user's to replace, and the agent reads as root (or with
 * CAP_DAC_READ_SEARCH): a symlink the user planted, ~/.local/share/containers/storage pointing at
 * /var/lib/containers/storage, would have root's files parsed as the user's own. So a user's path
 * follows no symlink but root's, in a directory of root's that no one else may write (the host's
 * own /home -> /data/home). Root's runtime files (owner < 0) are opened as the kernel resolves them.
 * Never logs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The directory holding the last component of path (relative to root_fd, no leading '/'), an
 * O_PATH fd, and *ret_base pointing at that last component inside path. owner >= 0: walked one
 * component at a time, a symlink followed only as said above. -ELOOP for a refused symlink,
 * -EINVAL for a path with no last component or a "..", -errno. */
int ctrfile_open_parent(int root_fd, const char *path, int64_t owner, const char **ret_base);

/* openat() of path's last component with flags (O_NOFOLLOW is added), through
 * ctrfile_open_parent(): an fd, or -errno as it and openat() say (-ELOOP for a symlink). */
int ctrfile_openat(int root_fd, const char *path, int64_t owner, int flags);

/* Reads root/path, a regular file of at most CTRMETA_FILE_MAX bytes owned by root or by owner
 * (>= 0: a rootless user's storage, whose files that user writes), into a malloc'ed buffer, opened
 * with ctrfile_openat(). Never blocks on a FIFO planted in its place. 0, -ENOENT, -EFBIG, -EPERM
 * (owned by someone else, not a regular file, or reached through a refused symlink), -errno. */
int ctrfile_read(int root_fd, const char *path, int64_t owner, char **ret, size_t *ret_len);
