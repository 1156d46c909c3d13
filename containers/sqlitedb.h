/* SPDX-License-Identifier: MIT */
/* An SQLite database that someone else writes (a rootless user's podman db.sql), read without
 * trusting it: the regular file checked on the descriptor opened (never a symlink, never a FIFO),
 * read whole into memory (at most SQLITEDB_FILE_MAX bytes), with the committed frames of its -wal
 * (read the same way, containers/sqlitewal.h) applied, and handed to SQLite with
 * sqlite3_deserialize(), read-only: SQLite opens no file at all, so no journal, WAL or -shm is
 * opened or created and no lock is taken. The connection is defensive (SQLITE_DBCONFIG_DEFENSIVE),
 * with views, triggers and untrusted schema off, small sqlite3_limit()s, a progress-handler
 * deadline of SQLITEDB_DEADLINE_US of cpu time for the whole lookup (SQLITEDB_WALL_FACTOR times
 * that on the clock), and SQLite's heap capped process-wide at
 * SQLITEDB_HEAP_MAX (psidiag uses SQLite for nothing else). libsqlite3 is loaded with dlopen at
 * the first use. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SQLITEDB_FILE_MAX (32u << 20)    /* bytes of a database read, its WAL applied */
#define SQLITEDB_WAL_MAX (16u << 20)     /* bytes of its -wal read */
#define SQLITEDB_HEAP_MAX (16 << 20)     /* SQLite's own heap, process-wide */
#define SQLITEDB_DEADLINE_US (50 * 1000) /* cpu time, from the open to the last row */
#define SQLITEDB_WALL_FACTOR 10          /* and at most 10 times as long on the clock */
#define SQLITEDB_REASON_MAX 128

typedef struct SqliteDb SqliteDb;

/* Whether libsqlite3.so.0 can be loaded (loads it at the first call). */
bool sqlitedb_available(void);

/* Opens path beneath dir_fd (O_NOFOLLOW, O_NONBLOCK): a regular file of root's, ours or owner's
 * (ctrmeta_file_trusted()), whose <path>-journal, if any, is not looked into: a regular one means
 * a commit under way (or a crash's hot journal) and gives -EBUSY; anything else there -EPERM. The
 * file read whole, and read again if it changed meanwhile (its size, mtime or change counter):
 * -EBUSY. Its <path>-wal, where there is one (a WAL database's commits since its last checkpoint),
 * is opened and checked as the database is (a symlink, or another owner's: -EPERM; over
 * SQLITEDB_WAL_MAX: -EFBIG), read after it, and its committed frames applied; a database that
 * changed meanwhile gives -EBUSY. deadline_us: 0 for
 * SQLITEDB_DEADLINE_US. Errors: -ENOENT, -EPERM (a symlink, not a regular file of its owner),
 * -EFBIG (over SQLITEDB_FILE_MAX), -EBUSY, -EBADMSG (not an SQLite database), -ENOTSUP (no
 * libsqlite3), -ENOMEM, -errno; reason (SQLITEDB_REASON_MAX bytes, may be NULL) says why. */
int sqlitedb_open_at(int dir_fd, const char *path, int64_t owner, uint64_t deadline_us, SqliteDb **ret, char *reason);
SqliteDb *sqlitedb_close(SqliteDb *db);

/* Whether table is a plain table (sqlite_schema's type 'table' with a b-tree of its own: no view,
 * no virtual table), with each of the columns cols[0..n-1] a stored column (not a generated one).
 * 0, -EBADMSG (not so), or the errors of a query below. */
int sqlitedb_check_table(SqliteDb *db, const char *table, const char *const *cols, size_t n, char *reason);

/* Runs sql with text ?1 = arg (may be NULL: no parameter) and copies the first row's ncols
 * columns (at most 2) into out[i] (size bytes each, cut, NUL-terminated; null[i] set when SQL
 * NULL). Returns 1 (a row), 0 (no row), -ETIME (the deadline passed), -E2BIG (a value over the
 * length limit), -ENOMEM (over the heap limit), -EBADMSG (any other SQLite error, in reason). */
int sqlitedb_row(SqliteDb *db, const char *sql, const char *arg, size_t ncols, char (*out)[128], bool *null,
                 char *reason);
