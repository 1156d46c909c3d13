/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/timeutil.h"
#include "containers/ctrfile.h"
#include "containers/ctrmeta.h"
#include "containers/sqlitedb.h"
#include "containers/sqlitewal.h"

static int fail(char *reason, int r, const char *fmt, ...) {
        va_list ap;

        if (reason) {
                va_start(ap, fmt);
                vsnprintf(reason, SQLITEDB_REASON_MAX, fmt, ap);
                va_end(ap);
        }
        return r;
}

#if HAVE_SQLITE
#include <sqlite3.h>

#include "base/dlsyms.h"

/* libsqlite3, loaded with dlopen at the first database met: psidiag needs it for nothing else,
 * and a node without podman 5 need not have it. */
static struct {
        int (*open_v2)(const char *, sqlite3 **, int, const char *);
        int (*close)(sqlite3 *);
        int (*deserialize)(sqlite3 *, const char *, unsigned char *, sqlite3_int64, sqlite3_int64, unsigned);
        int (*db_config)(sqlite3 *, int, ...);
        int (*limit)(sqlite3 *, int, int);
        void (*progress_handler)(sqlite3 *, int, int (*)(void *), void *);
        sqlite3_int64 (*hard_heap_limit64)(sqlite3_int64);
        int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
        int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
        int (*step)(sqlite3_stmt *);
        int (*column_type)(sqlite3_stmt *, int);
        const unsigned char *(*column_text)(sqlite3_stmt *, int);
        int (*finalize)(sqlite3_stmt *);
        const char *(*errmsg)(sqlite3 *);
        bool loaded;
} api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_load(void) {
        const DlSym syms[] = {
                { "sqlite3_open_v2", (void **) &api.open_v2 },
                { "sqlite3_close", (void **) &api.close },
                { "sqlite3_deserialize", (void **) &api.deserialize },
                { "sqlite3_db_config", (void **) &api.db_config },
                { "sqlite3_limit", (void **) &api.limit },
                { "sqlite3_progress_handler", (void **) &api.progress_handler },
                { "sqlite3_hard_heap_limit64", (void **) &api.hard_heap_limit64 },
                { "sqlite3_prepare_v2", (void **) &api.prepare_v2 },
                { "sqlite3_bind_text", (void **) &api.bind_text },
                { "sqlite3_step", (void **) &api.step },
                { "sqlite3_column_type", (void **) &api.column_type },
                { "sqlite3_column_text", (void **) &api.column_text },
                { "sqlite3_finalize", (void **) &api.finalize },
                { "sqlite3_errmsg", (void **) &api.errmsg },
        };
        if (!dlsyms_open("libsqlite3.so.0", syms, ELEMENTSOF(syms)))
                return;
        /* Process-wide, and psidiag's only use of SQLite is this: a hostile database's query
         * fails with SQLITE_NOMEM past it instead of growing the (mlocked) agent. The database's
         * bytes are ours (malloc'ed, at most SQLITEDB_FILE_MAX), not SQLite's heap. */
        api.hard_heap_limit64(SQLITEDB_HEAP_MAX);
        api.loaded = true;
}

bool sqlitedb_available(void) {
        pthread_once(&api_once, api_load);
        return api.loaded;
}

struct SqliteDb {
        sqlite3 *db;
        uint8_t *bytes;          /* the file as read: SQLite's database, not freed by it */
        usec_t deadline_cpu_us;  /* of this thread's cpu time */
        usec_t deadline_mono_us; /* SQLITEDB_WALL_FACTOR times as long */
};

/* A lookup ends when it has spent its deadline's cpu time, the database's work; or, on a machine
 * so loaded that it was not run meanwhile, SQLITEDB_WALL_FACTOR times as long. */
static int past_deadline(void *userdata) {
        const SqliteDb *d = userdata;

        return now_usec(CLOCK_THREAD_CPUTIME_ID) > d->deadline_cpu_us ||
               now_usec(CLOCK_MONOTONIC) > d->deadline_mono_us;
}

static int sqlite_errno(int rc) {
        switch (rc & 0xff) {
        case SQLITE_INTERRUPT:
                return -ETIME;
        case SQLITE_TOOBIG:
                return -E2BIG;
        case SQLITE_NOMEM:
                return -ENOMEM;
        default:
                return -EBADMSG;
        }
}

/* What one lookup of a few short values needs, and no more: a row past 4 MiB, a statement past
 * 2000 opcodes or an expression 50 deep is an error, not work. */
