/* SPDX-License-Identifier: MIT */
/* The sink interface with the stdout and file kinds against real files, FIFOs and devices in a
 * scratch directory: whole lines or nothing, failures counted, recovery, recreation after removal,
 * the symlink and ownership rules for world-writable directories, and the OTLP formatter in front;
 * and the registry's answers for the output strings a config can hold. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "sinks/registry.h"
#include "sinks/sink.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define LINE "{\"type\":\"pressure\",\"id\":\"x\"}\n"
/* Small documents whose lines the tests look for (sinks take JSON, not text). */
#define A "{\"line\":\"a\"}\n"
#define B "{\"line\":\"b\"}\n"
#define C "{\"line\":\"c\"}\n"
#define NOBODY 65534

static char dir[64];

static int setup(void **state) {
        strcpy(dir, "/tmp/psidiag-test-XXXXXX");
        if (!mkdtemp(dir))
                return -1;
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);
        return 0;
}

static int teardown(void **state) {
        return fake_tree_remove(dir);
}

/* Paths inside the scratch directory; a ring of buffers so a few can be live at once. */
static char *path_in(const char *name) {
        static char ring[8][256];
        static unsigned next;
        char *p = ring[next++ % 8];

        snprintf(p, sizeof ring[0], "%s/%s", dir, name);
        return p;
}

static size_t slurp(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        size_t n;

        assert_non_null(f);
        n = fread(buf, 1, size - 1, f);
        buf[n] = '\0';
        fclose(f);
        return n;
}

static Sink *open_ok(const char *path) {
        Sink *o = NULL;
        char why[160];

        assert_int_equal(sink_open(path, SINK_FORMAT_INCIDENT, &o, why, sizeof why), 0);
        return o;
}

static int open_fails(const char *path, char *why, size_t size) {
        Sink *o = NULL;
        int r = sink_open(path, SINK_FORMAT_INCIDENT, &o, why, size);

        assert_null(o);
        return r;
}

/* Writes the JSON document text is the line of. */
static int write_json(Sink *o, const char *text) {
        json_t *j = json_loads(text, 0, NULL);
        int r;

        assert_non_null(j);
        r = sink_write(o, j);
        json_decref(j);
        return r;
}

static void test_creates_0640_and_appends(void **state) {
        char buf[256];
        struct stat st;
        mode_t old = umask(022);
        Sink *o = open_ok(path_in("out.ndjson"));

        umask(old);
        assert_int_equal(write_json(o, LINE), 0);
        assert_int_equal(write_json(o, LINE), 0);
        assert_int_equal(o->written, 2);
        assert_int_equal(stat(path_in("out.ndjson"), &st), 0);
        assert_int_equal(st.st_mode & 07777, 0640);
        slurp(path_in("out.ndjson"), buf, sizeof buf);
        assert_string_equal(buf, LINE LINE);
        sink_free(o);
}

/* output_format "otlp": the incident goes out as one OTLP/JSON line; a document that is not an
 * incident (no "time") is counted as failed and nothing reaches the file. */
static void test_otlp_sink_converts(void **state) {
        const char *inc = "{\"type\":\"pressure\",\"id\":\"x\",\"time\":\"2026-11-23T12:28:42.840095Z\"}\n";
        char buf[2048];
        Sink *o = open_ok(path_in("otlp.ndjson"));
        json_t *j, *rec;
        size_t n;

        sink_set_format(o, SINK_FORMAT_OTLP);
        assert_int_equal(write_json(o, inc), 0);
        assert_int_equal(write_json(o, LINE), -EINVAL);
        assert_int_equal(o->written, 1);
        assert_int_equal(o->failed, 1);
        sink_free(o);
        n = slurp(path_in("otlp.ndjson"), buf, sizeof buf);
        assert_true(n > 0 && buf[n - 1] == '\n');
        assert_null(memchr(buf, '\n', n - 1));
        j = json_loadb(buf, n, 0, NULL);
        assert_non_null(j);
        rec = json_object_get(json_array_get(json_object_get(j, "resourceLogs"), 0), "scopeLogs");
        rec = json_array_get(json_object_get(json_array_get(rec, 0), "logRecords"), 0);
        assert_string_equal(json_string_value(json_object_get(rec, "timeUnixNano")), "1795436922840095000");
        assert_string_equal(json_string_value(json_object_get(rec, "eventName")), "psidiag.pressure");
        json_decref(j);
}

static void test_full_disk_counts(void **state) {
        Sink *o = open_ok("/dev/full");

        for (int i = 0; i < 3; i++)
                assert_int_equal(write_json(o, LINE), -ENOSPC);
        assert_int_equal(o->failed, 3);
        assert_int_equal(o->written, 0);
        /* One complaint for the first, the next two wait for the interval. */
        assert_int_equal(o->failed_since_complaint, 2);
        sink_free(o);
}

/* A file that can take only part of the line (RLIMIT_FSIZE stands in for a disk filling up
 * mid-write) keeps whole lines only; writing resumes when there is room. */
