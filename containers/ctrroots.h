/* SPDX-License-Identifier: MIT */
/* Where containers/storage keeps a podman's files, as it chooses them (types/options.go): the
 * graph root (containers.json, libpod's state) and the run root (the pidfiles) of rootful podman,
 * from the system's storage.conf, and of a rootless user's, from the user's own storage.conf too
 * (read through containers/ctrfile.h as that user's file, once). Paths are relative to the
 * sysroot; what cannot be read or expanded is said at debug level. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* podman's containers/storage directories beneath root_fd (borrowed), for user_uid (the user whose
 * systemd instance holds the scope; <= 0 rootful): the graph root into dir and, with run
 * (non-NULL), the run root into run, "" when the user's runroot cannot be known (a variable of
 * their environment: no pidfile is to be read then). Rootful: the system storage.conf's graphroot
 * and runroot, else /var/lib/containers/storage and /run/containers/storage. Rootless (name and
 * home from /etc/passwd): the system's rootless_storage_path, else
 * ~/.local/share/containers/storage; then the user's ~/.config/containers/storage.conf's
 * graphroot, else its rootless_storage_path; its runroot, else /run/user/<uid>/containers
 * (kernel-facts.md: runtime-pidfiles). 0, or -errno (no /etc/passwd, no such user). */
int ctrroots_podman(int root_fd, int64_t user_uid, char *dir, size_t size, char *run, size_t run_size);
