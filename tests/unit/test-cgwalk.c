/* SPDX-License-Identifier: MIT */
/* The cgroup walk's error policy (probes/cgwalk.h) on scratch trees: a vanished child, unreadable
 * children, deep trees, a missing root. The tests run as root, so no child is made unreadable by
 * its mode: what fails is the visitor's read, the descriptor limit, or the path bound. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/cgwalk.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define VISITS_MAX 128

typedef struct Visits {
        char paths[VISITS_MAX][64];
        unsigned depth[VISITS_MAX];
        size_t parent[VISITS_MAX]; /* the parent's visit index (its tag), SIZE_MAX for the root */
        size_t n;
        /* What the visitor does. */
        const char *fail_path; /* returns fail_error on this cgroup */
        int fail_error;
        const char *root_file; /* reads this file of the root */
        const char *dir;       /* removes the other one of x and y on visiting either */
        size_t stop_after;     /* CGROUP_WALK_STOP on this visit (1-based), 0 never */
        const char *prune;     /* CGROUP_WALK_PRUNE on this cgroup */
        /* What the walk reported. */
        char unreadable_parent[8][64], unreadable_name[8][64];
        unsigned unreadable_parent_depth[8];
        int unreadable_error[8];
        size_t n_unreadable;
} Visits;

static int visit(CgroupWalkNode *node, void *userdata) {
        Visits *v = userdata;
        size_t i = v->n;

        assert_true(i < VISITS_MAX);
        assert_int_equal(strlen(node->path), node->path_len);
        snprintf(v->paths[i], sizeof v->paths[i], "%s", node->path);
        v->depth[i] = node->depth;
        v->parent[i] = node->parent ? node->parent->tag : SIZE_MAX;
        node->tag = i;
        v->n++;
        if (v->fail_path && strcmp(node->path, v->fail_path) == 0)
                return v->fail_error;
        if (v->root_file && node->depth == 0) {
                int fd = openat(node->fd, v->root_file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                close(fd);
        }
        if (v->dir && node->depth == 1) {
                char other[512];
                snprintf(other, sizeof other, "%s/%s", v->dir, strcmp(node->path, "x") == 0 ? "y" : "x");
                (void) rmdir(other);
        }
        if (v->prune && strcmp(node->path, v->prune) == 0)
                return CGROUP_WALK_PRUNE;
        return v->stop_after == v->n ? CGROUP_WALK_STOP : 0;
}

static void unreadable(const CgroupWalkNode *parent, const char *name, int error, void *userdata) {
        Visits *v = userdata;
        size_t i = v->n_unreadable++;

        assert_true(i < 8);
        assert_int_equal(v->depth[parent->tag], parent->depth);
        v->unreadable_parent_depth[i] = parent->depth;
        snprintf(v->unreadable_parent[i], 64, "%.*s", (int) parent->path_len, parent->path);
        snprintf(v->unreadable_name[i], 64, "%s", name);
        v->unreadable_error[i] = error;
}

static int walk(const char *dir, unsigned max_depth, Visits *v) {
        int fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC), r;

        assert_true(fd >= 0);
        r = cgroup_walk(
                fd, &(CgroupWalk) { .visit = visit, .unreadable = unreadable, .max_depth = max_depth, .userdata = v });
        close(fd);
        return r;
}

static ssize_t find(const Visits *v, const char *path) {
        for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->paths[i], path) == 0)
                        return (ssize_t) i;
        return -1;
}

static void make_tree(char *dir) {
        strcpy(dir, "/tmp/test-cgwalk-XXXXXX");
        assert_non_null(mkdtemp(dir));
}

