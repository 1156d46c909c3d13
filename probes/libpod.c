/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/boltdb.h"
#include "probes/ctrmeta.h"
#include "probes/libpod.h"

#if HAVE_SQLITE
#include <dlfcn.h>
#include <sqlite3.h>
#endif

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

#if HAVE_SQLITE
/* libsqlite3, loaded with dlopen at the first podman 5 database met: psidiag needs it for nothing
 * else, and a node without podman 5 need not have it. */
static struct {
        int (*open_v2)(const char *, sqlite3 **, int, const char *);
        int (*close)(sqlite3 *);
        int (*busy_timeout)(sqlite3 *, int);
        int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
        int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
        int (*step)(sqlite3_stmt *);
        int (*column_type)(sqlite3_stmt *, int);
        const unsigned char *(*column_text)(sqlite3_stmt *, int);
        int (*column_bytes)(sqlite3_stmt *, int);
        int (*finalize)(sqlite3_stmt *);
        const char *(*errmsg)(sqlite3 *);
        bool loaded;
} sqlite;
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;

static void sqlite_load(void) {
        void *h = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);

        if (!h)
                return;
        /* POSIX lets a function pointer be read from dlsym's void * */
        *(void **) &sqlite.open_v2 = dlsym(h, "sqlite3_open_v2");
        *(void **) &sqlite.close = dlsym(h, "sqlite3_close");
        *(void **) &sqlite.busy_timeout = dlsym(h, "sqlite3_busy_timeout");
        *(void **) &sqlite.prepare_v2 = dlsym(h, "sqlite3_prepare_v2");
        *(void **) &sqlite.bind_text = dlsym(h, "sqlite3_bind_text");
        *(void **) &sqlite.step = dlsym(h, "sqlite3_step");
        *(void **) &sqlite.column_type = dlsym(h, "sqlite3_column_type");
        *(void **) &sqlite.column_text = dlsym(h, "sqlite3_column_text");
        *(void **) &sqlite.column_bytes = dlsym(h, "sqlite3_column_bytes");
        *(void **) &sqlite.finalize = dlsym(h, "sqlite3_finalize");
        *(void **) &sqlite.errmsg = dlsym(h, "sqlite3_errmsg");
        sqlite.loaded = sqlite.open_v2 && sqlite.close && sqlite.busy_timeout && sqlite.prepare_v2 &&
                        sqlite.bind_text && sqlite.step && sqlite.column_type && sqlite.column_text &&
                        sqlite.column_bytes && sqlite.finalize && sqlite.errmsg;
        if (!sqlite.loaded)
                dlclose(h);
}

/* A container's pod id (NULL: in no pod) and that pod's name, as podman 5 keeps them
 * (libpod/sqlite_state_internal.go: ContainerConfig's PodID, PodConfig's Name). */
#define POD_QUERY                                                                                                      \
        "SELECT c.PodID, p.Name FROM ContainerConfig AS c LEFT JOIN PodConfig AS p ON p.ID = c.PodID WHERE c.ID = ?1"

static int sqlite_query(sqlite3 *db, const char *id, char *name, size_t size, char *reason) {
        sqlite3_stmt *q = NULL;
        const char *pod;
        int rc, r;

        /* a new connection reads the schema here: a podman's commit makes it busy, not corrupt */
        rc = sqlite.prepare_v2(db, POD_QUERY, -1, &q, NULL);
        if (rc != SQLITE_OK)
                return fail(reason, rc == SQLITE_BUSY ? -EBUSY : -EBADMSG, "db.sql", sqlite.errmsg(db));
        rc = sqlite.bind_text(q, 1, id, -1, SQLITE_TRANSIENT);
        if (rc == SQLITE_OK)
                rc = sqlite.step(q);
        if (rc == SQLITE_DONE)
                r = fail(reason, -ENOENT, "db.sql", "no such container");
        else if (rc != SQLITE_ROW)
                r = fail(reason, rc == SQLITE_BUSY ? -EBUSY : -EBADMSG, "db.sql", sqlite.errmsg(db));
        else if (sqlite.column_type(q, 0) == SQLITE_NULL)
                r = 0;
        /* the text first, then its length (SQLite's order: a conversion may move the text) */
        else if (!(pod = (const char *) sqlite.column_text(q, 0)) || !is_pod_id(pod, sqlite.column_bytes(q, 0)))
                r = fail(reason, -EBADMSG, "db.sql PodID", "not a pod id");
        else if (sqlite.column_type(q, 1) == SQLITE_NULL || sqlite.column_bytes(q, 1) == 0)
                r = fail(reason, -EBADMSG, "db.sql PodConfig", "no name for the container's pod");
        else {
                snprintf(name, size, "%s", (const char *) sqlite.column_text(q, 1));
                r = 1;
        }
        sqlite.finalize(q);
        return r;
}
#endif

