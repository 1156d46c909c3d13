/* SPDX-License-Identifier: MIT */
/* The `podman pod` a podman container belongs to, from podman's libpod state database: a bbolt
 * file (containers/boltdb.h), bolt_state.db in podman's static directory, which is <graph root>/libpod
 * by default (/var/lib/containers/storage/libpod rootful, ~/.local/share/containers/storage/libpod
 * rootless). Podman 4.3 keeps a container's pod id under key "pod-id" of bucket "ctr"/<id>, and
 * a pod's name under its id in bucket "id-registry" (docs/kernel-facts.md: podman-state says where
 * in podman's source). Where there is no bolt_state.db, podman 5's SQLite state, db.sql in the
 * storage directory: ContainerConfig's PodID, PodConfig's Name, read as containers/sqlitedb.h reads a
 * database someone else writes. Reads through the sysroot; never logs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The name of the pod of container id in <storage_dir>/libpod/bolt_state.db beneath root_fd
 * (storage_dir relative, "var/lib/containers/storage"). The file must be a regular file owned by
 * root, by us, or by owner (>= 0: a rootless user's storage); so must <storage_dir>/db.sql, read
 * when there is no bolt_state.db. Returns 1 and copies the pod's name into name (cut to size - 1
 * bytes, NUL-terminated), 0 when the database has the container in no pod, -ENOENT (neither
 * database, or the container is not in it), -EPERM (not a regular file of its owner), -EBADMSG
 * (corrupt, a pod id that is not one, or a db.sql whose tables are not plain tables), -EFBIG,
 * -EBUSY (db.sql mid-commit: its -journal there, or it changed while read), -ETIME (db.sql's
 * lookup past its deadline), -E2BIG and -ENOMEM (db.sql past its limits), -ENOTSUP (db.sql, and
 * no libsqlite3.so.0 or a build without SQLite), -errno. reason (may be NULL, else
 * LIBPOD_REASON_MAX bytes) says why on error, "" otherwise. */
#define LIBPOD_REASON_MAX 160
/* What the three lookups in bolt_state.db may read together (-EFBIG past it): the fixture's take
 * 49152 bytes (tests/unit/test-libpod.c), a podman container's config a few KiB more. */
#define LIBPOD_READ_MAX (4u << 20)
int libpod_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                    char *reason);
