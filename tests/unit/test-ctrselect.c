/* SPDX-License-Identifier: MIT */
/* Containers chosen by their names (containers/ctrselect.h): the globs of a selector against a
 * container's names (a pod's container by its pod spec name, sandboxes and unnamed containers
 * never), the checks of a glob, and the walk of a fake cgroup2 tree that finds each container's own
 * cgroup (not its conmon's, not what is below it, not inside services) and names it from the
 * runtimes' files of tests/fixtures/containers/, as containers appear and go. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "containers/containers.h"
#include "containers/ctrselect.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

/* A glob of a selector (its fields are not const: a config owns them). */
#define G(s) ((char *) (s))
#define CRI "c0ffee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define SANDBOX "5a5a5a01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define PODMAN "c259ab325826b8b00d41a77c5935548283afad4f39d1379691811634296c0bc7"
#define ROOTLESS "7007ee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define UIDU "0f5e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"
#define POD "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice"

static ContainerInfo info(const char *name, const char *image, const char *ns, const char *pod, const char *in_pod) {
        ContainerInfo ci = {};

        snprintf(ci.runtime, sizeof ci.runtime, "podman");
        snprintf(ci.name, sizeof ci.name, "%s", name);
        snprintf(ci.image, sizeof ci.image, "%s", image);
        snprintf(ci.pod_namespace, sizeof ci.pod_namespace, "%s", ns);
        snprintf(ci.pod_name, sizeof ci.pod_name, "%s", pod);
        snprintf(ci.pod_container, sizeof ci.pod_container, "%s", in_pod);
        return ci;
}

static void test_match(void **state) {
        ContainerSelector web = { .name = G("web*") }, nginx = { .image = G("nginx:*") },
                          both = { .name = G("web*"), .image = G("nginx:*") },
                          payments = { .pod_namespace = G("payments"), .pod_name = G("*") },
                          api = { .name = G("api"), .pod_namespace = G("pay*"), .pod_name = G("api-?d9f") }, none = {};
        ContainerInfo plain = info("web-1", "nginx:1.25", "", "", ""), other = info("batch", "busybox", "", "", ""),
                      in_pod = info("k8s_api_api-7d9f_payments_0", "registry/api:2", "payments", "api-7d9f", "api");

        assert_true(ctrselect_match(&web, &plain));
        assert_false(ctrselect_match(&web, &other));
        assert_true(ctrselect_match(&nginx, &plain));
        assert_true(ctrselect_match(&both, &plain));
        plain.image[0] = '\0'; /* every glob set must match: no image, no match */
        assert_false(ctrselect_match(&both, &plain));
        assert_false(ctrselect_match(&nginx, &plain));
        assert_true(ctrselect_match(&web, &plain));
        /* a pod's container goes by its pod spec name, not the runtime's made-up one */
        assert_true(ctrselect_match(&api, &in_pod));
        assert_true(ctrselect_match(&payments, &in_pod));
        assert_false(ctrselect_match(&(ContainerSelector) { .name = G("k8s_*") }, &in_pod));
        /* pod globs only match containers of a pod; "*" never matches a missing name */
        assert_false(ctrselect_match(&payments, &plain));
        assert_false(ctrselect_match(&(ContainerSelector) { .name = G("*") }, &(ContainerInfo) {}));
        /* nothing set selects nothing */
        assert_false(ctrselect_is_set(&none));
        assert_false(ctrselect_match(&none, &plain));
        /* a sandbox, or a container its files did not name, never matches */
        in_pod.sandbox = true;
        assert_false(ctrselect_match(&payments, &in_pod));
        in_pod.sandbox = false;
        snprintf(in_pod.unnamed, sizeof in_pod.unnamed, "no config.json");
        assert_false(ctrselect_match(&payments, &in_pod));
        /* globs are fnmatch's: a class, and '/' is an ordinary character in an image */
        assert_true(ctrselect_match(&(ContainerSelector) { .image = G("registry.example/*") },
                                    &(ContainerInfo) { .name = "x", .image = "registry.example/api:2" }));
        assert_true(
                ctrselect_match(&(ContainerSelector) { .name = G("web-[0-9]") }, &(ContainerInfo) { .name = "web-7" }));
}

