/* SPDX-License-Identifier: MIT */
/* An SQLite database read without trusting it (containers/sqlitedb.h), on files the test makes with
 * SQLite itself: a query past its deadline, a value past the length limit, a query past the heap
 * limit, each an error and prompt; a symlink, a FIFO and a file over the size limit refused before
 * SQLite sees them; a view, a virtual table and a generated column told from a plain table. Each
 * test has an alarm: a regression fails instead of hanging. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "containers/sqlitedb.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#if HAVE_SQLITE
#include <sqlite3.h>

typedef struct Scratch {
        char root[64];
        int fd;
} Scratch;

/* A scratch directory with t.db made by sql. */
static void scratch(Scratch *s, const char *sql) {
        char path[128];
        sqlite3 *db = NULL;

        snprintf(s->root, sizeof s->root, "/tmp/psidiag-test-sqlitedb-XXXXXX");
        assert_non_null(mkdtemp(s->root));
        snprintf(path, sizeof path, "%s/t.db", s->root);
        assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_close(db), SQLITE_OK);
        s->fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(s->fd >= 0);
}

static void scratch_done(Scratch *s) {
        close(s->fd);
        assert_int_equal(fake_tree_remove(s->root), 0);
}

/* sql's first row in s's t.db opened with deadline_us; asserts it took less than within_us. */
static int row(Scratch *s, uint64_t deadline_us, const char *sql, usec_t within_us, char *why) {
        char out[2][128];
        bool null[2];
        SqliteDb *db = NULL;
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        int r = sqlitedb_open_at(s->fd, "t.db", -1, deadline_us, &db, why);

        if (r >= 0)
                r = sqlitedb_row(db, sql, NULL, 1, out, null, why);
        sqlitedb_close(db);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < within_us);
        return r;
}

#define ENDLESS "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "

static void test_bounds(void **state) {
        char why[SQLITEDB_REASON_MAX];
        Scratch s;

        alarm(60);
        scratch(&s, "CREATE TABLE t(a)");
        assert_int_equal(row(&s, 0, "SELECT 42", USEC_PER_SEC, why), 1);
        /* an endless query: stopped at the deadline, not after it */
        assert_int_equal(row(&s, 20 * 1000, ENDLESS "SELECT count(*) FROM r", 500 * 1000, why), -ETIME);
        assert_string_equal(why, "interrupted");
        assert_int_equal(row(&s, 0, ENDLESS "SELECT count(*) FROM r", 500 * 1000, why), -ETIME);
        /* a value past the length limit, and work past the heap limit (a DISTINCT of 80 MB) */
        assert_int_equal(row(&s, 0, "SELECT zeroblob(100000000)", USEC_PER_SEC, why), -E2BIG);
        assert_int_equal(row(&s, 10 * USEC_PER_SEC,
                             "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 200000) "
                             "SELECT count(DISTINCT n || hex(zeroblob(200))) FROM r",
                             10 * USEC_PER_SEC, why),
                         -ENOMEM);
        /* defensive: no writing to the schema, nor to the (read-only) database */
        assert_int_equal(row(&s, 0, "PRAGMA writable_schema = ON", USEC_PER_SEC, why), 0);
        assert_int_equal(row(&s, 0, "INSERT INTO t VALUES (1)", USEC_PER_SEC, why), -EBADMSG);
        scratch_done(&s);
        alarm(0);
}