/* Parents before children, paths relative to the root; files and symlinks are no cgroups. */
static void test_order(void **state) {
        char dir[64], path[128];
        Visits v = {};

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "a/b"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "c"), 0);
        assert_int_equal(fake_tree_write(dir, "a/cgroup.procs", "1\n"), 0);
        snprintf(path, sizeof path, "%s/escape", dir);
        assert_int_equal(symlink("a", path), 0);
        snprintf(path, sizeof path, "%s/dangling", dir);
        assert_int_equal(symlink("nosuch", path), 0);

        assert_int_equal(walk(dir, 0, &v), 0);
        assert_int_equal(v.n, 4);
        assert_string_equal(v.paths[0], "");
        assert_int_equal(v.depth[0], 0);
        assert_int_equal(v.parent[0], SIZE_MAX);
        assert_true(find(&v, "a") > 0 && find(&v, "c") > 0);
        assert_true(find(&v, "a/b") > find(&v, "a"));
        assert_int_equal(v.parent[find(&v, "a/b")], find(&v, "a"));
        assert_int_equal(v.depth[find(&v, "a/b")], 2);
        assert_int_equal(v.parent[find(&v, "c")], 0);
        assert_int_equal(find(&v, "escape"), -1);
        assert_int_equal(v.n_unreadable, 0);

        /* Told to stop: nothing after. */
        v = (Visits) { .stop_after = 2 };
        assert_int_equal(walk(dir, 0, &v), 0);
        assert_int_equal(v.n, 2);

        /* Told to prune "a": a visited, not a/b; the walk goes on to c. */
        v = (Visits) { .prune = "a" };
        assert_int_equal(walk(dir, 0, &v), 0);
        assert_int_equal(v.n, 3);
        assert_true(find(&v, "a") > 0 && find(&v, "c") > 0);
        assert_int_equal(find(&v, "a/b"), -1);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Removed between the listing and its open, or gone by the time the visitor reads it: skipped
 * with its subtree, silently. */
static void test_vanished_child(void **state) {
        char dir[64];
        Visits v = {};

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "x"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "y"), 0);
        v.dir = dir;
        assert_int_equal(walk(dir, 0, &v), 0);
        assert_int_equal(v.n, 2); /* the root and whichever of x and y came first */
        assert_true(find(&v, "x") > 0 || find(&v, "y") > 0);
        assert_int_equal(v.n_unreadable, 0);
        assert_int_equal(fake_tree_remove(dir), 0);

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "gone/below"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "ok"), 0);
        for (int i = 0; i < 2; i++) {
                v = (Visits) { .fail_path = "gone", .fail_error = i == 0 ? -ENOENT : -ENODEV };
                assert_int_equal(walk(dir, 0, &v), 0);
                assert_int_equal(find(&v, "gone/below"), -1);
                assert_true(find(&v, "ok") > 0);
                assert_int_equal(v.n_unreadable, 0);
        }
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Any other error on a child: skipped with its subtree, counted and reported with its parent; the
 * siblings are walked. */
