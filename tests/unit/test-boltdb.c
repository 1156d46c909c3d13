/* SPDX-License-Identifier: MIT */
/* bbolt lookups (containers/boltdb.h) in real files: the meta.db containerd 1.6.20 (Debian 12's) wrote
 * for `ctr -n default containers create` of web, batch and bigenv (its spec, 9 KB of environment,
 * takes overflow pages), and two that bbolt 1.3.6 itself wrote (tests/fixtures/boltdb/gen.go): 250
 * inline buckets under branch pages, and 1500 keys in a tree of three levels with 1 KiB pages. Then
 * the same files truncated at every length, with either or both meta pages broken, page ids out of
 * range or wrong, a branch that points at itself, a page that overflows past the file, every
 * byte flipped; a FIFO, a symlink and a missing file in its place. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "containers/boltdb.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define CONTAINERD "containers/containerd/var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db"

typedef struct File {
        uint8_t *buf;
        size_t len;
} File;

static File load(const char *path) {
        File f = {};
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &st), 0);
        f.len = (size_t) st.st_size;
        f.buf = malloc(f.len);
        assert_non_null(f.buf);
        assert_int_equal(read(fd, f.buf, f.len), (ssize_t) f.len);
        close(fd);
        return f;
}

/* A lookup of keys (NULL-terminated) in len bytes of f, its value in v. */
static int get(const File *f, size_t len, char *v, size_t size, char *why, const char *const *keys) {
        size_t n = 0;
        uint8_t *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees a read past them */
        int r;

        while (keys[n])
                n++;
        assert_non_null(copy);
        memcpy(copy, f->buf, len);
        r = boltdb_get_buf(copy, len, keys, n, v, size, why);
        free(copy);
        return r;
}

#define GET(f, len, ...) get((f), (len), v, sizeof v, why, (const char *const[]) { __VA_ARGS__, NULL })

static void test_containerd(void **state) {
        static const char *const web[] = { "v1", "default", "containers", "web", "image" };
        char v[256], why[BOLTDB_REASON_MAX];
        int root = open(fixture(""), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        File f = load(fixture(CONTAINERD));

        assert_true(root >= 0);
        assert_int_equal(boltdb_get_at(root, CONTAINERD, web, 5, v, sizeof v, why), 36);
        assert_string_equal(v, "registry.example.com/tools/busybox:1");
        assert_string_equal(why, "");
        /* one open, two lookups in it; its stat is the file's */
        {
                static const char *const batch[] = { "v1", "default", "containers", "batch", "image" };
                struct stat st;
                int db = boltdb_open_at(root, CONTAINERD, &st, why);

                assert_true(db >= 0);
                assert_int_equal((size_t) st.st_size, f.len);
                assert_int_equal(boltdb_get_fd(db, &st, batch, 5, v, sizeof v, why), 28);
                assert_string_equal(v, "docker.io/library/nginx:1.25");
                assert_int_equal(boltdb_get_fd(db, &st, web, 5, v, sizeof v, why), 36);
                assert_string_equal(v, "registry.example.com/tools/busybox:1");
                assert_int_equal(boltdb_open_at(root, "no.db", &st, why), -ENOENT);
                assert_string_equal(why, "cannot open: No such file or directory");
                close(db);
        }
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "batch", "image"), 28);
        assert_string_equal(v, "docker.io/library/nginx:1.25");
        /* its container bucket is a leaf page with two overflow pages */
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "bigenv", "image"), 28);
        assert_string_equal(v, "docker.io/library/nginx:1.25");
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "runtime", "name"), 21);
        assert_string_equal(v, "io.containerd.runc.v2");
        /* cut to the buffer, its whole length returned */
        assert_int_equal(boltdb_get_buf(f.buf, f.len, web, 5, v, 9, why), 36);
        assert_string_equal(v, "registry");

        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "gone", "image"), -ENOENT);
        assert_string_equal(why, "no bucket \"gone\"");
        assert_int_equal(GET(&f, f.len, "v1", "k8s.io", "containers", "web", "image"), -ENOENT);
        assert_string_equal(why, "no bucket \"k8s.io\"");
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "owner"), -ENOENT);
        assert_string_equal(why, "no key \"owner\"");
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web"), -ENOENT);
        assert_string_equal(why, "\"web\" is a bucket, not a value");
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "image", "x"), -ENOENT);
        assert_string_equal(why, "\"image\" is a value, not a bucket");
        assert_int_equal(boltdb_get_buf(f.buf, f.len, web, 0, v, sizeof v, why), -EINVAL);

        /* not a regular file, a symlink, missing */
        {
                char dir[] = "/tmp/psidiag-boltdb-XXXXXX", path[64];
                assert_non_null(mkdtemp(dir));
                snprintf(path, sizeof path, "%s/meta.db", dir);
                assert_int_equal(mkfifo(path, 0600), 0);
                assert_int_equal(boltdb_get_at(AT_FDCWD, path, web, 5, v, sizeof v, why), -EPERM);
                assert_string_equal(why, "not a regular file");
                {
                        struct stat st;
                        assert_int_equal(boltdb_open_at(AT_FDCWD, path, &st, why), -EPERM);
                        assert_string_equal(why, "not a regular file");
                }
                assert_int_equal(unlink(path), 0);
                assert_int_equal(symlink(fixture(CONTAINERD), path), 0);
                assert_int_equal(boltdb_get_at(AT_FDCWD, path, web, 5, v, sizeof v, why), -EPERM);
                assert_int_equal(unlink(path), 0);
                assert_int_equal(boltdb_get_at(AT_FDCWD, path, web, 5, v, sizeof v, why), -ENOENT);
                assert_int_equal(rmdir(dir), 0);
        }
        free(f.buf);
        close(root);
}