static void test_not_a_file(void **state) {
        char why[SQLITEDB_REASON_MAX], path[128];
        SqliteDb *db = NULL;
        Scratch s;
        int fd;

        alarm(30);
        scratch(&s, "CREATE TABLE t(a)");
        assert_int_equal(symlinkat("t.db", s.fd, "link.db"), 0);
        assert_int_equal(sqlitedb_open_at(s.fd, "link.db", -1, 0, &db, why), -EPERM);
        assert_string_equal(why, "a symlink");
        assert_int_equal(mkfifoat(s.fd, "fifo.db", 0600), 0);
        assert_int_equal(sqlitedb_open_at(s.fd, "fifo.db", -1, 0, &db, why), -EPERM);
        assert_string_equal(why, "not a regular file of its owner");
        assert_int_equal(sqlitedb_open_at(s.fd, "none.db", -1, 0, &db, why), -ENOENT);
        snprintf(path, sizeof path, "%s/big.db", s.root);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t) SQLITEDB_FILE_MAX + 1), 0);
        close(fd);
        assert_int_equal(sqlitedb_open_at(s.fd, "big.db", -1, 0, &db, why), -EFBIG);
        assert_int_equal(fchownat(s.fd, "t.db", 4321, 4321, 0), 0);
        assert_int_equal(sqlitedb_open_at(s.fd, "t.db", -1, 0, &db, why), -EPERM);
        assert_int_equal(sqlitedb_open_at(s.fd, "t.db", 4321, 0, &db, why), 0);
        sqlitedb_close(db);
        assert_null(db = NULL);
        scratch_done(&s);
        alarm(0);
}

static void test_tables(void **state) {
        static const char *const cols[] = { "ID", "Name" };
        char why[SQLITEDB_REASON_MAX];
        SqliteDb *db = NULL;
        Scratch s;

        alarm(30);
        scratch(&s, "CREATE TABLE plain(ID TEXT PRIMARY KEY, Name TEXT);"
                    "CREATE TABLE gen(ID TEXT, N TEXT, Name TEXT AS (upper(N)));"
                    "CREATE VIEW v(ID, Name) AS SELECT ID, Name FROM plain;"
                    "CREATE VIRTUAL TABLE vt USING rtree(ID, a, b);");
        assert_int_equal(sqlitedb_open_at(s.fd, "t.db", -1, 0, &db, why), 0);
        assert_int_equal(sqlitedb_check_table(db, "plain", cols, 2, why), 0);
        assert_int_equal(sqlitedb_check_table(db, "PLAIN", cols, 2, why), 0);
        assert_int_equal(sqlitedb_check_table(db, "gen", cols, 2, why), -EBADMSG);
        assert_string_equal(why, "gen has no stored column Name");
        assert_int_equal(sqlitedb_check_table(db, "v", cols, 2, why), -EBADMSG);
        assert_string_equal(why, "v is not a plain table");
        assert_int_equal(sqlitedb_check_table(db, "vt", cols, 1, why), -EBADMSG);
        assert_int_equal(sqlitedb_check_table(db, "none", cols, 1, why), -EBADMSG);
        sqlitedb_close(db);
        scratch_done(&s);
        alarm(0);
}

/* The count of t's rows as the reader sees s's t.db. */
static int count_rows(Scratch *s, char *why) {
        char out[2][128];
        bool null[2];
        SqliteDb *db = NULL;
        int r = sqlitedb_open_at(s->fd, "t.db", -1, 0, &db, why);

        if (r >= 0)
                r = sqlitedb_row(db, "SELECT count(*) FROM t", NULL, 1, out, null, why);
        sqlitedb_close(db);
        return r == 1 ? atoi(out[0]) : r;
}

static off_t file_size(Scratch *s, const char *name) {
        struct stat st;

        assert_int_equal(fstatat(s->fd, name, &st, 0), 0);
        return st.st_size;
}

/* A WAL database as a writer that keeps it open leaves it (no checkpoint): what it committed is in
 * t.db-wal alone, and is read; a transaction not committed, a torn last frame and frames of an
 * older WAL (other salts) are not; a -wal that is a symlink, or another's, is refused. */