static void test_unreadable_child(void **state) {
        char dir[64];
        Visits v = { .fail_path = "a/bad", .fail_error = -EINVAL };

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "a/bad/below"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "a/ok"), 0);
        assert_int_equal(walk(dir, 0, &v), 1);
        assert_true(find(&v, "a/ok") > 0);
        assert_int_equal(find(&v, "a/bad/below"), -1);
        assert_int_equal(v.n_unreadable, 1);
        assert_string_equal(v.unreadable_parent[0], "a");
        assert_string_equal(v.unreadable_name[0], "bad");
        assert_int_equal(v.unreadable_error[0], -EINVAL);

        /* -ENOMEM ends the walk and fails it. */
        v = (Visits) { .fail_path = "a/bad", .fail_error = -ENOMEM };
        assert_int_equal(walk(dir, 0, &v), -ENOMEM);
        assert_int_equal(v.n_unreadable, 0);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A child that cannot be opened (out of descriptors: the root's listing takes the last one). */
static void test_child_without_fd(void **state) {
        struct rlimit old, low;
        char dir[64];
        Visits v = {};
        int fd, lowest, r;

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "c/d"), 0);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        lowest = dup(0);
        assert_true(lowest >= 0);
        close(lowest);
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        low = (struct rlimit) { .rlim_cur = (rlim_t) lowest + 1, .rlim_max = old.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        r = cgroup_walk(fd, &(CgroupWalk) { .visit = visit, .unreadable = unreadable, .userdata = &v });
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        close(fd);
        assert_int_equal(r, 1);
        assert_int_equal(v.n, 1);
        assert_string_equal(v.unreadable_parent[0], "");
        assert_string_equal(v.unreadable_name[0], "c");
        assert_int_equal(v.unreadable_error[0], -EMFILE);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Deeper than the walk goes: the cgroups at the bound are visited, their children counted. */
static void test_deep(void **state) {
        char dir[64], chain[2 * 70 + 1] = "";
        Visits v = {};

        make_tree(dir);
        for (int i = 0; i < 70; i++)
                strcat(chain, i ? "/d" : "d");
        assert_int_equal(fake_tree_mkdirs(dir, chain), 0);
        assert_int_equal(walk(dir, 0, &v), 1);
        assert_int_equal(v.n, CGROUP_WALK_MAX_DEPTH + 1);
        assert_int_equal(v.depth[v.n - 1], CGROUP_WALK_MAX_DEPTH);
        assert_int_equal(v.unreadable_error[0], -ELOOP);
        assert_int_equal(v.unreadable_parent_depth[0], CGROUP_WALK_MAX_DEPTH);

        v = (Visits) {};
        assert_int_equal(walk(dir, 8, &v), 1);
        assert_int_equal(v.n, 9);

        /* A bound that is not reached is no loss. */
        v = (Visits) {};
        assert_int_equal(walk(dir, 70, &v), 0);
        assert_int_equal(v.n, 71);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* A path longer than CGROUP_WALK_PATH_MAX: counted, not visited. */
static void test_long_path(void **state) {
        char dir[64], name[251], chain[17 * 251 + 1] = "";
        Visits v = {};

        make_tree(dir);
        memset(name, 'n', 250);
        name[250] = '\0';
        for (int i = 0; i < 17; i++) {
                if (i)
                        strcat(chain, "/");
                strcat(chain, name);
        }
        assert_int_equal(fake_tree_mkdirs(dir, chain), 0);
        assert_int_equal(walk(dir, 0, &v), 1);
        assert_int_equal(v.n, 17); /* the root and 16 levels: 16 * 251 - 1 bytes fit, 17 do not */
        assert_int_equal(v.unreadable_error[0], -ENAMETOOLONG);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* The root's errors fail the walk. */
static void test_root(void **state) {
        char dir[64], path[128];
        Visits v = { .fail_path = "", .fail_error = -EINVAL };
        int fd;

        assert_int_equal(cgroup_walk(-EBADF, &(CgroupWalk) { .visit = visit, .userdata = &v }), -EBADF);
        assert_int_equal(v.n, 0);

        make_tree(dir);
        assert_int_equal(fake_tree_mkdirs(dir, "a"), 0);
        assert_int_equal(walk(dir, 0, &v), -EINVAL);
        assert_int_equal(v.n, 1);

        /* Not a directory: its listing fails. */
        assert_int_equal(fake_tree_write(dir, "file", ""), 0);
        snprintf(path, sizeof path, "%s/file", dir);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        v = (Visits) {};
        assert_int_equal(cgroup_walk(fd, &(CgroupWalk) { .visit = visit, .userdata = &v }), -ENOTDIR);
        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);

        /* Removed while open: what the visitor reads of it is gone, and so is the walk. */
        make_tree(dir);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(rmdir(dir), 0);
        v = (Visits) { .root_file = "cgroup.procs" };
        assert_int_equal(cgroup_walk(fd, &(CgroupWalk) { .visit = visit, .userdata = &v }), -ENOENT);
        assert_int_equal(v.n, 1);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order),
                cmocka_unit_test(test_vanished_child),
                cmocka_unit_test(test_unreadable_child),
                cmocka_unit_test(test_child_without_fd),
                cmocka_unit_test(test_deep),
                cmocka_unit_test(test_long_path),
                cmocka_unit_test(test_root),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