static void test_glob_check_and_format(void **state) {
        const char *why = NULL;
        char long_glob[300], buf[128];

        assert_int_equal(ctrselect_glob_check("web*", false, &why), 0);
        assert_int_equal(ctrselect_glob_check("", true, &why), -EINVAL);
        assert_string_equal(why, "is empty");
        assert_int_equal(ctrselect_glob_check("a/b", false, &why), -EINVAL);
        assert_int_equal(ctrselect_glob_check("a/b", true, &why), 0);
        assert_int_equal(ctrselect_glob_check("a\nb", true, &why), -EINVAL);
        assert_string_equal(why, "has a control character");
        memset(long_glob, 'a', sizeof long_glob - 1);
        long_glob[sizeof long_glob - 1] = '\0';
        assert_int_equal(ctrselect_glob_check(long_glob, true, &why), -EINVAL);

        assert_string_equal(ctrselect_format(&(ContainerSelector) { .name = G("web*") }, buf, sizeof buf),
                            "container=web*");
        assert_string_equal(ctrselect_format(&(ContainerSelector) { .image = G("nginx:*"),
                                                                    .pod_namespace = G("payments"),
                                                                    .pod_name = G("*") },
                                             buf, sizeof buf),
                            "image=nginx:* pod=payments/*");
        assert_string_equal(ctrselect_format(&(ContainerSelector) { .name = G("a"),
                                                                    .image = G("b"),
                                                                    .pod_namespace = G("c"),
                                                                    .pod_name = G("d") },
                                             buf, sizeof buf),
                            "container=a image=b pod=c/d");
        assert_string_equal(ctrselect_format(&(ContainerSelector) { .name = G("web*") }, buf, 5), "cont");
}

/* What a walk saw: "D path" for a cgroup where containers may appear, "C path name" for a
 * container's cgroup (its pod spec name, or its runtime's), "+sandbox" for a pod's sandbox. */
typedef struct Seen {
        char lines[32][512];
        size_t n;
        ContainerCache *cache;
} Seen;

static int record(const char *path, CtrselectKind kind, void *userdata) {
        Seen *s = userdata;
        const ContainerInfo *ci = kind != CTRSELECT_PARENT ? container_cache_lookup(s->cache, path) : NULL;

        assert_true(s->n < ELEMENTSOF(s->lines));
        assert_true(kind != CTRSELECT_CONTAINER || ci);
        if (kind == CTRSELECT_MAYBE && !ci)
                return 0; /* not a container: visited again as a parent */
        if (ci)
                snprintf(s->lines[s->n++], sizeof s->lines[0], "C %s %s%s", path,
                         ci->pod_container[0] ? ci->pod_container : ci->name, ci->sandbox ? " +sandbox" : "");
        else
                snprintf(s->lines[s->n++], sizeof s->lines[0], "D %s", path);
        return kind == CTRSELECT_MAYBE ? 1 : 0;
}

static bool saw(const Seen *s, const char *line) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->lines[i], line) == 0)
                        return true;
        return false;
}

static bool saw_prefix(const Seen *s, const char *prefix) {
        for (size_t i = 0; i < s->n; i++)
                if (strncmp(s->lines[i], prefix, strlen(prefix)) == 0)
                        return true;
        return false;
}

/* Walks the cgroup tree at dir with a cache reading the runtime files under fixture root. */
static void walk(const char *dir, const char *root, Seen *ret) {
        ContainerCache *cache = NULL;
        int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), cg_fd;

        assert_true(root_fd >= 0);
        cg_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(cg_fd >= 0);
        assert_int_equal(container_cache_new(root_fd, -1, cg_fd, 8, &cache), 0);
        *ret = (Seen) { .cache = cache };
        assert_int_equal(ctrselect_walk(cg_fd, record, ret), 0);
        container_cache_free(cache);
        close(cg_fd);
        close(root_fd);
}