static void harden(sqlite3 *db) {
        static const int limits[][2] = {
                { SQLITE_LIMIT_LENGTH, 4 << 20 },
                { SQLITE_LIMIT_SQL_LENGTH, 65536 },
                { SQLITE_LIMIT_COLUMN, 100 },
                { SQLITE_LIMIT_EXPR_DEPTH, 50 },
                { SQLITE_LIMIT_COMPOUND_SELECT, 4 },
                { SQLITE_LIMIT_VDBE_OP, 2000 },
                { SQLITE_LIMIT_FUNCTION_ARG, 8 },
                { SQLITE_LIMIT_ATTACHED, 0 },
                { SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 64 },
                { SQLITE_LIMIT_VARIABLE_NUMBER, 4 },
                { SQLITE_LIMIT_TRIGGER_DEPTH, 1 },
        };
        static const int off[] = { SQLITE_DBCONFIG_ENABLE_VIEW, SQLITE_DBCONFIG_ENABLE_TRIGGER,
                                   SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_FKEY,
                                   SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION };

        for (size_t i = 0; i < ELEMENTSOF(limits); i++)
                api.limit(db, limits[i][0], limits[i][1]);
        for (size_t i = 0; i < ELEMENTSOF(off); i++)
                api.db_config(db, off[i], 0, (int *) NULL);
        api.db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *) NULL);
}

