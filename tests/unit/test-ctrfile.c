/* SPDX-License-Identifier: MIT */
/* The way to a rootless user's runtime file (containers/ctrfile.h): a symlink the user planted in
 * their storage (their overlay-containers pointing at root's) is never followed, so root's
 * containers.json is not read as the user's; root's own symlink in a directory of root's (the
 * host's /home -> /data/home) is; root's runtime files are opened as the kernel resolves them.
 * Needs root (chown and lchown to the user). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "containers/ctrfile.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define ALICE 1000
#define STORE "home/alice/.local/share/containers/storage"

static char root[] = "/tmp/psidiag-test-ctrfile-XXXXXX";
static int root_fd = -EBADF;

static void path_of(char *buf, size_t size, const char *rel) {
        snprintf(buf, size, "%s/%s", root, rel);
}

static void own(const char *rel, uid_t uid, bool link) {
        char p[512];

        path_of(p, sizeof p, rel);
        assert_int_equal(link ? lchown(p, uid, uid) : chown(p, uid, uid), 0);
}

static void ln(const char *target, const char *rel, uid_t uid) {
        char p[512];

        path_of(p, sizeof p, rel);
        assert_int_equal(symlink(target, p), 0);
        own(rel, uid, true);
}

static int setup(void **state) {
        if (geteuid() != 0)
                return 0;
        assert_non_null(mkdtemp(root));
        assert_int_equal(chmod(root, 0755), 0);
        assert_int_equal(
                fake_tree_write(root, "var/lib/containers/storage/overlay-containers/containers.json", "[root]"), 0);
        assert_int_equal(fake_tree_write(root, STORE "/vfs-containers/containers.json", "[alice]"), 0);
        assert_int_equal(fake_tree_mkdirs(root, STORE), 0);
        own("home/alice", ALICE, false);
        own("home/alice/.local", ALICE, false);
        own("home/alice/.local/share", ALICE, false);
        own("home/alice/.local/share/containers", ALICE, false);
        own(STORE, ALICE, false);
        own(STORE "/vfs-containers", ALICE, false);
        own(STORE "/vfs-containers/containers.json", ALICE, false);
        /* alice's overlay-containers: a symlink to root's */
        ln("../../../../../../var/lib/containers/storage/overlay-containers", STORE "/overlay-containers", ALICE);
        /* the host's own link to a home elsewhere, root's in a directory of root's */
        assert_int_equal(fake_tree_write(root, "data/home/bob/storage/x.json", "[bob]"), 0);
        ln("../data/home/bob", "home/bob", 0);
        root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root_fd >= 0);
        return 0;
}

static int teardown(void **state) {
        if (geteuid() != 0)
                return 0;
        close(root_fd);
        return fake_tree_remove(root);
}

static void read_is(const char *rel, int64_t owner, int want, const char *content) {
        char *buf = NULL;
        size_t len = 0;

        assert_int_equal(ctrfile_read(root_fd, rel, owner, &buf, &len), want);
        if (want == 0) {
                assert_int_equal(len, strlen(content));
                assert_memory_equal(buf, content, len);
        }
        free(buf);
}

static void test_user_symlink(void **state) {
        if (geteuid() != 0)
                skip();
        /* the user's own file, and root's storage through the user's symlink */
        read_is(STORE "/vfs-containers/containers.json", ALICE, 0, "[alice]");
        read_is(STORE "/overlay-containers/containers.json", ALICE, -EPERM, NULL);
        assert_int_equal(ctrfile_openat(root_fd, STORE "/overlay-containers/containers.json", ALICE, O_RDONLY), -ELOOP);
        /* a root-owned symlink the user could not have made, but in the user's directory: refused */
        ln("../../../../../../var/lib/containers/storage/overlay-containers", STORE "/rootlink", 0);
        read_is(STORE "/rootlink/containers.json", ALICE, -EPERM, NULL);
        /* root's runtime files: resolved as the kernel does */
        read_is(STORE "/overlay-containers/containers.json", -1, 0, "[root]");
}

static void test_root_symlink(void **state) {
        char p[512];

        if (geteuid() != 0)
                skip();
        read_is("home/bob/storage/x.json", 1001, 0, "[bob]");
        /* root's link in a directory others may write: refused */
        path_of(p, sizeof p, "home");
        assert_int_equal(chmod(p, 0777), 0);
        read_is("home/bob/storage/x.json", 1001, -EPERM, NULL);
        assert_int_equal(chmod(p, 0755), 0);
}

static void test_bad_paths(void **state) {
        const char *base;

        if (geteuid() != 0)
                skip();
        assert_int_equal(ctrfile_open_parent(root_fd, "home/../etc/passwd", ALICE, &base), -EINVAL);
        assert_int_equal(ctrfile_open_parent(root_fd, "/etc/passwd", ALICE, &base), -EINVAL);
        assert_int_equal(ctrfile_open_parent(root_fd, "home/alice/", ALICE, &base), -EINVAL);
        read_is(STORE "/nothing/containers.json", ALICE, -ENOENT, NULL);
        /* the last component a symlink: never followed, whoever made it */
        ln("vfs-containers/containers.json", STORE "/last.json", ALICE);
        read_is(STORE "/last.json", ALICE, -EPERM, NULL);
        read_is(STORE "/last.json", -1, -EPERM, NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_user_symlink),
                cmocka_unit_test(test_root_symlink),
                cmocka_unit_test(test_bad_paths),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