static void test_partial_write_is_taken_back(void **state) {
        struct rlimit old, lim;
        char buf[256];
        Sink *o = open_ok(path_in("limited"));

        assert_int_equal(write_json(o, LINE), 0);
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        lim = old;
        lim.rlim_cur = strlen(LINE) + 10;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        int r = write_json(o, LINE);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        assert_int_equal(r, -EFBIG);
        assert_int_equal(o->failed, 1);
        slurp(path_in("limited"), buf, sizeof buf);
        assert_string_equal(buf, LINE);

        assert_int_equal(write_json(o, LINE), 0);
        assert_int_equal(o->failed_since_success, 0);
        slurp(path_in("limited"), buf, sizeof buf);
        assert_string_equal(buf, LINE LINE);
        sink_free(o);
}

static void test_fifo_reader_goes_and_comes_back(void **state) {
        char buf[256], why[160];
        const char *fifo = path_in("fifo");
        int reader;
        Sink *o;

        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(open_fails(fifo, why, sizeof why), -ENXIO);
        assert_non_null(strstr(why, "no reader"));

        reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(reader >= 0);
        o = open_ok(fifo);
        assert_int_equal(write_json(o, LINE), 0);
        assert_int_equal(read(reader, buf, sizeof buf), strlen(LINE));
        close(reader);
        assert_int_equal(write_json(o, LINE), -EPIPE);
        assert_int_equal(o->failed, 1);
        sink_free(o);
}