/* A connection to the bytes in d (len of them), read-only in memory. */
static int db_connect(SqliteDb *d, size_t len, char *reason) {
        sqlite3_stmt *q = NULL;
        int rc = api.open_v2(":memory:", &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

        if (rc != SQLITE_OK)
                return fail(reason, sqlite_errno(rc), "%s", d->db ? api.errmsg(d->db) : "cannot open");
        harden(d->db);
        api.progress_handler(d->db, 1000, past_deadline, d);
        rc = api.deserialize(d->db, "main", d->bytes, (sqlite3_int64) len, (sqlite3_int64) len,
                             SQLITE_DESERIALIZE_READONLY);
        if (rc != SQLITE_OK)
                return fail(reason, sqlite_errno(rc), "%s", api.errmsg(d->db));
        /* SQLite's temporary tables (an automatic index, a DISTINCT) in its heap, under its limit,
         * never in a file */
        rc = api.prepare_v2(d->db, "PRAGMA temp_store = MEMORY", -1, &q, NULL);
        if (rc == SQLITE_OK)
                rc = api.step(q) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        api.finalize(q);
        if (rc != SQLITE_OK)
                return fail(reason, sqlite_errno(rc), "%s", api.errmsg(d->db));
        return 0;
}

/* <path>-journal: none (0), a regular file (-EBUSY: a commit under way, or the hot journal of a
 * crash, which the next podman rolls back), anything else -EPERM. Looked at, never opened. */
static int journal_state(int dir_fd, const char *path, char *reason) {
        char journal[PATH_MAX];
        struct stat st;

        if (snprintf(journal, sizeof journal, "%s-journal", path) >= (int) sizeof journal)
                return fail(reason, -ENAMETOOLONG, "its journal's name is too long");
        if (fstatat(dir_fd, journal, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : fail(reason, -errno, "its journal: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return fail(reason, -EPERM, "its -journal is not a regular file");
        return fail(reason, -EBUSY, "a commit is under way (its -journal is there)");
}

static bool unchanged(const struct stat *a, const struct stat *b) {
        return a->st_ino == b->st_ino && a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* len bytes of fd from its start into a malloc'ed buffer; what names the file in reason. */
static int read_fd(int fd, size_t len, uint8_t **ret, const char *what, char *reason) {
        _cleanup_free_ uint8_t *buf = malloc(len ? len : 1);
        size_t done = 0;

        if (!buf)
                return fail(reason, -ENOMEM, "out of memory");
        while (done < len) {
                ssize_t n = pread(fd, buf + done, len - done, (off_t) done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return fail(reason, -errno, "cannot read%s: %s", what, strerror(errno));
                if (n == 0)
                        return fail(reason, -EBUSY, "%s shrank while read", *what ? what + 1 : "it");
                done += (size_t) n;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

/* The whole file into a malloc'ed buffer, as one state: no journal before or after, the same size,
 * mtime and change counter (the header's bytes 24..27, which each commit of a rollback-journal
 * database bumps) after the read as before. */
static int read_whole(int dir_fd, const char *path, int fd, const struct stat *st, uint8_t **ret, char *reason) {
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t counter[4];
        struct stat after;
        size_t len = (size_t) st->st_size;
        int r;

        r = journal_state(dir_fd, path, reason);
        if (r < 0)
                return r;
        r = read_fd(fd, len, &buf, "", reason);
        if (r < 0)
                return r;
        if (fstat(fd, &after) < 0)
                return fail(reason, -errno, "cannot stat: %s", strerror(errno));
        if (!unchanged(st, &after) ||
            (len >= 28 && (pread(fd, counter, 4, 24) != 4 || memcmp(counter, buf + 24, 4) != 0)))
                return fail(reason, -EBUSY, "it changed while read");
        r = journal_state(dir_fd, path, reason);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}

/* <path>-wal, where there is one, opened and checked as the database is, read whole (at most
 * SQLITEDB_WAL_MAX bytes) and its committed frames applied to the database's bytes (*bytes, *len);
 * then the database must be as it was read (no checkpoint wrote in it meanwhile), else -EBUSY.
 * Read after the database: a checkpoint copies frames in before the WAL starts again, so frames
 * the database read lacks are still in the WAL read after it. */
static int wal_apply(int dir_fd, const char *path, int db_fd, const struct stat *db_st, int64_t owner, uint8_t **bytes,
                     size_t *len, char *reason) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *wal = NULL;
        char name[PATH_MAX];
        struct stat st;
        int r;

        if (snprintf(name, sizeof name, "%s-wal", path) >= (int) sizeof name)
                return fail(reason, -ENAMETOOLONG, "its WAL's name is too long");
        fd = ctrfile_openat(dir_fd, name, owner, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd == -ELOOP ? fail(reason, -EPERM, "its -wal is a symlink")
                                    : fail(reason, fd, "its -wal: %s", strerror(-fd));
        if (fstat(fd, &st) < 0)
                return fail(reason, -errno, "cannot stat its -wal: %s", strerror(errno));
        if (!ctrmeta_file_trusted(&st, owner) || st.st_uid != db_st->st_uid)
                return fail(reason, -EPERM, "its -wal is not a regular file of the database's owner");
        if (st.st_size > (off_t) SQLITEDB_WAL_MAX)
                return fail(reason, -EFBIG, "its -wal is larger than %u MiB", SQLITEDB_WAL_MAX >> 20);
        r = read_fd(fd, (size_t) st.st_size, &wal, " its -wal", reason);
        if (r < 0)
                return r;
        r = sqlitewal_apply(bytes, len, SQLITEDB_FILE_MAX, wal, (size_t) st.st_size, NULL);
        if (r == -EFBIG)
                return fail(reason, r, "with its -wal larger than %u MiB", SQLITEDB_FILE_MAX >> 20);
        if (r < 0)
                return fail(reason, r, r == -ENOMEM ? "out of memory" : "its -wal's page size is not the database's");
        if (fstat(db_fd, &st) < 0)
                return fail(reason, -errno, "cannot stat: %s", strerror(errno));
        if (!unchanged(db_st, &st))
                return fail(reason, -EBUSY, "it changed while its -wal was read");
        return 0;
}
#endif

int sqlitedb_open_at(int dir_fd, const char *path, int64_t owner, uint64_t deadline_us, SqliteDb **ret, char *reason) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (reason)
                reason[0] = '\0';
        fd = ctrfile_openat(dir_fd, path, owner, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fd == -ELOOP ? fail(reason, -EPERM, "a symlink") : fail(reason, fd, "%s", strerror(-fd));
        if (fstat(fd, &st) < 0)
                return fail(reason, -errno, "cannot stat: %s", strerror(errno));
        if (!ctrmeta_file_trusted(&st, owner))
                return fail(reason, -EPERM, "not a regular file of its owner");
        if (st.st_size > (off_t) SQLITEDB_FILE_MAX)
                return fail(reason, -EFBIG, "larger than %u MiB", SQLITEDB_FILE_MAX >> 20);
#if HAVE_SQLITE
        SqliteDb *d;
        size_t len;
        int r;

        if (!sqlitedb_available())
                return fail(reason, -ENOTSUP, "libsqlite3.so.0 cannot be loaded");
        d = calloc(1, sizeof *d);
        if (!d)
                return fail(reason, -ENOMEM, "out of memory");
        if (!deadline_us)
                deadline_us = SQLITEDB_DEADLINE_US;
        d->deadline_cpu_us = now_usec(CLOCK_THREAD_CPUTIME_ID) + deadline_us;
        d->deadline_mono_us = now_usec(CLOCK_MONOTONIC) + deadline_us * SQLITEDB_WALL_FACTOR;
        r = read_whole(dir_fd, path, fd, &st, &d->bytes, reason);
        len = (size_t) st.st_size;
        if (r >= 0)
                r = wal_apply(dir_fd, path, fd, &st, owner, &d->bytes, &len, reason);
        /* a WAL database (bytes 18 and 19 are 2), its WAL applied, is read as a rollback one:
         * memdb has no WAL */
        if (r >= 0 && len >= 20 && d->bytes[18] == 2 && d->bytes[19] == 2)
                d->bytes[18] = d->bytes[19] = 1;
        if (r >= 0)
                r = db_connect(d, len, reason);
        if (r < 0) {
                sqlitedb_close(d);
                return r;
        }
        *ret = d;
        return 0;
#else
        (void) deadline_us;
        (void) ret;
        return fail(reason, -ENOTSUP, "psidiag is built without SQLite");
#endif
}

SqliteDb *sqlitedb_close(SqliteDb *d) {
#if HAVE_SQLITE
        if (d) {
                if (d->db)
                        api.close(d->db);
                free(d->bytes);
                free(d);
        }
#else
        assert(!d);
#endif
        return NULL;
}

int sqlitedb_row(SqliteDb *d, const char *sql, const char *arg, size_t ncols, char (*out)[128], bool *null,
                 char *reason) {
#if HAVE_SQLITE
        sqlite3_stmt *q = NULL;
        int rc, r;

        assert(ncols <= 2);
        rc = api.prepare_v2(d->db, sql, -1, &q, NULL);
        if (rc != SQLITE_OK)
                return fail(reason, sqlite_errno(rc), "%s", api.errmsg(d->db));
        rc = arg ? api.bind_text(q, 1, arg, -1, SQLITE_TRANSIENT) : SQLITE_OK;
        if (rc == SQLITE_OK)
                rc = api.step(q);
        if (rc == SQLITE_DONE)
                r = 0;
        else if (rc != SQLITE_ROW)
                r = fail(reason, sqlite_errno(rc), "%s", api.errmsg(d->db));
        else {
                r = 1;
                for (size_t i = 0; i < ncols && r > 0; i++) {
                        const unsigned char *t;
                        null[i] = api.column_type(q, (int) i) == SQLITE_NULL;
                        t = null[i] ? NULL : api.column_text(q, (int) i);
                        if (!null[i] && !t)
                                r = fail(reason, sqlite_errno(SQLITE_NOMEM), "%s", api.errmsg(d->db));
                        else
                                snprintf(out[i], sizeof out[i], "%s", t ? (const char *) t : "");
                }
        }
        api.finalize(q);
        return r;
#else
        (void) d, (void) sql, (void) arg, (void) ncols, (void) out, (void) null;
        return fail(reason, -ENOTSUP, "psidiag is built without SQLite");
#endif
}

#if HAVE_SQLITE
/* Which of cols[0..n-1] table has as stored columns (PRAGMA table_xinfo's hidden: 0 stored, 1 a
 * virtual table's hidden one, 2 and 3 generated, computed at each read): a bit each in *ret. */
static int stored_columns(SqliteDb *d, const char *table, const char *const *cols, size_t n, unsigned *ret,
                          char *reason) {
        char sql[128];
        sqlite3_stmt *q = NULL;
        unsigned found = 0;
        int rc;

        assert(n < 32);
        snprintf(sql, sizeof sql, "PRAGMA main.table_xinfo(\"%s\")", table);
        rc = api.prepare_v2(d->db, sql, -1, &q, NULL);
        while (rc == SQLITE_OK && (rc = api.step(q)) == SQLITE_ROW) {
                const char *name = (const char *) api.column_text(q, 1), *hidden = (const char *) api.column_text(q, 6);
                for (size_t i = 0; name && hidden && i < n; i++)
                        if (strcasecmp(name, cols[i]) == 0 && strcmp(hidden, "0") == 0)
                                found |= 1u << i;
                rc = SQLITE_OK;
        }
        api.finalize(q);
        if (rc != SQLITE_DONE)
                return fail(reason, sqlite_errno(rc), "%s", api.errmsg(d->db));
        *ret = found;
        return 0;
}
#endif

int sqlitedb_check_table(SqliteDb *d, const char *table, const char *const *cols, size_t n, char *reason) {
        /* Names are matched as SQLite does, without case: any object of the name that is not a
         * table with a b-tree of its own (a view, a virtual table) is refused. */
        static const char *const what =
                "SELECT count(*), sum(type = 'table' AND rootpage > 0 AND sql LIKE 'CREATE TABLE%') FROM "
                "sqlite_schema WHERE name = ?1 COLLATE NOCASE AND type IN ('table', 'view')";
        char out[2][128];
        bool null[2];
        unsigned stored = 0;
        int r;

        r = sqlitedb_row(d, what, table, 2, out, null, reason);
        if (r < 0)
                return r;
        if (r == 0 || strcmp(out[0], "1") != 0 || null[1] || strcmp(out[1], "1") != 0)
                return fail(reason, -EBADMSG, "%s is not a plain table", table);
#if HAVE_SQLITE
        r = stored_columns(d, table, cols, n, &stored, reason);
        if (r < 0)
                return r;
#endif
        for (size_t i = 0; i < n; i++)
                if (!(stored & (1u << i)))
                        return fail(reason, -EBADMSG, "%s has no stored column %s", table, cols[i]);
        return 0;
}