static void test_wal(void **state) {
        char why[SQLITEDB_REASON_MAX], path[160];
        sqlite3 *w = NULL;
        uint8_t *wal;
        size_t wal_len;
        off_t committed;
        Scratch s;
        int fd;

        alarm(60);
        scratch(&s, "PRAGMA journal_mode = WAL; CREATE TABLE t(a); INSERT INTO t VALUES (1);");
        /* the last connection's close checkpointed: all in t.db, no -wal */
        assert_int_equal(count_rows(&s, why), 1);
        snprintf(path, sizeof path, "%s/t.db", s.root);
        assert_int_equal(sqlite3_open(path, &w), SQLITE_OK);
        assert_int_equal(sqlite3_exec(w,
                                      "PRAGMA wal_autocheckpoint = 0;"
                                      "INSERT INTO t VALUES (2); INSERT INTO t VALUES (3);",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        assert_true(file_size(&s, "t.db-wal") > 0);
        assert_int_equal(count_rows(&s, why), 3);
        /* a transaction under way: its frames are in the WAL, with no commit frame yet */
        committed = file_size(&s, "t.db-wal");
        assert_int_equal(sqlite3_exec(w,
                                      "PRAGMA cache_size = 1; BEGIN;"
                                      "WITH RECURSIVE r(n) AS (SELECT 4 UNION ALL SELECT n + 1 FROM r WHERE n < 3000) "
                                      "INSERT INTO t SELECT n FROM r;",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        assert_true(file_size(&s, "t.db-wal") > committed);
        assert_int_equal(count_rows(&s, why), 3);
        assert_int_equal(sqlite3_exec(w, "COMMIT;", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(count_rows(&s, why), 3000);
        /* the last commit's frame torn: the commit before it is what was */
        committed = file_size(&s, "t.db-wal");
        assert_int_equal(sqlite3_exec(w, "INSERT INTO t VALUES (0);", NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(count_rows(&s, why), 3001);
        snprintf(path, sizeof path, "%s/t.db-wal", s.root);
        wal_len = (size_t) file_size(&s, "t.db-wal");
        wal = malloc(wal_len);
        assert_non_null(wal);
        fd = open(path, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, wal, wal_len, 0), (ssize_t) wal_len);
        assert_int_equal(ftruncate(fd, (off_t) wal_len - 100), 0);
        assert_int_equal(count_rows(&s, why), 3000);
        assert_int_equal(ftruncate(fd, committed), 0);
        assert_int_equal(count_rows(&s, why), 3000);
        /* a frame's byte changed: its checksum, and so the WAL from there on, is wrong */
        assert_int_equal(pwrite(fd, wal, wal_len, 0), (ssize_t) wal_len);
        assert_int_equal(pwrite(fd, "\xff", 1, committed + 24 + 200), 1);
        assert_int_equal(count_rows(&s, why), 3000);
        /* the writer's WAL put back as it was */
        assert_int_equal(pwrite(fd, wal, wal_len, 0), (ssize_t) wal_len);
        close(fd);
        free(wal);
        assert_int_equal(count_rows(&s, why), 3001);
        /* checkpointed and started again: the new WAL's salts; the old frames after its end do not count */
        committed = file_size(&s, "t.db-wal");
        assert_int_equal(
                sqlite3_exec(w, "PRAGMA wal_checkpoint(RESTART); INSERT INTO t VALUES (-1);", NULL, NULL, NULL),
                SQLITE_OK);
        assert_int_equal(file_size(&s, "t.db-wal"), committed);
        assert_int_equal(count_rows(&s, why), 3002);
        assert_int_equal(sqlite3_close(w), SQLITE_OK);
        assert_int_equal(count_rows(&s, why), 3002);

        /* a -wal of another owner, and a symlink for one */
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x", 1), 1);
        close(fd);
        assert_int_equal(chown(path, 4321, 4321), 0);
        assert_int_equal(count_rows(&s, why), -EPERM);
        assert_string_equal(why, "its -wal is not a regular file of the database's owner");
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlinkat("t.db", s.fd, "t.db-wal"), 0);
        assert_int_equal(count_rows(&s, why), -EPERM);
        assert_string_equal(why, "its -wal is a symlink");
        assert_int_equal(unlink(path), 0);
        assert_int_equal(count_rows(&s, why), 3002);
        scratch_done(&s);
        alarm(0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_not_a_file),
                cmocka_unit_test(test_tables),
                cmocka_unit_test(test_wal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void) {
        return 77; /* a build without SQLite: containers/sqlitedb.h answers -ENOTSUP, test-libpod checks it */
}
#endif
