/* SPDX-License-Identifier: MIT */
/* A cgroup's claimed container checked against who made it (containers/ctrverify.h): the spoofs a user
 * makes below their delegated user@1000.service (systemd-run --user --scope --unit=docker-<id>, a
 * kubepods.slice of their own, a nested user@1001.service or user@0.service) name nothing and say
 * why, while the same ids in cgroups made where and by whom their runtimes make them are named;
 * cgroups owned by a user outside user@ (a service delegated to them), a symlink in the path, an
 * init process elsewhere (docker's State.Pid, containerd's init.pid, CRI-O's pidfile and
 * conmon-pidfile, podman's pidfile, in a rootless user's own runroot too, and conmon.pid for its
 * monitor's scope) are refused; the same on the cgroup2 mounts of a pure cgroup2 and a hybrid
 * sysroot. Needs root (chown to the users). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "containers/containers.h"
#include "containers/ctrselect.h"
#include "containers/ctrverify.h"
#include "probes/sysroot.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define DOCKER "d0c4e7f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define REAL_DOCKER "99136c90f14e908887f40326e5cc9d92e24b828ac295d3dd9f28966be22a4dfb" /* State.Pid 28746 */
#define CRI "c0ffee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define PODMAN "c259ab325826b8b00d41a77c5935548283afad4f39d1379691811634296c0bc7"
#define CRIO "c210c201a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define ROOTLESS_VFS "7007ee02a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d" /* uid 1001's */
#define UID "0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b"
#define UIDU "0f5e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"
#define U1000 "/user.slice/user-1000.slice/user@1000.service"
#define PODMAN_RUN "run/containers/storage/overlay-containers/" PODMAN "/userdata"
#define CONMON "/machine.slice/libpod-conmon-" PODMAN ".scope"
#define KUBE_POD "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice"
#define CRIO_RUN "run/containers/storage/overlay-containers/" CRIO "/userdata"
#define BOB_RUN "home/bob/run/vfs-containers/" ROOTLESS_VFS "/userdata"
#define BOB_CONF "home/bob/.config/containers/storage.conf"

/* A cgroup path, the fixture whose runtime files know its id, and the name they give it. */
typedef struct Case {
        const char *cgroup, *fixture, *name;
} Case;

/* The six spoofs of a user below their user@1000.service: every one names a real container's id. */
static const Case spoofs[] = {
        /* systemd-run --user --scope --unit=docker-<id> */
        { U1000 "/app.slice/docker-" DOCKER ".scope", "containers/docker", "web" },
        /* docker's cgroupfs layout, mkdir'ed in the user's own subtree */
        { U1000 "/docker/" REAL_DOCKER, "containers/docker", "names-web" },
        /* a kubepods.slice of the user's, with a pod uid: a real pod's container */
        { U1000 KUBE_POD "/cri-containerd-" CRI ".scope", "containers/containerd", "api" },
        /* the kubelet's cgroupfs layout, which names no runtime */
        { U1000 "/kubepods/burstable/pod" UID "/" CRI, "containers/containerd", "api" },
        /* another user's systemd instance nested in one's own: uid 1001's storage */
        { U1000 "/user.slice/user@1001.service/user.slice/libpod-" ROOTLESS_VFS ".scope", "containers/podman",
          "batch-vfs" },
        /* root's systemd instance nested in one's own: rootful podman's storage */
        { U1000 "/user.slice/user@0.service/libpod-" PODMAN ".scope", "containers/podman", "names-probe1" },
};

/* The same ids where, and by whom, their runtimes make them. */
static const Case real[] = {
        { "/system.slice/docker-" DOCKER ".scope", "containers/docker", "web" },
        { "/docker/" REAL_DOCKER, "containers/docker", "names-web" },
        { KUBE_POD "/cri-containerd-" CRI ".scope", "containers/containerd", "api" },
        { "/kubepods/burstable/pod" UID "/" CRI, "containers/containerd", "api" },
        { "/user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" ROOTLESS_VFS ".scope", "containers/podman",
          "batch-vfs" },
        { "/machine.slice/libpod-" PODMAN ".scope", "containers/podman", "names-probe1" },
};