static void test_walk_kubernetes(void **state) {
        char dir[] = "/tmp/psidiag-ctrselect-XXXXXX";
        Seen s;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, POD "/cri-containerd-" CRI ".scope/inner"), 0);
        assert_int_equal(fake_tree_cgroup(dir, POD "/cri-containerd-" SANDBOX ".scope"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "system.slice/containerd.service/sub"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "init.scope"), 0);
        walk(dir, fixture("containers/containerd"), &s);
        assert_true(saw(&s, "D "));
        assert_true(saw(&s, "D kubepods.slice"));
        assert_true(saw(&s, "D " POD));
        assert_true(saw(&s, "C " POD "/cri-containerd-" CRI ".scope api"));
        assert_true(saw(&s, "C " POD "/cri-containerd-" SANDBOX ".scope  +sandbox"));
        assert_true(saw(&s, "D system.slice"));
        /* below a container, inside a service or a scope: never walked */
        assert_false(saw_prefix(&s, "C " POD "/cri-containerd-" CRI ".scope/"));
        assert_false(saw_prefix(&s, "D " POD "/cri-containerd-"));
        assert_false(saw_prefix(&s, "D system.slice/containerd.service"));
        assert_false(saw_prefix(&s, "D init.scope"));
        assert_int_equal(s.n, 7); /* and kubepods-burstable.slice */

        /* a container that ends is gone from the next walk; one that starts is in it */
        assert_int_equal(rmdir(strcat(strcpy((char[256]) {}, dir), "/" POD "/cri-containerd-" CRI ".scope/inner")), 0);
        assert_int_equal(rmdir(strcat(strcpy((char[256]) {}, dir), "/" POD "/cri-containerd-" CRI ".scope")), 0);
        walk(dir, fixture("containers/containerd"), &s);
        assert_false(saw_prefix(&s, "C " POD "/cri-containerd-" CRI));
        assert_int_equal(fake_tree_cgroup(dir, "kubepods/burstable/pod0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b/" CRI), 0);
        walk(dir, fixture("containers/containerd"), &s);
        assert_true(saw(&s, "C kubepods/burstable/pod0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b/" CRI " api"));
        assert_true(saw(&s, "D kubepods/burstable/pod0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b"));
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Plain containerd's "<ns>/<id>" (ctr, nerdctl): a container when containerd has that task, its
 * children not walked; any other two-level cgroup is walked as a parent, and slices never asked. */
static void test_walk_plain_containerd(void **state) {
        char dir[] = "/tmp/psidiag-ctrselect-XXXXXX";
        Seen s;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, "default/web/inner"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "default/gone"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "kubepods/burstable/pod0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b/" CRI), 0);
        assert_int_equal(fake_tree_cgroup(dir, "user.slice/user-0.slice"), 0);
        walk(dir, fixture("containers/containerd"), &s);
        assert_true(saw(&s, "D default"));
        assert_true(saw(&s, "C default/web web"));
        assert_false(saw_prefix(&s, "D default/web"));
        assert_false(saw_prefix(&s, "C default/web/"));
        assert_true(saw(&s, "D default/gone")); /* no task bundle: not a container */
        assert_true(saw(&s, "D kubepods/burstable"));
        assert_true(saw(&s, "C kubepods/burstable/pod0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b/" CRI " api"));
        assert_true(saw(&s, "D user.slice/user-0.slice"));
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void test_walk_podman(void **state) {
        char dir[] = "/tmp/psidiag-ctrselect-XXXXXX";
        Seen s;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, "machine.slice/libpod-" PODMAN ".scope/container"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "machine.slice/libpod-conmon-" PODMAN ".scope"), 0);
        assert_int_equal(fake_tree_cgroup(dir,
                                          "user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS
                                          ".scope"),
                         0);
        assert_int_equal(fake_tree_cgroup(dir, "user.slice/user-1000.slice/user@1000.service/app.slice/x.service"), 0);
        assert_int_equal(fake_tree_cgroup(dir, "scratch/libpod-" PODMAN), 0);
        walk(dir, fixture("containers/podman"), &s);
        assert_true(saw(&s, "C machine.slice/libpod-" PODMAN ".scope names-probe1"));
        assert_false(saw_prefix(&s, "C machine.slice/libpod-conmon-"));
        /* rootless: walked into systemd's user instance, named from the user's storage */
        assert_true(saw(&s, "D user.slice/user-1000.slice/user@1000.service"));
        assert_true(
                saw(&s, "C user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope batch"));
        assert_true(saw(&s, "D user.slice/user-1000.slice/user@1000.service/app.slice"));
        assert_false(saw_prefix(&s, "D user.slice/user-1000.slice/user@1000.service/app.slice/x.service"));
        /* podman's cgroupfs driver under a cgroup parent of one's own */
        assert_true(saw(&s, "D scratch"));
        assert_true(saw(&s, "C scratch/libpod-" PODMAN " names-probe1"));
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Below systemd's user instance, whose tree its user owns: directories made by hand (not a slice)
 * are neither visited nor walked, a nested user@<uid>.service neither; the user's slices are. A
 * visitor's CTRSELECT_PRUNE leaves a parent's children unwalked. */
