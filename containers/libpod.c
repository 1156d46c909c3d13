/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "containers/boltdb.h"
#include "containers/ctrfile.h"
#include "containers/ctrmeta.h"
#include "containers/libpod.h"
#include "containers/sqlitedb.h"

/* libpod's ids are 64 hex digits (its stringid.GenerateRandomID). */
static bool is_pod_id(const char *s, int len) {
        if (len != 64)
                return false;
        for (int i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static int fail(char *reason, int r, const char *what, const char *why) {
        if (reason)
                snprintf(reason, LIBPOD_REASON_MAX, "%s: %s", what, why && why[0] ? why : strerror(-r));
        return r;
}

/* A container's pod id (NULL: in no pod) and that pod's name, as podman 5 keeps them
 * (libpod/sqlite_state_internal.go: ContainerConfig's PodID, PodConfig's Name). */
#define POD_QUERY                                                                                                      \
        "SELECT c.PodID, p.Name FROM ContainerConfig AS c LEFT JOIN PodConfig AS p ON p.ID = c.PodID WHERE c.ID = ?1"

static int sqlite_query(SqliteDb *db, const char *id, char *name, size_t size, char *reason) {
        static const char *const ctr_cols[] = { "ID", "PodID" }, *const pod_cols[] = { "ID", "Name" };
        char why[SQLITEDB_REASON_MAX], out[2][128];
        bool null[2];
        int r;

        /* the tables podman makes, not a view or a virtual table in their place */
        r = sqlitedb_check_table(db, "ContainerConfig", ctr_cols, ELEMENTSOF(ctr_cols), why);
        if (r >= 0)
                r = sqlitedb_check_table(db, "PodConfig", pod_cols, ELEMENTSOF(pod_cols), why);
        if (r >= 0)
                r = sqlitedb_row(db, POD_QUERY, id, 2, out, null, why);
        if (r < 0)
                return fail(reason, r, "db.sql", why);
        if (r == 0)
                return fail(reason, -ENOENT, "db.sql", "no such container");
        if (null[0])
                return 0;
        if (!is_pod_id(out[0], (int) strlen(out[0])))
                return fail(reason, -EBADMSG, "db.sql PodID", "not a pod id");
        if (null[1] || !out[1][0])
                return fail(reason, -EBADMSG, "db.sql PodConfig", "no name for the container's pod");
        snprintf(name, size, "%s", out[1]);
        return 1;
}

/* Podman 5's state, <storage_dir>/db.sql (SQLite), where no bolt_state.db is: podman 5 takes the
 * bbolt file while there is one (libpod/runtime.go: getDBState). A rootless user's file, which
 * that user can make hostile: read as containers/sqlitedb.h reads one (by the descriptor whose owner
 * was checked, in memory, no lock, no journal, bounded), never by SQLite from its path. Podman
 * 5.4 writes it in journal mode delete (docs/kernel-facts.md: podman-state), so a -journal beside
 * it is a commit under way, which sqlitedb_open_at() answers with -EBUSY; podman 4's SQLite state
 * was in WAL mode, whose -wal sqlitedb_open_at() applies. */
static int sqlite_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                           char *reason) {
        char path[PATH_MAX], why[SQLITEDB_REASON_MAX];
        SqliteDb *db = NULL;
        int r;

        if (snprintf(path, sizeof path, "%s/db.sql", storage_dir) >= (int) sizeof path)
                return fail(reason, -ENAMETOOLONG, "db.sql", NULL);
        r = sqlitedb_open_at(root_fd, path, owner, 0, &db, why);
        if (r < 0)
                return fail(reason, r, "db.sql", why);
        r = sqlite_query(db, id, name, size, reason);
        sqlitedb_close(db);
        return r;
}

int libpod_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                    char *reason) {
        char path[PATH_MAX], pod[80], who[128], why[BOLTDB_REASON_MAX];
        _cleanup_close_ int dir_fd = -EBADF, fd = -EBADF;
        uint64_t budget = LIBPOD_READ_MAX;
        const char *base;
        struct stat st;
        int r;

        if (reason)
                reason[0] = '\0';
        if (size == 0)
                return -EINVAL;
        name[0] = '\0';
        if (snprintf(path, sizeof path, "%s/libpod/bolt_state.db", storage_dir) >= (int) sizeof path)
                return fail(reason, -ENAMETOOLONG, "bolt_state.db", NULL);
        /* one open, without following a symlink (nor one of owner's on the way, containers/ctrfile.h):
         * the file whose owner is checked is the one read */
        dir_fd = ctrfile_open_parent(root_fd, path, owner, &base);
        fd = dir_fd < 0 ? (dir_fd == -ELOOP ? -EPERM : dir_fd) : boltdb_open_at(dir_fd, base, &st, why);
        if (fd == -ENOENT)
                return sqlite_pod_name(root_fd, storage_dir, owner, id, name, size, reason);
        if (fd < 0)
                return fail(reason, fd, "bolt_state.db", why);
        if (!ctrmeta_file_trusted(&st, owner))
                return fail(reason, -EPERM, "bolt_state.db", "not a regular file of its owner");

        /* all-ctrs maps every container's id to its name: the container is in this database. The
         * three lookups share one budget: a user's file costs one bounded read, not three. */
        r = boltdb_get_fd_budget(fd, &st, (const char *const[]) { "all-ctrs", id }, 2, who, sizeof who, &budget, why);
        if (r < 0)
                return fail(reason, r, "all-ctrs", why);
        r = boltdb_get_fd_budget(fd, &st, (const char *const[]) { "ctr", id, "pod-id" }, 3, pod, sizeof pod, &budget,
                                 why);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return fail(reason, r, "ctr pod-id", why);
        if (!is_pod_id(pod, r))
                return fail(reason, -EBADMSG, "ctr pod-id", "not a pod id");
        /* id-registry maps every container's and pod's id to its name (AddPod puts it there) */
        r = boltdb_get_fd_budget(fd, &st, (const char *const[]) { "id-registry", pod }, 2, name, size, &budget, why);
        if (r < 0) {
                name[0] = '\0';
                return fail(reason, r, "id-registry", why);
        }
        if (r == 0)
                return fail(reason, -EBADMSG, "id-registry", "an empty pod name");
        return 1;
}