static char cgroups[] = "/tmp/psidiag-ctrverify-XXXXXX";
static int cgroups_fd = -EBADF;

static int setup(void **state) {
        if (!mkdtemp(cgroups))
                return -1;
        cgroups_fd = open(cgroups, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return cgroups_fd < 0 ? -1 : 0;
}

static int teardown(void **state) {
        close(cgroups_fd);
        return fake_tree_remove(cgroups);
}

/* The lookup of c->cgroup in a new cache on c->fixture's files, cgroups at cg_fd, /proc at proc_fd. */
static ContainerInfo look(const Case *c, int proc_fd, int cg_fd) {
        int fd = open(fixture(""), O_RDONLY | O_DIRECTORY | O_CLOEXEC), root;
        ContainerCache *cache = NULL;
        const ContainerInfo *i;
        ContainerInfo ret;

        assert_true(fd >= 0);
        root = openat(fd, c->fixture, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);
        assert_int_equal(container_cache_new(root, proc_fd, cg_fd, 8, &cache), 0);
        i = container_cache_lookup(cache, c->cgroup);
        assert_non_null(i);
        ret = *i;
        container_cache_free(cache);
        close(root);
        close(fd);
        return ret;
}

static void expect_named(const Case *c, int proc_fd, int cg_fd) {
        ContainerInfo i = look(c, proc_fd, cg_fd);
        ContainerSelector all = { .name = (char *) "*" };

        if (strcmp(i.unverified, "") != 0 || strcmp(i.pod_container[0] ? i.pod_container : i.name, c->name) != 0)
                fail_msg("%s: named \"%s\", unnamed \"%s\", unverified \"%s\"", c->cgroup, i.name, i.unnamed,
                         i.unverified);
        assert_string_equal(i.unnamed, "");
        assert_true(ctrselect_match(&all, &i));
}

/* Not named, and why said; no watch by name selects it. */
static void expect_unverified(const Case *c, int proc_fd, int cg_fd, const char *why) {
        ContainerInfo i = look(c, proc_fd, cg_fd);
        ContainerSelector all = { .name = (char *) "*" }, image = { .image = (char *) "*" };

        if (!strstr(i.unverified, why))
                fail_msg("%s: unverified \"%s\", not \"%s\" (name \"%s\")", c->cgroup, i.unverified, why, i.name);
        assert_string_equal(i.name, "");
        assert_string_equal(i.image, "");
        assert_string_equal(i.pod_name, "");
        assert_string_equal(i.pod_container, "");
        assert_string_not_equal(i.unnamed, "");
        assert_false(ctrselect_match(&all, &i));
        assert_false(ctrselect_match(&image, &i));
}

static void test_spoofed_scopes(void **state) {
        static const char *const why[] = {
                "docker's cgroup below user@1000.service",
                "docker's cgroup below user@1000.service",
                "containerd's cgroup below user@1000.service",
                "the kubelet's cgroup below user@1000.service",
                "user@1001.service nested",
                "user@0.service nested",
        };

        if (geteuid() != 0)
                skip();
        for (size_t k = 0; k < ELEMENTSOF(spoofs); k++) {
                /* made as systemd delegates user@1000.service: all of it uid 1000's */
                assert_int_equal(fake_tree_cgroup(cgroups, spoofs[k].cgroup), 0);
                assert_int_equal(fake_tree_cgroup(cgroups, real[k].cgroup), 0);
        }
        for (size_t k = 0; k < ELEMENTSOF(spoofs); k++) {
                expect_unverified(&spoofs[k], -1, cgroups_fd, why[k]);
                expect_named(&real[k], -1, cgroups_fd);
        }
        /* counted apart (psidiag_containers_unverified_total), and not lent the real one's name
         * from the cache: a container is cached per id and cgroup */
        {
                int fd = open(fixture("containers/docker"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ContainerCache *c = NULL;
                ContainerCacheStats st;

                assert_int_equal(container_cache_new(fd, -1, cgroups_fd, 8, &c), 0);
                assert_string_equal(container_cache_lookup(c, real[0].cgroup)->name, "web");
                assert_string_equal(container_cache_lookup(c, spoofs[0].cgroup)->name, "");
                assert_string_equal(container_cache_lookup(c, real[0].cgroup)->name, "web");
                container_cache_stats(c, &st);
                assert_int_equal(st.lookups, 3);
                assert_int_equal(st.unknown, 1);
                assert_int_equal(st.unverified, 1);
                assert_int_equal(st.cached, 2);
                container_cache_free(c);
                close(fd);
        }
}

/* cgroups a user owns outside user@: a system service delegated to them (User=, Delegate=yes),
 * a slice made group-writable, a symlink in the path, user@1000.service not at its place. */
static void test_owners(void **state) {
        char path[512];
        const Case delegated = { "/system.slice/alice.service/docker-" DOCKER ".scope", "containers/docker", "web" },
                   writable = { "/open.slice/docker-" DOCKER ".scope", "containers/docker", "web" },
                   linked = { "/link.slice/docker-" DOCKER ".scope", "containers/docker", "web" },
                   session = { "/user.slice/user-1001.slice/session-4.scope/user@1001.service/libpod-" ROOTLESS_VFS
                               ".scope",
                               "containers/podman", "batch-vfs" },
                   rootowned = { "/user.slice/user-1002.slice/user@1002.service/libpod-" ROOTLESS_VFS ".scope",
                                 "containers/podman", "batch-vfs" };

        if (geteuid() != 0)
                skip();
        assert_int_equal(fake_tree_cgroup(cgroups, delegated.cgroup), 0);
        snprintf(path, sizeof path, "%s/system.slice/alice.service", cgroups);
        assert_int_equal(chown(path, 1000, 1000), 0);
        snprintf(path, sizeof path, "%s%s", cgroups, delegated.cgroup);
        assert_int_equal(chown(path, 1000, 1000), 0);
        expect_unverified(&delegated, -1, cgroups_fd, "alice.service is owned by uid 1000, not root");

        assert_int_equal(fake_tree_cgroup(cgroups, writable.cgroup), 0);
        snprintf(path, sizeof path, "%s/open.slice", cgroups);
        assert_int_equal(chmod(path, 0777), 0);
        expect_unverified(&writable, -1, cgroups_fd, "open.slice is writable by others than its owner");

        assert_int_equal(fake_tree_cgroup(cgroups, "/real.slice/docker-" DOCKER ".scope"), 0);
        snprintf(path, sizeof path, "%s/link.slice", cgroups);
        assert_int_equal(symlink("real.slice", path), 0);
        expect_unverified(&linked, -1, cgroups_fd, "link.slice is not a directory");

        assert_int_equal(fake_tree_cgroup(cgroups, session.cgroup), 0);
        expect_unverified(&session, -1, cgroups_fd, "user@1001.service is not at its place");

        /* user@1002.service at its place, but not its user's: not what systemd makes */
        assert_int_equal(fake_tree_mkdirs(cgroups, rootowned.cgroup), 0);
        expect_unverified(&rootowned, -1, cgroups_fd, "user@1002.service is owned by uid 0, not the user's");

        /* gone: nothing to check, nothing named */
        expect_unverified(&(Case) { "/system.slice/docker-" REAL_DOCKER ".scope", "containers/docker", "" }, -1,
                          cgroups_fd, "its cgroup is gone");
        expect_unverified(&real[0], -1, -1, "no cgroup2 mount");
        /* ".." (a path left outside our cgroup namespace, probes/cgns.h): never walked */
        assert_int_equal(fake_tree_cgroup(cgroups, real[0].cgroup), 0);
        expect_unverified(&(Case) { "/system.slice/../system.slice/docker-" DOCKER ".scope", "containers/docker", "" },
                          -1, cgroups_fd, "its cgroup's path leaves the cgroup2 mount");
}

/* Writes a regular file of uid's at path beneath dir (as podman makes a rootless user's). */
static void write_as(const char *dir, const char *path, const char *text, uid_t uid) {
        char full[512];

        assert_int_equal(fake_tree_write(dir, path, text), 0);
        snprintf(full, sizeof full, "%s/%s", dir, path);
        assert_int_equal(chown(full, uid, uid), 0);
}

/* Rootless podman's pidfile in the run root the user's own storage.conf sets (bob, uid 1001, in
 * podman's fixture at root; /proc at proc): the init elsewhere is refused, in the cgroup named; a
 * runroot that cannot be known (a variable of the user's environment) gives no process check, and
 * the default run root's pidfile is not taken for it. Needs root. */
static void test_rootless_runroot(const char *root, const char *proc, int proc_fd) {
        const Case bob = { real[4].cgroup, root, "batch-vfs" };
        char in[320];

        assert_int_equal(fake_tree_cgroup(cgroups, bob.cgroup), 0);
        write_as(root, BOB_CONF, "[storage]\nrunroot = \"$HOME/run\"\n", 1001);
        write_as(root, BOB_RUN "/pidfile", "1234\n", 1001);
        write_as(root, "run/user/1001/containers/vfs-containers/" ROOTLESS_VFS "/userdata/pidfile", "1235\n", 1001);
        assert_int_equal(fake_tree_write(proc, "1234/cgroup", "0::/user.slice/user-1001.slice/session-3.scope\n"), 0);
        assert_int_equal(fake_tree_write(proc, "1235/cgroup", "0::/user.slice/user-1001.slice/session-3.scope\n"), 0);
        expect_unverified(&bob, proc_fd, cgroups_fd,
                          "its init process 1234 (as its runtime says) is in "
                          "/user.slice/user-1001.slice/session-3.scope");
        snprintf(in, sizeof in, "0::%s\n", bob.cgroup);
        assert_int_equal(fake_tree_write(proc, "1234/cgroup", in), 0);
        expect_named(&bob, proc_fd, cgroups_fd);

        /* $XDG_RUNTIME_DIR is bob's session's to set: no pid, and not the default run root's 1235 */
        write_as(root, BOB_CONF, "[storage]\nrunroot = \"$XDG_RUNTIME_DIR/containers\"\n", 1001);
        expect_named(&bob, proc_fd, cgroups_fd);
        /* without a runroot of their own, the default's */
        write_as(root, BOB_CONF, "[storage]\ndriver = \"vfs\"\n", 1001);
        expect_unverified(&bob, proc_fd, cgroups_fd, "its init process 1235 (as its runtime says)");
}

/* The init process the runtime's files name must live in the cgroup (docker's State.Pid,
 * containerd's init.pid, CRI-O's pidfile and podman's, conmon's for their monitors' scopes); one
 * that is gone is no evidence either way. */
static void test_process(void **state) {
        static const char *const crio[] = {
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU ".slice/crio-" CRIO ".scope",
                "/kubepods.slice/crio-conmon-" CRIO ".scope",
                /* the kubelet's cgroupfs driver, which names no runtime: CRI-O's once containerd has none */
                "/kubepods/besteffort/pod" UID "/" CRIO,
        };
        char proc[] = "/tmp/psidiag-ctrverify-proc-XXXXXX", root[] = "/tmp/psidiag-ctrverify-ctrd-XXXXXX";
        const Case docker = { "/docker/" REAL_DOCKER, "containers/docker", "names-web" };
        char cri[256];
        int proc_fd;

        assert_int_equal(fake_tree_cgroup(cgroups, docker.cgroup), 0);
        assert_non_null(mkdtemp(proc));
        proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        expect_named(&docker, proc_fd, cgroups_fd); /* 28746 is not there: gone */
        assert_int_equal(fake_tree_write(proc, "28746/cgroup", "0::/docker/" REAL_DOCKER " (deleted)\n"), 0);
        expect_named(&docker, proc_fd, cgroups_fd); /* a zombie of its removed cgroup: ending */
        assert_int_equal(fake_tree_write(proc, "28746/cgroup", "0::/docker/" REAL_DOCKER "/init.scope\n"), 0);
        expect_named(&docker, proc_fd, cgroups_fd);
        assert_int_equal(fake_tree_write(proc, "28746/cgroup", "0::/system.slice/cron.service\n"), 0);
        expect_unverified(&docker, proc_fd, cgroups_fd,
                          "its init process 28746 (as its runtime says) is in "
                          "/system.slice/cron.service");
        assert_int_equal(fake_tree_write(proc, "28746/cgroup", "0::/docker/" REAL_DOCKER "x\n"), 0);
        expect_unverified(&docker, proc_fd, cgroups_fd, "is in /docker/" REAL_DOCKER "x");

        /* containerd's task: init.pid beside its bundle's config.json */
        assert_int_equal(fake_tree_copy(root, fixture("containers/containerd")), 0);
        snprintf(cri, sizeof cri, "run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/init.pid", CRI);
        assert_int_equal(fake_tree_write(root, cri, "4321"), 0);
        assert_int_equal(fake_tree_write(proc, "4321/cgroup", "0::/elsewhere.slice/x.scope\n"), 0);
        assert_int_equal(fake_tree_cgroup(cgroups, real[2].cgroup), 0);
        expect_unverified(&(Case) { real[2].cgroup, root, "api" }, proc_fd, cgroups_fd,
                          "its init process 4321 (as its runtime says) is in /elsewhere.slice/x.scope");
        assert_int_equal(fake_tree_write(proc, "4321/cgroup", "0::" KUBE_POD "/cri-containerd-" CRI ".scope\n"), 0);
        expect_named(&(Case) { real[2].cgroup, root, "api" }, proc_fd, cgroups_fd);
        assert_int_equal(fake_tree_remove(root), 0);

        /* podman's pidfile (the init) and conmon.pid (its monitor's scope) in its run root */
        memcpy(root + strlen(root) - 6, "XXXXXX", 6);
        assert_int_equal(fake_tree_copy(root, fixture("containers/podman")), 0);
        assert_int_equal(fake_tree_write(root, PODMAN_RUN "/pidfile", "777\n"), 0);
        assert_int_equal(fake_tree_write(root, PODMAN_RUN "/conmon.pid", "778\n"), 0);
        assert_int_equal(fake_tree_write(proc, "777/cgroup", "0::/machine.slice/libpod-" PODMAN ".scope\n"), 0);
        assert_int_equal(fake_tree_write(proc, "778/cgroup", "0::/machine.slice/sshd.service\n"), 0);
        assert_int_equal(fake_tree_cgroup(cgroups, real[5].cgroup), 0);
        assert_int_equal(fake_tree_cgroup(cgroups, CONMON), 0);
        expect_named(&(Case) { real[5].cgroup, root, "names-probe1" }, proc_fd, cgroups_fd);
        expect_unverified(&(Case) { CONMON, root, "names-probe1" }, proc_fd, cgroups_fd,
                          "its init process 778 (as its runtime says) is in /machine.slice/sshd.service");
        assert_int_equal(fake_tree_write(proc, "778/cgroup", "0::" CONMON "\n"), 0);
        expect_named(&(Case) { CONMON, root, "names-probe1" }, proc_fd, cgroups_fd);
        assert_int_equal(fake_tree_write(proc, "777/cgroup", "0::/machine.slice/sshd.service\n"), 0);
        expect_unverified(&(Case) { real[5].cgroup, root, "names-probe1" }, proc_fd, cgroups_fd,
                          "its init process 777 (as its runtime says) is in /machine.slice/sshd.service");
        /* a pidfile not root's is not podman's */
        snprintf(cri, sizeof cri, "%s/" PODMAN_RUN "/pidfile", root);
        if (geteuid() == 0) {
                assert_int_equal(chown(cri, 1000, 1000), 0);
                expect_named(&(Case) { real[5].cgroup, root, "names-probe1" }, proc_fd, cgroups_fd);
                test_rootless_runroot(root, proc, proc_fd);
        }
        assert_int_equal(fake_tree_remove(root), 0);

        /* CRI-O's bundle: pidfile (the init) and conmon-pidfile (its monitor's scope) beside config.json */
        memcpy(root + strlen(root) - 6, "XXXXXX", 6);
        assert_int_equal(fake_tree_copy(root, fixture("containers/crio")), 0);
        assert_int_equal(fake_tree_write(root, CRIO_RUN "/pidfile", "5555"), 0);
        assert_int_equal(fake_tree_write(root, CRIO_RUN "/conmon-pidfile", "5556\n"), 0);
        for (size_t k = 0; k < ELEMENTSOF(crio); k++) {
                const Case c = { crio[k], root, "api" };
                const char *pid = k == 1 ? "5556/cgroup" : "5555/cgroup";
                char in[320], why[128];

                assert_int_equal(fake_tree_cgroup(cgroups, crio[k]), 0);
                assert_int_equal(fake_tree_write(proc, pid, "0::/system.slice/sshd.service\n"), 0);
                snprintf(why, sizeof why,
                         "its init process %.4s (as its runtime says) is in /system.slice/sshd.service", pid);
                expect_unverified(&c, proc_fd, cgroups_fd, why);
                snprintf(in, sizeof in, "0::%s\n", crio[k]);
                assert_int_equal(fake_tree_write(proc, pid, in), 0);
                expect_named(&c, proc_fd, cgroups_fd);
        }
        close(proc_fd);
        assert_int_equal(fake_tree_remove(proc), 0);
        assert_int_equal(fake_tree_remove(root), 0);
}

/* The check reads the cgroup2 mount the sysroot found: /sys/fs/cgroup on a pure cgroup2 host,
 * /sys/fs/cgroup/unified on a hybrid one. */
static void test_mounts(void **state) {
        static const char *const trees[] = { "cgroup2", "hybrid" };
        char dir[] = "/tmp/psidiag-ctrverify-root-XXXXXX";

        if (geteuid() != 0)
                skip();
        for (size_t k = 0; k < ELEMENTSOF(trees); k++) {
                char mount[256];
                Sysroot *s = NULL;

                snprintf(mount, sizeof mount, "%s/%s", fixture(""), trees[k]);
                assert_int_equal(fake_tree_copy(dir, mount), 0);
                assert_int_equal(sysroot_open(dir, &s), 0);
                snprintf(mount, sizeof mount, "%s%s", dir, s->cgroup2_path);
                assert_int_equal(fake_tree_cgroup(mount, spoofs[0].cgroup), 0);
                assert_int_equal(fake_tree_cgroup(mount, real[0].cgroup), 0);
                expect_unverified(&spoofs[0], -1, s->cgroup2_fd, "docker's cgroup below user@1000.service");
                expect_named(&real[0], -1, s->cgroup2_fd);
                sysroot_free(s);
                assert_int_equal(fake_tree_remove(dir), 0);
                memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
        }
}

/* The pure part: the container's own cgroup, and the places. */
static void test_place(void **state) {
        char out[128], why[CTRVERIFY_REASON_MAX];

        assert_int_equal(ctrverify_own_cgroup("/system.slice/docker-abc.scope/init.scope", "abc", out, sizeof out), 0);
        assert_string_equal(out, "/system.slice/docker-abc.scope");
        assert_int_equal(ctrverify_own_cgroup("default/web", "web", out, sizeof out), 0);
        assert_string_equal(out, "/default/web");
        assert_int_equal(ctrverify_own_cgroup("/a/b", "c", out, sizeof out), -ENOENT);
        assert_int_equal(ctrverify_own_cgroup("/aaaaaaaaaa/c", "c", out, 8), -ENAMETOOLONG);

        assert_int_equal(ctrverify_place("/machine.slice/libpod-a.scope", "podman", -1, why, sizeof why), 0);
        assert_int_equal(ctrverify_place(U1000 "/user.slice/libpod-a.scope", "podman", 1000, why, sizeof why), 0);
        /* a user@ that is no uid (user@x.service) is still a user's systemd instance */
        assert_int_equal(ctrverify_place(U1000 "/user@x.service/docker-a.scope", "docker", -1, why, sizeof why),
                         -EPERM);
        assert_string_equal(why, "docker's cgroup below a user's systemd instance (user@1000.service)");
        assert_int_equal(
                ctrverify_place("/user.slice/user-1000.slice/user@1000.service", "podman", 1000, why, sizeof why),
                -EPERM);
        assert_int_equal(ctrverify_place("/user.slice/user-1001.slice/user@1000.service/libpod-a.scope", "podman", 1000,
                                         why, sizeof why),
                         -EPERM);
        assert_int_equal(ctrverify_place(U1000 "/crio-a.scope", "crio", 1000, why, sizeof why), -EPERM);
        assert_string_equal(why, "crio's cgroup below user@1000.service, a user's delegated subtree");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_place),   cmocka_unit_test(test_spoofed_scopes), cmocka_unit_test(test_owners),
                cmocka_unit_test(test_process), cmocka_unit_test(test_mounts),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