static void test_closed_pipe_on_stdout(void **state) {
        int p[2], saved = dup(STDOUT_FILENO);
        Sink *o;

        assert_int_equal(pipe(p), 0);
        assert_int_equal(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
        close(p[1]);
        close(p[0]);
        o = open_ok("-");
        int r = write_json(o, LINE);
        dup2(saved, STDOUT_FILENO);
        close(saved);
        assert_int_equal(r, -EPIPE);
        assert_int_equal(o->failed, 1);
        sink_free(o);
}

static void test_removed_file_is_recreated(void **state) {
        char buf[256];
        const char *p = path_in("gone");
        Sink *o = open_ok(p);

        assert_int_equal(write_json(o, A), 0);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(write_json(o, B), 0);
        slurp(p, buf, sizeof buf);
        assert_string_equal(buf, B);

        /* Renamed away (logrotate without SIGHUP): the next line goes to a new file at the path. */
        assert_int_equal(rename(p, path_in("gone.1")), 0);
        assert_int_equal(write_json(o, C), 0);
        slurp(p, buf, sizeof buf);
        assert_string_equal(buf, C);
        slurp(path_in("gone.1"), buf, sizeof buf);
        assert_string_equal(buf, B);
        assert_int_equal(o->written, 3);
        sink_free(o);
}

static void test_removed_directory_counts_then_resumes(void **state) {
        char buf[256];
        Sink *o;

        assert_int_equal(mkdir(path_in("logs"), 0755), 0);
        o = open_ok(path_in("logs/out"));
        assert_int_equal(unlink(path_in("logs/out")), 0);
        assert_int_equal(rmdir(path_in("logs")), 0);
        assert_int_equal(write_json(o, A), -ENOENT);
        assert_int_equal(o->failed, 1);
        assert_int_equal(mkdir(path_in("logs"), 0755), 0);
        assert_int_equal(write_json(o, B), 0);
        slurp(path_in("logs/out"), buf, sizeof buf);
        assert_string_equal(buf, B);
        sink_free(o);
}

static void test_reopen_after_rotation(void **state) {
        char buf[256], why[160];
        const char *p = path_in("rot");
        Sink *o = open_ok(p);

        assert_int_equal(write_json(o, A), 0);
        assert_int_equal(rename(p, path_in("rot.1")), 0);
        assert_int_equal(sink_reopen(o, why, sizeof why), 0);
        assert_int_equal(write_json(o, B), 0);
        slurp(p, buf, sizeof buf);
        assert_string_equal(buf, B);
        sink_free(o);
}

static void test_refuses_last_symlink_and_odd_paths(void **state) {
        char why[160];

        assert_int_equal(symlink("/etc/passwd", path_in("link")), 0);
        assert_int_equal(open_fails(path_in("link"), why, sizeof why), -ELOOP);
        assert_non_null(strstr(why, "symlink"));
        assert_int_equal(open_fails(path_in(""), why, sizeof why), -EINVAL);
        assert_int_equal(open_fails(path_in(".."), why, sizeof why), -EINVAL);
        assert_int_equal(mkdir(path_in("d"), 0755), 0);
        assert_int_equal(open_fails(path_in("d/."), why, sizeof why), -EINVAL);
        assert_int_equal(open_fails(path_in("d/missing/out"), why, sizeof why), -ENOENT);
        assert_non_null(strstr(why, "missing"));
        assert_int_equal(mkfifo(path_in("d/sock-like"), 0600), 0); /* a FIFO is fine once read */
}

/* A trusted directory symlink (ours, in a directory only we can write) is followed. */
static void test_follows_trusted_directory_symlink(void **state) {
        char buf[64];
        Sink *o;

        assert_int_equal(mkdir(path_in("real"), 0755), 0);
        assert_int_equal(symlink("real", path_in("alias")), 0);
        o = open_ok(path_in("alias/out"));
        assert_int_equal(write_json(o, A), 0);
        sink_free(o);
        slurp(path_in("real/out"), buf, sizeof buf);
        assert_string_equal(buf, A);
}

/* What an attacker can plant in a sticky world-writable directory like /tmp. Needs root (chown). */
static void test_world_writable_directory(void **state) {
        char why[160];
        const char *ww = path_in("ww");
        Sink *o;
        int fd;

        if (geteuid() != 0)
                skip();
        assert_int_equal(mkdir(path_in("victim"), 0755), 0);
        assert_int_equal(mkdir(ww, 0755), 0);
        assert_int_equal(chmod(ww, 01777), 0);

        /* Someone else's symlink on the way is not followed; our own is. */
        assert_int_equal(symlink("../victim", path_in("ww/planted")), 0);
        assert_int_equal(lchown(path_in("ww/planted"), NOBODY, NOBODY), 0);
        assert_int_equal(open_fails(path_in("ww/planted/out"), why, sizeof why), -ELOOP);
        assert_non_null(strstr(why, "world-writable"));
        assert_int_equal(access(path_in("victim/out"), F_OK), -1);
        assert_int_equal(symlink("../victim", path_in("ww/mine")), 0);
        o = open_ok(path_in("ww/mine/out"));
        sink_free(o);

        /* A file someone else created in advance is not ours to write. */
        fd = open(path_in("ww/precreated"), O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(chown(path_in("ww/precreated"), NOBODY, NOBODY), 0);
        assert_int_equal(open_fails(path_in("ww/precreated"), why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "owned by uid 65534"));

        /* Nor a hard link to a file elsewhere. */
        fd = open(path_in("victim/secret"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(link(path_in("victim/secret"), path_in("ww/hardlink")), 0);
        assert_int_equal(open_fails(path_in("ww/hardlink"), why, sizeof why), -EPERM);
        assert_non_null(strstr(why, "hard links"));

        /* A fresh file of ours there is fine. */
        o = open_ok(path_in("ww/fresh"));
        assert_int_equal(write_json(o, A), 0);
        sink_free(o);
}

/* What the registry says of each output string a config can hold. */
static void test_registry(void **state) {
        char why[160];
        Sink *o;

        assert_int_equal(sink_kind_of("-"), SINK_KIND_STDOUT);
        assert_int_equal(sink_kind_of("journal"), SINK_KIND_JOURNAL);
        assert_int_equal(sink_kind_of("/var/log/psidiag/incidents.ndjson"), SINK_KIND_FILE);
        assert_int_equal(sink_kind_of("./journal"), SINK_KIND_FILE);
        assert_string_equal(sink_kind_ops(SINK_KIND_JOURNAL)->name, "journal");
        assert_string_equal(sink_path_display("-"), "stdout");
        assert_string_equal(sink_path_display("journal"), "journal");
        assert_string_equal(sink_path_display("/x"), "/x");
        assert_int_equal(sink_path_check("-", why, sizeof why), 0);
        assert_int_equal(sink_path_check("/x", why, sizeof why), 0);
        assert_int_equal(sink_path_check("x.log", why, sizeof why), -EINVAL);
        assert_string_equal(why, "must be an absolute path, \"-\" (stdout) or \"journal\"");
        assert_int_equal(sink_path_check("journal", why, sizeof why), HAVE_JOURNAL ? 0 : -EOPNOTSUPP);
        assert_int_equal(sink_path_available("/x", why, sizeof why), 0);
        assert_true(sink_paths_same("/x", "/x"));
        assert_false(sink_paths_same("/x", "/x/"));

        o = open_ok("-");
        assert_string_equal(o->name, "stdout");
        assert_false(sink_can_reopen(o));
        assert_int_equal(sink_reopen(o, why, sizeof why), 0);
        sink_free(o);
        o = open_ok(path_in("f"));
        assert_string_equal(o->name, path_in("f"));
        assert_true(sink_can_reopen(o));
        sink_free(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_creates_0640_and_appends, setup, teardown),
                cmocka_unit_test_setup_teardown(test_otlp_sink_converts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full_disk_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_partial_write_is_taken_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fifo_reader_goes_and_comes_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_closed_pipe_on_stdout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_file_is_recreated, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_directory_counts_then_resumes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reopen_after_rotation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refuses_last_symlink_and_odd_paths, setup, teardown),
                cmocka_unit_test_setup_teardown(test_follows_trusted_directory_symlink, setup, teardown),
                cmocka_unit_test_setup_teardown(test_world_writable_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_registry, setup, teardown),
        };

        log_set_level(LOG_LEVEL_ERROR);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