static void test_bbolt_written(void **state) {
        char v[64], why[BOLTDB_REASON_MAX], key[16], want[64];
        File many = load(fixture("boltdb/many.db")), deep = load(fixture("boltdb/deep.db"));

        for (int i = 0; i < 250; i++) {
                snprintf(key, sizeof key, "c%03d", i);
                snprintf(want, sizeof want, "registry.example.com/img-%03d:1", i);
                assert_int_equal(GET(&many, many.len, "v1", "many", "containers", key, "image"), (int) strlen(want));
                assert_string_equal(v, want);
        }
        assert_int_equal(GET(&many, many.len, "v1", "many", "containers", "c250", "image"), -ENOENT);
        assert_int_equal(GET(&many, many.len, "v1", "many", "containers", "a", "image"), -ENOENT);
        assert_int_equal(GET(&many, many.len, "v1", "many", "containers", "z", "image"), -ENOENT);
        assert_int_equal(GET(&many, many.len, "v1", "many", "containers", "big", "spec"), 20000);
        assert_int_equal(strspn(v, "s"), sizeof v - 1);
        assert_int_equal(GET(&many, many.len, "v1", "many", "containers", "big", "image"), 26);

        for (int i = 0; i < 1500; i++) {
                snprintf(key, sizeof key, "k%04d", i);
                snprintf(want, sizeof want, "v%04d", i);
                assert_int_equal(GET(&deep, deep.len, "deep", key), 5);
                assert_string_equal(v, want);
        }
        assert_int_equal(GET(&deep, deep.len, "deep", "k1500"), -ENOENT);
        assert_int_equal(GET(&deep, deep.len, "deep", ""), -ENOENT);
        assert_int_equal(GET(&deep, deep.len, "deep", "k"), -ENOENT);
        free(many.buf);
        free(deep.buf);
}

/* Cut at every length: the right value, or a clear error, never anything else. */
static void test_truncated(void **state) {
        char v[256], why[BOLTDB_REASON_MAX];
        File f = load(fixture(CONTAINERD)), deep = load(fixture("boltdb/deep.db"));
        int found = 0;

        for (size_t len = 0; len < f.len; len += 64) {
                int r = GET(&f, len, "v1", "default", "containers", "web", "image");
                if (r == 36)
                        found++;
                else
                        assert_int_equal(r, -EBADMSG);
        }
        assert_true(found > 0 && found < (int) (f.len / 64));
        assert_int_equal(GET(&f, 0, "v1"), -EBADMSG);
        assert_string_equal(why, "not a bbolt file: no valid meta page (magic, version 2, checksum)");
        assert_int_equal(GET(&f, 4096, "v1", "default", "containers", "web", "image"), -EBADMSG);
        assert_string_equal(why, "truncated: 16 bytes at offset 118784 are past its end (4096 bytes)");
        for (size_t len = 0; len < deep.len; len += 100) {
                int r = GET(&deep, len, "deep", "k0000");
                assert_true(r == 5 || r == -EBADMSG);
        }
        free(f.buf);
        free(deep.buf);
}

static void test_meta(void **state) {
        char v[256], why[BOLTDB_REASON_MAX];
        File f = load(fixture(CONTAINERD));

        /* either meta page alone is enough (one byte of its txid changed: its checksum fails) */
        f.buf[16 + 48] ^= 1;
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "image"), 36);
        f.buf[16 + 48] ^= 1;
        f.buf[4096 + 16 + 48] ^= 1;
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "image"), 36);
        f.buf[16 + 48] ^= 1;
        assert_int_equal(GET(&f, f.len, "v1", "default", "containers", "web", "image"), -EBADMSG);
        assert_string_equal(why, "not a bbolt file: no valid meta page (magic, version 2, checksum)");
        f.buf[16 + 48] ^= 1;
        f.buf[4096 + 16 + 48] ^= 1;
        /* another magic or version: not ours */
        f.buf[16] ^= 1;
        f.buf[4096 + 16 + 4] = 3;
        assert_int_equal(GET(&f, f.len, "v1"), -EBADMSG);
        free(f.buf);
}