static int prune_d(const char *path, CtrselectKind kind, void *userdata) {
        Seen *s = userdata;

        if (strcmp(path, "d") == 0)
                return CTRSELECT_PRUNE;
        return record(path, kind, s);
}

static void test_walk_user_manager(void **state) {
        char dir[] = "/tmp/psidiag-ctrselect-XXXXXX";
        ContainerCache *cache = NULL;
        int root_fd, cg_fd;
        Seen s;

#define UM "user.slice/user-1000.slice/user@1000.service/"
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_cgroup(dir, UM "user.slice/libpod-" ROOTLESS ".scope"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, UM "empty1/libpod-" ROOTLESS ".scope"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, UM "empty2"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, UM "user@0.service/user.slice"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, UM "made.slice/inner.slice"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, UM "made.slice/handmade"), 0);
        assert_int_equal(fake_tree_mkdirs(dir, "d/e"), 0);
        walk(dir, fixture("containers/podman"), &s);
        assert_true(saw(&s, "D " UM "user.slice"));
        assert_true(saw(&s, "C " UM "user.slice/libpod-" ROOTLESS ".scope batch"));
        assert_true(saw(&s, "D " UM "made.slice/inner.slice"));
        assert_false(saw_prefix(&s, "D " UM "empty"));
        assert_false(saw_prefix(&s, "C " UM "empty1"));
        assert_false(saw_prefix(&s, "D " UM "user@0.service"));
        assert_false(saw_prefix(&s, "D " UM "made.slice/handmade"));
        assert_true(saw(&s, "D d/e"));
#undef UM
        root_fd = open(fixture("containers/podman"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cg_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(container_cache_new(root_fd, -1, cg_fd, 8, &cache), 0);
        s = (Seen) { .cache = cache };
        assert_int_equal(ctrselect_walk(cg_fd, prune_d, &s), 0);
        assert_false(saw(&s, "D d/e"));
        assert_true(saw(&s, "D user.slice"));
        /* The walk of a subtree (a cgroup made in a parent the whole walk visited): paths and
         * depths the whole tree's, the subtree's root judged as the whole walk judges it. */
        s = (Seen) { .cache = cache };
        assert_int_equal(ctrselect_walk_below(cg_fd, "user.slice/user-1000.slice/user@1000.service", record, &s), 0);
        assert_true(saw(&s, "D user.slice/user-1000.slice/user@1000.service"));
        assert_true(
                saw(&s, "C user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope batch"));
        assert_false(saw_prefix(&s, "D user.slice/user-1000.slice/user@1000.service/empty"));
        assert_false(saw_prefix(&s, "D user.slice/user-1000.slice/user@1000.service/made.slice/handmade"));
        s = (Seen) { .cache = cache };
        assert_int_equal(ctrselect_walk_below(cg_fd, "user.slice/user-1000.slice/user@1000.service/empty2", record, &s),
                         0);
        assert_int_equal(s.n, 0);
        assert_int_equal(ctrselect_walk_below(cg_fd, "d/gone", record, &s), -ENOENT);
        container_cache_free(cache);
        close(cg_fd);
        close(root_fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_walk_user_manager),     cmocka_unit_test(test_match),
                cmocka_unit_test(test_glob_check_and_format), cmocka_unit_test(test_walk_kubernetes),
                cmocka_unit_test(test_walk_plain_containerd), cmocka_unit_test(test_walk_podman),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