/* Podman 5's state, <storage_dir>/db.sql (SQLite), where no bolt_state.db is: podman 5 takes the
 * bbolt file while there is one (libpod/runtime.go: getDBState). Opened read-only by its path
 * through root_fd (/proc/self/fd/<root_fd>/...), so that SQLite's locks and hot-journal check see
 * the file podman writes; its owner checked first without following a symlink (SQLite's own
 * SQLITE_OPEN_NOFOLLOW refuses a symlink anywhere in the path, /proc/self/fd's and a storage
 * directory's too). */
static int sqlite_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                           char *reason) {
        char path[PATH_MAX];
        struct stat st;

        if (snprintf(path, sizeof path, "%s/db.sql", storage_dir) >= (int) sizeof path)
                return fail(reason, -ENAMETOOLONG, "db.sql", NULL);
        if (fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return fail(reason, -errno, "db.sql", NULL);
        if (!ctrmeta_file_trusted(&st, owner))
                return fail(reason, -EPERM, "db.sql", "not a regular file of its owner");
#if HAVE_SQLITE
        char uri[PATH_MAX + 32];
        sqlite3 *db = NULL;
        int rc, r;

        pthread_once(&sqlite_once, sqlite_load);
        if (!sqlite.loaded)
                return fail(reason, -ENOTSUP, "db.sql", "libsqlite3.so.0 cannot be loaded");
        if (snprintf(uri, sizeof uri, "/proc/self/fd/%d/%s", root_fd, path) >= (int) sizeof uri)
                return fail(reason, -ENAMETOOLONG, "db.sql", NULL);
        rc = sqlite.open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc != SQLITE_OK) {
                r = fail(reason, -EIO, "db.sql", db ? sqlite.errmsg(db) : "cannot open");
                sqlite.close(db);
                return r;
        }
        /* a podman writing holds its lock for one transaction: wait 50 ms for it, not longer */
        sqlite.busy_timeout(db, 50);
        r = sqlite_query(db, id, name, size, reason);
        sqlite.close(db);
        return r;
#else
        (void) id;
        (void) name;
        (void) size;
        return fail(reason, -ENOTSUP, "db.sql", "psidiag is built without SQLite");
#endif
}

int libpod_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                    char *reason) {
        char path[PATH_MAX], pod[80], who[128], why[BOLTDB_REASON_MAX];
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (reason)
                reason[0] = '\0';
        if (size == 0)
                return -EINVAL;
        name[0] = '\0';
        if (snprintf(path, sizeof path, "%s/libpod/bolt_state.db", storage_dir) >= (int) sizeof path)
                return fail(reason, -ENAMETOOLONG, "bolt_state.db", NULL);
        /* one open, without following a symlink: the file whose owner is checked is the one read */
        fd = boltdb_open_at(root_fd, path, &st, why);
        if (fd == -ENOENT)
                return sqlite_pod_name(root_fd, storage_dir, owner, id, name, size, reason);
        if (fd < 0)
                return fail(reason, fd, "bolt_state.db", why);
        if (!ctrmeta_file_trusted(&st, owner))
                return fail(reason, -EPERM, "bolt_state.db", "not a regular file of its owner");

        /* all-ctrs maps every container's id to its name: the container is in this database */
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "all-ctrs", id }, 2, who, sizeof who, why);
        if (r < 0)
                return fail(reason, r, "all-ctrs", why);
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "ctr", id, "pod-id" }, 3, pod, sizeof pod, why);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return fail(reason, r, "ctr pod-id", why);
        if (!is_pod_id(pod, r))
                return fail(reason, -EBADMSG, "ctr pod-id", "not a pod id");
        /* id-registry maps every container's and pod's id to its name (AddPod puts it there) */
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "id-registry", pod }, 2, name, size, why);
        if (r < 0) {
                name[0] = '\0';
                return fail(reason, r, "id-registry", why);
        }
        if (r == 0)
                return fail(reason, -EBADMSG, "id-registry", "an empty pod name");
        return 1;
}