static uint64_t u64_at(const uint8_t *p) {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        return x;
}

static void put64(uint8_t *p, uint64_t x) {
        memcpy(p, &x, sizeof x);
}

/* Each branch page of deep.db (1 KiB pages) changed by change(page, its offset), and every key
 * looked up: the right value or -EBADMSG with reason. Returns how many lookups failed. */
static int each_branch(File *f, const char *reason, void (*change)(File *f, size_t off, uint64_t id)) {
        char v[16], why[BOLTDB_REASON_MAX], key[16];
        int failed = 0;

        for (size_t off = 2 * 1024; off < f->len; off += 1024) {
                uint8_t saved[1024];
                if (f->buf[off + 8] != 0x01)
                        continue;
                memcpy(saved, f->buf + off, sizeof saved);
                change(f, off, u64_at(f->buf + off));
                for (int i = 0; i < 1500; i += 7) {
                        snprintf(key, sizeof key, "k%04d", i);
                        int r = GET(f, f->len, "deep", key);
                        if (r != 5) {
                                assert_int_equal(r, -EBADMSG);
                                assert_non_null(strstr(why, reason));
                                failed++;
                        }
                }
                memcpy(f->buf + off, saved, sizeof saved);
        }
        return failed;
}

static void child_past_hwm(File *f, size_t off, uint64_t id) {
        put64(f->buf + off + 16 + 8, 1000);
}

static void child_meta(File *f, size_t off, uint64_t id) {
        put64(f->buf + off + 16 + 8, 1);
}

static void child_self(File *f, size_t off, uint64_t id) {
        /* every child the page itself: a loop */
        for (unsigned i = 0; i < f->buf[off + 10]; i++)
                put64(f->buf + off + 16 + 16 * i + 8, id);
}

static void wrong_id(File *f, size_t off, uint64_t id) {
        put64(f->buf + off, id + 1);
}

static void overflowing(File *f, size_t off, uint64_t id) {
        f->buf[off + 12] = 200;
}

static void key_outside(File *f, size_t off, uint64_t id) {
        f->buf[off + 16 + 4 + 2] = 0x7f; /* ksize of element 0 */
}

static void test_pages(void **state) {
        File f = load(fixture("boltdb/deep.db"));

        assert_true(each_branch(&f, "is outside 2..88", child_past_hwm) > 0);
        assert_true(each_branch(&f, "page 1 is outside", child_meta) > 0);
        assert_true(each_branch(&f, "deeper than 32 levels", child_self) > 0);
        assert_true(each_branch(&f, "says it is page", wrong_id) > 0);
        assert_true(each_branch(&f, "overflows past the high water mark", overflowing) > 0);
        assert_true(each_branch(&f, "lies outside it", key_outside) > 0);
        free(f.buf);
}

/* Every byte of each file flipped in turn: never a crash, never another error. */
static void test_every_byte(void **state) {
        static const struct {
                const char *file;
                const char *keys[6];
                int len;
        } files[] = {
                { CONTAINERD, { "v1", "default", "containers", "bigenv", "image" }, 28 },
                { "boltdb/many.db", { "v1", "many", "containers", "c123", "image" }, 30 },
                { "boltdb/deep.db", { "deep", "k0777" }, 5 },
        };
        char v[256], why[BOLTDB_REASON_MAX], path[PATH_MAX];

        for (size_t k = 0; k < ELEMENTSOF(files); k++) {
                int ok = 0;
                snprintf(path, sizeof path, "%s/%s", FIXTURE_DIR, files[k].file);
                File f = load(path);
                for (size_t i = 0; i < f.len; i++) {
                        f.buf[i] ^= 0xa5;
                        v[0] = '\0';
                        int r = get(&f, f.len, v, sizeof v, why, files[k].keys);
                        assert_true(r >= 0 || r == -ENOENT || r == -EBADMSG || r == -EFBIG);
                        assert_true(strlen(v) < sizeof v && strlen(why) < sizeof why);
                        ok += r == files[k].len;
                        f.buf[i] ^= 0xa5;
                }
                /* most bytes are in pages the lookup never reads */
                assert_true(ok > (int) f.len / 2);
                free(f.buf);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_containerd), cmocka_unit_test(test_bbolt_written),
                cmocka_unit_test(test_truncated),  cmocka_unit_test(test_meta),
                cmocka_unit_test(test_pages),      cmocka_unit_test(test_every_byte),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
