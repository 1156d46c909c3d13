/* SPDX-License-Identifier: MIT */
/* Container names from each runtime's files (tests/fixtures/containers/<runtime>/: podman's as
 * podman 4.3.1 wrote them on Debian 12, the others shaped as their sources write them), the cache
 * (once per container, LRU eviction, kept after the files go), and hostile metadata: bad JSON,
 * huge files, FIFOs and symlinks in place of a file, control characters, missing fields; a
 * containers.json over the parse budget refused cheaply and read once a minute, a volatile one
 * parsed once per sample. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/timeutil.h"
#include "containers/containers.h"
#include "containers/ctrmeta.h"
#include "tests/unit/fake-cgroups.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"
#include "tests/json-count.h"

#define DOCKER "d0c4e7f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define CONFIG "var/lib/docker/containers/" DOCKER "/config.v2.json"
/* as docker 20.10.24 (Debian 12's docker.io) wrote it here, cgroupfs driver: /docker/<id> */
#define REAL_DOCKER "99136c90f14e908887f40326e5cc9d92e24b828ac295d3dd9f28966be22a4dfb"
#define SHIM "d1c4e7f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define CRI "c0ffee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define SANDBOX "5a5a5a01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define PLAIN "9e9e9e01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define CRIO "c210c201a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define PODMAN "c259ab325826b8b00d41a77c5935548283afad4f39d1379691811634296c0bc7"
#define ROOTLESS "7007ee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define ROOTLESS_VFS "7007ee02a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define UID "0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b"
#define UIDU "0f5e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"

static ContainerCache *cache_at(const char *root, int *ret_fd) {
        ContainerCache *c = NULL;
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 8, &c), 0);
        *ret_fd = fd;
        return c;
}

static void test_docker(void **state) {
        int fd;
        ContainerCache *c = cache_at(fixture("containers/docker"), &fd);
        const ContainerInfo *i;

        i = fake_cgroups_lookup(c, "/system.slice/docker-" DOCKER ".scope");
        assert_non_null(i);
        assert_string_equal(i->runtime, "docker");
        assert_string_equal(i->id, DOCKER);
        assert_string_equal(i->name, "web");
        assert_string_equal(i->image, "nginx:1.25");
        assert_string_equal(i->pod_name, "");
        assert_string_equal(i->unnamed, "");
        i = fake_cgroups_lookup(c, "/docker/" REAL_DOCKER);
        assert_string_equal(i->name, "names-web");
        assert_string_equal(i->image, "psidiag-names-bb:1");
        assert_string_equal(i->unnamed, "");
        /* cgroupfs driver, the same container */
        i = fake_cgroups_lookup(c, "/docker/" DOCKER);
        assert_string_equal(i->name, "web");
        /* dockershim / cri-dockerd: the pod in its labels */
        i = fake_cgroups_lookup(c, "/kubepods.slice/kubepods-pod" UIDU ".slice/docker-" SHIM ".scope");
        assert_string_equal(i->pod_namespace, "payments");
        assert_string_equal(i->pod_name, "api-7d9f");
        assert_string_equal(i->pod_uid, UID);
        assert_string_equal(i->pod_container, "api");
        assert_string_equal(i->image, "registry.example/api@sha256:0123");
        assert_false(i->sandbox);
        container_cache_free(c);
        close(fd);
}

static void test_containerd(void **state) {
        int fd;
        ContainerCache *c = cache_at(fixture("containers/containerd"), &fd);
        const ContainerInfo *i;

        i = fake_cgroups_lookup(c, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
                                   ".slice/cri-containerd-" CRI ".scope");
        assert_string_equal(i->runtime, "containerd");
        assert_string_equal(i->pod_namespace, "payments");
        assert_string_equal(i->pod_name, "api-7d9f");
        assert_string_equal(i->pod_uid, UID);
        assert_string_equal(i->pod_container, "api");
        assert_string_equal(i->image, "registry.example/api:2.3");
        assert_string_equal(i->unnamed, "");
        /* the kubelet's cgroupfs driver names no runtime: found in containerd's bundles */
        i = fake_cgroups_lookup(c, "/kubepods/burstable/pod" UID "/" SANDBOX);
        assert_string_equal(i->runtime, "containerd");
        assert_true(i->sandbox);
        assert_string_equal(i->pod_name, "api-7d9f");
        assert_string_equal(i->runtime_namespace, "k8s.io");
        /* plain containerd: a bundle with no names: its id is the name */
        i = fake_cgroups_lookup(c, "/kubepods.slice/cri-containerd-" PLAIN ".scope");
        assert_string_equal(i->name, PLAIN);
        assert_string_equal(i->runtime_namespace, "default");
        assert_string_equal(i->image, ""); /* meta.db has no such container */
        assert_string_equal(i->unnamed, "");
        container_cache_free(c);
        close(fd);
}

/* ctr's default cgroup /<namespace>/<id>: a container only where containerd has that task's bundle */
static void test_containerd_plain(void **state) {
        int fd;
        ContainerCache *c = cache_at(fixture("containers/containerd"), &fd);
        const ContainerInfo *i;
        ContainerCacheStats st;

        i = fake_cgroups_lookup(c, "/default/web");
        assert_non_null(i);
        assert_string_equal(i->runtime, "containerd");
        assert_string_equal(i->id, "web");
        assert_string_equal(i->name, "web");
        assert_string_equal(i->runtime_namespace, "default");
        /* from the meta.db containerd 1.6.20 wrote for `ctr containers create IMAGE web` */
        assert_string_equal(i->image, "registry.example.com/tools/busybox:1");
        assert_string_equal(i->unnamed, "");
        assert_non_null(container_cache_peek(c, "default/web"));
        /* two plain names with no bundle: no container, asked once and remembered */
        assert_null(fake_cgroups_lookup(c, "/psidiag-it-x/child"));
        assert_null(fake_cgroups_lookup(c, "/psidiag-it-x/child"));
        assert_null(container_cache_peek(c, "/psidiag-it-x/child"));
        /* neither identifiers nor two levels: never looked for */
        assert_null(fake_cgroups_lookup(c, "/default/web/inner"));
        assert_null(fake_cgroups_lookup(c, "/default/-web"));
        assert_null(fake_cgroups_lookup(c, "/default/w..eb/"));
        assert_null(fake_cgroups_lookup(c, "/../web"));
        assert_null(fake_cgroups_lookup(c, "/web"));
        /* what the path says first: a unit is never a plain container */
        assert_null(fake_cgroups_lookup(c, "/system.slice/web.service"));
        container_cache_stats(c, &st);
        assert_int_equal(st.lookups, 1);
        assert_int_equal(st.reads, 1);
        assert_int_equal(st.unknown, 0);
        assert_int_equal(st.cached, 2);
        container_cache_free(c);
        close(fd);
}

/* containerd's meta.db corrupt, cut, or gone: still named by its id, with no image */
static void test_containerd_plain_no_meta(void **state) {
        static const char meta[] = "var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db";
        char root[] = "/tmp/psidiag-ctrd-XXXXXX";
        const ContainerInfo *i;
        ContainerCache *c;
        int fd;
        char path[128];

        assert_int_equal(fake_tree_copy(root, fixture("containers/containerd")), 0);
        snprintf(path, sizeof path, "%s/%s", root, meta);
        for (int round = 0; round < 3; round++) {
                if (round == 0) /* cut after its meta pages: the root bucket's page is past the end */
                        assert_int_equal(truncate(path, 8192), 0);
                else if (round == 1)
                        assert_int_equal(fake_tree_write(root, meta, "not a bbolt file"), 0);
                else
                        assert_int_equal(unlink(path), 0);
                c = cache_at(root, &fd);
                i = fake_cgroups_lookup(c, "/default/web");
                assert_non_null(i);
                assert_string_equal(i->name, "web");
                assert_string_equal(i->runtime_namespace, "default");
                assert_string_equal(i->image, "");
                assert_string_equal(i->unnamed, "");
                container_cache_free(c);
                close(fd);
        }
        assert_int_equal(fake_tree_remove(root), 0);
}

static void test_crio(void **state) {
        int fd;
        ContainerCache *c = cache_at(fixture("containers/crio"), &fd);
        const ContainerInfo *i;

        i = fake_cgroups_lookup(c, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
                                   ".slice/crio-" CRIO ".scope");
        assert_string_equal(i->runtime, "crio");
        assert_string_equal(i->pod_namespace, "payments");
        assert_string_equal(i->pod_name, "api-7d9f");
        assert_string_equal(i->pod_container, "api");
        assert_string_equal(i->image, "registry.example/api:2.3");
        /* its monitor's scope names the same container */
        i = fake_cgroups_lookup(c, "/kubepods.slice/crio-conmon-" CRIO ".scope");
        assert_string_equal(i->pod_container, "api");
        container_cache_free(c);
        close(fd);
}

static void test_podman(void **state) {
        int fd;
        ContainerCache *c = cache_at(fixture("containers/podman"), &fd);
        const ContainerInfo *i;

        i = fake_cgroups_lookup(c, "/libpod_parent/libpod-" PODMAN);
        assert_string_equal(i->runtime, "podman");
        assert_string_equal(i->name, "names-probe1");
        assert_string_equal(i->image, "localhost/psidiag-names-bb:1");
        i = fake_cgroups_lookup(c, "/machine.slice/libpod-" PODMAN ".scope");
        assert_string_equal(i->name, "names-probe1");
        /* rootless: the storage of the user whose systemd instance holds the scope */
        i = fake_cgroups_lookup(c,
                                "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope");
        assert_string_equal(i->name, "batch");
        assert_string_equal(i->image, "docker.io/library/busybox:latest");
        /* a storage of the vfs driver (rootless podman without overlay) */
        i = fake_cgroups_lookup(c, "/user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" ROOTLESS_VFS
                                   ".scope");
        assert_string_equal(i->name, "batch-vfs");
        assert_string_equal(i->image, "docker.io/library/busybox:latest");
        /* the same id under another user's instance is another's container: not found there */
        i = fake_cgroups_lookup(c, "/user.slice/user-1001.slice/user@1001.service/libpod-" ROOTLESS ".scope");
        assert_string_equal(i->name, "");
        assert_string_not_equal(i->unnamed, "");
        /* podman's own OCI spec names nothing */
        assert_null(fake_cgroups_lookup(c, "/system.slice/nginx.service"));
        assert_null(fake_cgroups_lookup(c, NULL));
        container_cache_free(c);
        close(fd);
}

/* With conf (beneath root) saying text, a new cache names podman's fixture container, under both
 * its systemd and its cgroupfs path, or leaves it unnamed and says why. */
static void expect_podman_at(int fd, const char *root, const char *conf, const char *text, bool named) {
        static const char *const cgroups[] = { "/machine.slice/libpod-" PODMAN ".scope",
                                               "/libpod_parent/libpod-" PODMAN };
        ContainerCache *c;

        assert_int_equal(fake_tree_write(root, conf, text), 0);
        for (size_t k = 0; k < 2; k++) {
                const ContainerInfo *i;

                assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 8, &c), 0);
                i = fake_cgroups_lookup(c, cgroups[k]);
                assert_string_equal(i->name, named ? "names-probe1" : "");
                assert_string_equal(i->image, named ? "localhost/psidiag-names-bb:1" : "");
                if (named)
                        assert_string_equal(i->unnamed, "");
                else
                        assert_string_not_equal(i->unnamed, "");
                container_cache_free(c);
        }
}

/* storage.conf's graphroot as the rootful graph root: 1, 0 or -errno, the path in r. */
static int graphroot(const char *text, char *r, size_t size) {
        char value[PATH_MAX];
        int k = ctrmeta_storage_key(text, strlen(text), "graphroot", value, sizeof value);

        if (k > 0 && (k = ctrmeta_storage_expand(value, NULL, r, size)) == 0)
                k = 1;
        return k;
}

/* storage.conf's graphroot: where rootful podman's storage is when an operator moved it. */
static void test_graphroot(void **state) {
        char root[] = "/tmp/psidiag-test-containers-XXXXXX", r[64];
        int fd;

#define GR(text) graphroot(text, r, sizeof r)
        /* Debian's /usr/share/containers/storage.conf says the default */
        assert_int_equal(GR("# storage.conf\n[storage]\ndriver = \"overlay\"\nrunroot = \"/run/containers/storage\"\n"
                            "graphroot = \"/var/lib/containers/storage\"\n[storage.options]\n"),
                         1);
        assert_string_equal(r, "/var/lib/containers/storage");
        assert_int_equal(GR("[ storage ]\n  graphroot='/srv/ctr'   # moved\r\n"), 1);
        assert_string_equal(r, "/srv/ctr");
        assert_int_equal(GR("[storage]\ngraphroot=\"/a/..b/c..\""), 1);
        assert_string_equal(r, "/a/..b/c..");
        /* not set: commented, in another table, another key, no table, nothing */
        assert_int_equal(GR("[storage]\n# graphroot = \"/srv/ctr\"\n"), 0);
        assert_int_equal(GR("[storage.options]\ngraphroot = \"/srv/ctr\"\n"), 0);
        assert_int_equal(GR("[[storage]]\ngraphroot = \"/srv/ctr\"\n"), 0);
        assert_int_equal(GR("[storage]\ngraphroots = \"/srv/ctr\"\n"), 0);
        assert_int_equal(GR("graphroot = \"/srv/ctr\"\n"), 0);
        assert_int_equal(GR(""), 0);
        /* set to something that is not an absolute path of its own */
        assert_int_equal(GR("[storage]\ngraphroot = \"srv/ctr\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv/../etc\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv/..\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv\\u0041\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"$HOME/ctr\"\n"), -EBADMSG); /* rootful: no variable */
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv\tctr\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv/ctr\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"/srv/ctr\" x\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = \"\"\n"), -EBADMSG);
        assert_int_equal(GR("[storage]\ngraphroot = /srv/ctr\n"), -EBADMSG);
        assert_int_equal(
                GR("[storage]\ngraphroot = \"/a-path-longer-than-the-buffer-of-sixty-four-bytes/xxxxxxxxxxxxxxx\"\n"),
                -ENAMETOOLONG);
#undef GR

        /* podman's fixture with its storage moved to /srv/ctr, as /etc/containers/storage.conf says */
        assert_int_equal(fake_tree_copy(root, fixture("containers/podman")), 0);
        assert_int_equal(fake_tree_mkdirs(root, "srv/ctr"), 0);
        {
                char from[128], to[128];
                snprintf(from, sizeof from, "%s/var/lib/containers/storage", root);
                snprintf(to, sizeof to, "%s/srv/ctr/storage", root);
                assert_int_equal(rename(from, to), 0);
        }
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* the distribution's file alone, at the default: not found */
        expect_podman_at(fd, root, "usr/share/containers/storage.conf",
                         "[storage]\ngraphroot = \"/var/lib/containers/storage\"\n", false);
        /* the distribution's file moved it */
        expect_podman_at(fd, root, "usr/share/containers/storage.conf", "[storage]\ngraphroot = \"/srv/ctr/storage\"\n",
                         true);
        /* /etc's file overrides it, whatever it says or leaves unsaid */
        expect_podman_at(fd, root, "etc/containers/storage.conf", "[storage]\ndriver = \"overlay\"\n", false);
        expect_podman_at(fd, root, "etc/containers/storage.conf", "[storage]\ngraphroot = \"/srv/ctr/storage\"\n",
                         true);
        /* a graphroot that is not a path: the default, and the container unnamed, not a crash */
        expect_podman_at(fd, root, "etc/containers/storage.conf", "[storage]\ngraphroot = \"../x\"\n", false);
        close(fd);
        assert_int_equal(fake_tree_remove(root), 0);
}

/* A rootless path as containers/storage expands it: $UID first, then the user's $HOME and $USER;
 * any other variable is the user's environment, which the agent does not know. */
static void test_storage_expand(void **state) {
        const CtrmetaUser u = { .uid = 1000, .name = "alice", .home = "/home/alice" };
        char r[64];

        assert_int_equal(ctrmeta_storage_expand("$HOME/.local/share/containers/storage", &u, r, sizeof r), 0);
        assert_string_equal(r, "/home/alice/.local/share/containers/storage");
        assert_int_equal(ctrmeta_storage_expand("/srv/${USER}/$UID/${HOME}x", &u, r, sizeof r), 0);
        assert_string_equal(r, "/srv/alice/1000//home/alicex");
        assert_int_equal(ctrmeta_storage_expand("/srv/$USER-store", &u, r, sizeof r), 0);
        assert_string_equal(r, "/srv/alice-store");
        assert_int_equal(ctrmeta_storage_expand("/srv/$UIDS", &u, r, sizeof r), 0); /* a string replace */
        assert_string_equal(r, "/srv/1000S");
        /* variables the agent cannot know, a ".." component, a relative path, a broken ${ */
        assert_int_equal(ctrmeta_storage_expand("$XDG_DATA_HOME/containers", &u, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("/srv/$", &u, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("/srv/${USER", &u, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("$HOME/../root", &u, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("$USER/x", &u, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("/srv/$HOME", NULL, r, sizeof r), -EBADMSG);
        assert_int_equal(ctrmeta_storage_expand("$HOME/a-path-longer-than-the-buffer-of-sixty-four-bytes/and-more", &u,
                                                r, sizeof r),
                         -ENAMETOOLONG);
        assert_int_equal(ctrmeta_storage_expand("/x", &u, r, 0), -ENAMETOOLONG);
}

/* A new cache names alice's rootless container, or leaves it unnamed and says why. */
static void expect_rootless(int fd, bool named) {
        ContainerCache *c;
        const ContainerInfo *i;

        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 8, &c), 0);
        i = fake_cgroups_lookup(c,
                                "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope");
        assert_non_null(i);
        assert_string_equal(i->name, named ? "batch" : "");
        if (!named)
                assert_string_not_equal(i->unnamed, "");
        container_cache_free(c);
}

/* Where a rootless user's storage is when it was moved (types/options.go): the system
 * storage.conf's rootless_storage_path, then the user's own ~/.config/containers/storage.conf,
 * its graphroot, else its rootless_storage_path, else the system's choice. */
static void test_rootless_storage_conf(void **state) {
        char root[] = "/tmp/psidiag-test-containers-XXXXXX", from[128], to[128];
        const char *user_conf = "home/alice/.config/containers/storage.conf";
        int fd;

        assert_int_equal(fake_tree_copy(root, fixture("containers/podman")), 0);
        assert_int_equal(fake_tree_mkdirs(root, "srv"), 0);
        snprintf(from, sizeof from, "%s/home/alice/.local/share/containers/storage", root);
        snprintf(to, sizeof to, "%s/srv/alice-store", root);
        assert_int_equal(rename(from, to), 0);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        expect_rootless(fd, false); /* moved, and nothing says where */

        /* the system's rootless_storage_path, with the user's name in it */
        assert_int_equal(
                fake_tree_write(root, "etc/containers/storage.conf",
                                "[storage]\ndriver = \"overlay\"\ngraphroot = \"/var/lib/containers/storage\"\n"
                                "rootless_storage_path = \"/srv/${USER}-store\"\n"),
                0);
        expect_rootless(fd, true);
        /* a user's own file that says nothing leaves the system's choice */
        assert_int_equal(fake_tree_write(root, user_conf, "[storage]\ndriver = \"overlay\"\n"), 0);
        expect_rootless(fd, true);
        /* the user's graphroot wins, then the user's rootless_storage_path */
        assert_int_equal(fake_tree_write(root, user_conf, "[storage]\ngraphroot = \"$HOME/elsewhere\"\n"), 0);
        expect_rootless(fd, false);
        assert_int_equal(fake_tree_write(root, "etc/containers/storage.conf",
                                         "[storage]\nrootless_storage_path = \"/srv/none\"\n"),
                         0);
        assert_int_equal(fake_tree_write(root, user_conf, "[storage]\ngraphroot = \"/srv/$USER-store\"\n"), 0);
        expect_rootless(fd, true);
        assert_int_equal(fake_tree_write(root, user_conf, "[storage]\nrootless_storage_path = '/srv/alice-store'\n"),
                         0);
        expect_rootless(fd, true);
        /* the user's graphroot unknowable (another variable, a ".."): not guessed */
        assert_int_equal(fake_tree_write(root, user_conf,
                                         "[storage]\ngraphroot = \"$XDG_DATA_HOME/containers/storage\"\n"
                                         "rootless_storage_path = '/srv/alice-store'\n"),
                         0);
        expect_rootless(fd, false);
        assert_int_equal(fake_tree_write(root, user_conf, "[storage]\ngraphroot = \"$HOME/../../srv/alice-store\"\n"),
                         0);
        expect_rootless(fd, false);
        /* a user's file that is not a regular file of theirs is not read: a FIFO would block a
         * reader, a symlink could point at another's file */
        {
                char conf[256], target[256];
                snprintf(conf, sizeof conf, "%s/%s", root, user_conf);
                snprintf(target, sizeof target, "%s/srv/other.conf", root);
                assert_int_equal(
                        fake_tree_write(root, "srv/other.conf", "[storage]\ngraphroot = \"/srv/alice-store\"\n"), 0);
                assert_int_equal(unlink(conf), 0);
                assert_int_equal(symlink(target, conf), 0);
                expect_rootless(fd, false);
                assert_int_equal(unlink(conf), 0);
                assert_int_equal(mkfifo(conf, 0644), 0);
                expect_rootless(fd, false);
                assert_int_equal(unlink(conf), 0);
                assert_int_equal(fake_tree_write(root, user_conf, "[storage]\ngraphroot = \"/srv/alice-store\"\n"), 0);
                expect_rootless(fd, true);
                assert_int_equal(chown(conf, 1001, 1001), 0); /* bob's file in alice's home */
                expect_rootless(fd, false);
                assert_int_equal(chown(conf, 1000, 1000), 0); /* alice's own */
                expect_rootless(fd, true);
        }
        close(fd);
        assert_int_equal(fake_tree_remove(root), 0);
}

/* A scratch root with docker's directory for id; file: its config.v2.json. */
static int scratch(char *root, size_t size, const char *id, char *file, size_t fsize) {
        char dir[384];
        int fd;

        snprintf(root, size, "/tmp/psidiag-test-containers-XXXXXX");
        assert_non_null(mkdtemp(root));
        snprintf(dir, sizeof dir, "var/lib/docker/containers/%s", id);
        assert_int_equal(fake_tree_mkdirs(root, dir), 0);
        snprintf(file, fsize, "%s/%s/config.v2.json", root, dir);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void test_hostile_files(void **state) {
        char root[256], file[768];
        int fd = scratch(root, sizeof root, DOCKER, file, sizeof file);
        ContainerCache *c = NULL;
        const ContainerInfo *i;
        const char *path = "/docker/" DOCKER;
        char *huge;
        ContainerCacheStats st;

        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 4, &c), 0);
        /* bad JSON */
        assert_int_equal(fake_tree_write_bytes(root, CONFIG, "{\"Name\": \"/web\", ", 17), 0);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->name, "");
        assert_string_equal(i->unnamed, "its config.v2.json is not the JSON expected");
        container_cache_free(c);

        /* larger than the bound: refused without reading it */
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 4, &c), 0);
        huge = malloc(CTRMETA_FILE_MAX + 2);
        assert_non_null(huge);
        memset(huge, ' ', CTRMETA_FILE_MAX + 2);
        assert_int_equal(fake_tree_write_bytes(root, CONFIG, huge, CTRMETA_FILE_MAX + 2), 0);
        free(huge);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->unnamed, "its config.v2.json is larger than 4 MiB");
        container_cache_free(c);

        /* a FIFO in its place never blocks the agent; a symlink is not followed */
        assert_int_equal(unlink(file), 0);
        assert_int_equal(mkfifo(file, 0600), 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 4, &c), 0);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->unnamed, "its config.v2.json is not a regular file of its owner");
        container_cache_free(c);
        assert_int_equal(unlink(file), 0);
        assert_int_equal(symlink("/etc/passwd", file), 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 4, &c), 0);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->unnamed, "its config.v2.json is not a regular file of its owner");
        container_cache_free(c);

        /* control characters are kept as bytes (the writers escape them); a file read once */
        assert_int_equal(unlink(file), 0);
        {
                static const char j[] = "{\"Name\":\"/\\u001b[31mred\",\"Config\":{\"Image\":\"a\\nb\",\"Labels\":7}}";
                assert_int_equal(fake_tree_write_bytes(root, CONFIG, j, sizeof j - 1), 0);
        }
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 4, &c), 0);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->name, "\x1b[31mred");
        assert_string_equal(i->image, "a\nb");
        /* the container ends and its files go: still named, from the cache, not read again */
        assert_int_equal(unlink(file), 0);
        i = fake_cgroups_lookup(c, path);
        assert_string_equal(i->name, "\x1b[31mred");
        container_cache_stats(c, &st);
        assert_int_equal(st.lookups, 2);
        assert_int_equal(st.reads, 1);
        assert_int_equal(st.unknown, 0);
        container_cache_free(c);
        close(fd);
        assert_int_equal(fake_tree_remove(root), 0);
}

static void test_eviction(void **state) {
        int fd;
        ContainerCache *c = NULL;
        ContainerCacheStats st;
        char path[128];

        fd = open(fixture("containers/docker"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 2, &c), 0);
        assert_string_equal(fake_cgroups_lookup(c, "/docker/" DOCKER)->name, "web");
        for (int k = 0; k < 3; k++) {
                snprintf(path, sizeof path, "/docker/%064x", k + 1);
                assert_string_not_equal(fake_cgroups_lookup(c, path)->unnamed, "");
                /* web stays: it was used since */
                assert_string_equal(fake_cgroups_lookup(c, "/docker/" DOCKER)->name, "web");
        }
        container_cache_stats(c, &st);
        assert_int_equal(st.cached, 2);
        assert_int_equal(st.evictions, 2);
        assert_int_equal(st.unknown, 3);
        assert_int_equal(st.reads, 4);
        /* peek reads nothing: the evicted one is not there, web is */
        snprintf(path, sizeof path, "/docker/%064x", 1);
        assert_null(container_cache_peek(c, path));
        assert_string_equal(container_cache_peek(c, "/docker/" DOCKER)->name, "web");
        assert_null(container_cache_peek(NULL, "/docker/" DOCKER));
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 0, &c), -EINVAL);
        container_cache_free(c);
        close(fd);
}

static void test_parsers_hostile(void **state) {
        ContainerInfo i = {};
        CtrmetaUser u = {};
        static const char pw[] = "root:x:0:0::/root:/bin/sh\nbad:x:1000\nx:x:1000:1000::relative:/bin/sh\n"
                                 "alice:x:1000:1000::/home/alice:/bin/sh";

        assert_int_equal(ctrmeta_parse_docker("[]", 2, &i), -EBADMSG);
        assert_int_equal(ctrmeta_parse_docker("", 0, &i), -EBADMSG);
        assert_int_equal(ctrmeta_parse_docker("{\"Name\":7}", 10, &i), 0);
        assert_string_equal(i.name, "");
        assert_int_equal(ctrmeta_parse_oci("{}", 2, &i), 0);
        assert_int_equal(ctrmeta_parse_oci("{\"annotations\":[]}", 18, &i), 0);
        assert_int_equal(ctrmeta_parse_oci("{\"annotations\":{\"nerdctl/name\":\"n\"}}", 36, &i), 1);
        assert_string_equal(i.name, "n");
        assert_int_equal(ctrmeta_parse_storage("{}", 2, "a", &i), -EBADMSG);
        assert_int_equal(ctrmeta_parse_storage("[1,{\"id\":\"b\"}]", 14, "a", &i), 0);
        i = (ContainerInfo) {};
        /* metadata that is not JSON: the names alone */
        assert_int_equal(ctrmeta_parse_storage("[{\"id\":\"a\",\"names\":[\"w\"],\"metadata\":\"{\"}]", 41, "a", &i),
                         1);
        assert_string_equal(i.name, "w");
        assert_string_equal(i.image, "");
        /* a name longer than its field is cut */
        {
                char big[600];
                memset(big, 'x', sizeof big);
                memcpy(big, "{\"Name\":\"/", 10);
                memcpy(big + sizeof big - 2, "\"}", 2);
                assert_int_equal(ctrmeta_parse_docker(big, sizeof big, &i), 0);
                assert_int_equal(strlen(i.name), sizeof i.name - 1);
        }
        assert_int_equal(ctrmeta_passwd_user(pw, sizeof pw - 1, 1000, &u), 0);
        assert_string_equal(u.home, "/home/alice");
        assert_string_equal(u.name, "alice");
        assert_int_equal(u.uid, 1000);
        assert_int_equal(ctrmeta_passwd_user(pw, sizeof pw - 1, 42, &u), -ENOENT);
        {
                char big[600];
                int n = snprintf(big, sizeof big, "%0100d:x:7:7::/h:/bin/sh\n", 0);
                assert_int_equal(ctrmeta_passwd_user(big, (size_t) n, 7, &u), -ENAMETOOLONG);
        }
}

/* A containers.json of n entries, each from fmt (its %d the entry's number), at most size bytes. */
static char *storage_json(const char *fmt, int n, size_t size, size_t *ret_len) {
        char *buf = malloc(size + 1);
        size_t len = 0;

        assert_non_null(buf);
        buf[len++] = '[';
        for (int i = 0; i < n; i++) {
                int k = snprintf(buf + len, size - len, "%s", i ? "," : "");
                len += (size_t) k;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                k = snprintf(buf + len, size - len, fmt, i, i, i);
#pragma GCC diagnostic pop
                assert_true(k > 0 && (size_t) k < size - len - 1);
                len += (size_t) k;
        }
        buf[len++] = ']';
        *ret_len = len;
        return buf;
}

#define ENTRY                                                                                                          \
        "{\"id\":\"%064d\",\"names\":[\"web-%d\"],\"image\":"                                                          \
        "\"c227781895da6c7e9d259e6d6494fa4b0993afa517915db716a871b41d31c969\","                                        \
        "\"layer\":\"ea4e3bade5ee574dc934a28ec22ccb615422feed4b000912791b85810d5a4b5a\",\"metadata\":\"{\\\"image-"    \
        "name\\\":"                                                                                                    \
        "\\\"localhost/shop/web:%d\\\",\\\"name\\\":\\\"web\\\",\\\"created-at\\\":1795818468}\",\"created\":"         \
        "\"2026-11-27T22:27:48.327434656Z\",\"flags\":{\"MountLabel\":\"\",\"ProcessLabel\":\"\"}}"

/* 4 MiB of empty objects (jansson built them in 283 MiB and 258 ms): refused before jansson is
 * called, in a few ms; a containers.json of 3,000 real-shaped containers (1.8 MiB) still parsed. */
static void test_storage_budget(void **state) {
        CtrmetaStorage *s = NULL;
        ContainerInfo info = {};
        char id[80];
        size_t len;
        char *buf = storage_json("{}", (int) (CTRMETA_FILE_MAX / 3) - 1, CTRMETA_FILE_MAX, &len);
        usec_t t0;

        alarm(30);
        assert_true(len <= CTRMETA_FILE_MAX);
        json_set_alloc_funcs(json_count_malloc, json_count_free);
        json_peak = 0;
        t0 = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(ctrmeta_storage_parse(buf, len, &s), -E2BIG);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 100 * 1000);
        assert_true(json_peak < 64 * 1024);
        free(buf);

        buf = storage_json(ENTRY, 3000, CTRMETA_FILE_MAX, &len);
        json_peak = 0;
        assert_int_equal(ctrmeta_storage_parse(buf, len, &s), 0);
        print_message("containers.json of 3000 containers, %zu bytes: jansson's peak %zu bytes, bound %llu\n", len,
                      json_peak, (unsigned long long) ctrmeta_json_cost(buf, len));
        assert_true(json_peak <= ctrmeta_json_cost(buf, len));
        snprintf(id, sizeof id, "%064d", 2999);
        assert_int_equal(ctrmeta_storage_find(s, id, &info), 1);
        assert_string_equal(info.name, "web-2999");
        assert_string_equal(info.image, "localhost/shop/web:2999");
        ctrmeta_storage_free(s);
        json_set_alloc_funcs(malloc, free);
        free(buf);
        alarm(0);
}

/* The inotify events of fd counted: IN_OPEN of the file it watches, read at once (inotify folds an
 * event into the same one still unread). */
static int opens_of(int fd) {
        char ev[4096] __attribute__((aligned(8)));
        int opens = 0;
        ssize_t n;

        while ((n = read(fd, ev, sizeof ev)) > 0)
                for (char *p = ev; p < ev + n; p += sizeof(struct inotify_event) + ((struct inotify_event *) p)->len)
                        opens += (((struct inotify_event *) p)->mask & IN_OPEN) != 0;
        return opens;
}

#define ALICE_STORAGE "home/alice/.local/share/containers/storage/overlay-containers/"
#define ALICE_SCOPE(id) "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" id ".scope"
#define OTHER1 "0000000000000000000000000000000000000000000000000000000000000001"
#define OTHER2 "0000000000000000000000000000000000000000000000000000000000000002"

/* A rootless user's containers.json over the budget is read once, whatever the lookups, the
 * samples' ends between them and the containers asked (it was parsed again at each). */
static void test_storage_read_once(void **state) {
        char root[] = "/tmp/psidiag-test-containers-XXXXXX", path[160];
        ContainerCache *c = NULL;
        const ContainerInfo *i;
        size_t len;
        char *buf = storage_json("{}", (int) (CTRMETA_FILE_MAX / 3) - 1, CTRMETA_FILE_MAX, &len);
        int fd, in;

        alarm(30);
        assert_int_equal(fake_tree_copy(root, fixture("containers/podman")), 0);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fake_tree_write_bytes(root, ALICE_STORAGE "containers.json", buf, len), 0);
        free(buf);
        snprintf(path, sizeof path, "%s/" ALICE_STORAGE "containers.json", root);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(in >= 0);
        assert_true(inotify_add_watch(in, path, IN_OPEN) >= 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 8, &c), 0);
        i = fake_cgroups_lookup(c, ALICE_SCOPE(ROOTLESS));
        assert_string_equal(i->name, "");
        assert_string_equal(i->unnamed, "its containers.json entry holds more JSON than a 32 MiB parse");
        assert_int_equal(opens_of(in), 1);
        container_cache_done(c);
        i = fake_cgroups_lookup(c, ALICE_SCOPE(OTHER1));
        assert_string_equal(i->unnamed, "its containers.json entry holds more JSON than a 32 MiB parse");
        container_cache_done(c);
        i = fake_cgroups_lookup(c, ALICE_SCOPE(OTHER2));
        assert_string_equal(i->unnamed, "its containers.json entry holds more JSON than a 32 MiB parse");
        assert_int_equal(opens_of(in), 0);
        container_cache_free(c);
        close(in);
        close(fd);
        assert_int_equal(fake_tree_remove(root), 0);
        alarm(0);
}

/* A transient store's volatile-containers.json (never memoized: read again for each container)
 * parsed once per sample, as containers.json is. */
static void test_storage_volatile_once(void **state) {
        char root[] = "/tmp/psidiag-test-containers-XXXXXX", path[160];
        ContainerCache *c = NULL;
        const ContainerInfo *i;
        int fd, in;

        alarm(30);
        assert_int_equal(fake_tree_copy(root, fixture("containers/podman")), 0);
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fake_tree_write(root, ALICE_STORAGE "containers.json", "[]"), 0);
        assert_int_equal(fake_tree_write(root, ALICE_STORAGE "volatile-containers.json",
                                         "[{\"id\":\"" OTHER1 "\",\"names\":[\"one\"]},{\"id\":\"" OTHER2
                                         "\",\"names\":[\"two\"]}]"),
                         0);
        snprintf(path, sizeof path, "%s/" ALICE_STORAGE "volatile-containers.json", root);
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        assert_true(in >= 0);
        assert_true(inotify_add_watch(in, path, IN_OPEN) >= 0);
        assert_int_equal(container_cache_new(fd, -1, fake_cgroups_fd, 8, &c), 0);
        i = fake_cgroups_lookup(c, ALICE_SCOPE(OTHER1));
        assert_string_equal(i->name, "one");
        assert_int_equal(opens_of(in), 1);
        i = fake_cgroups_lookup(c, ALICE_SCOPE(OTHER2));
        assert_string_equal(i->name, "two");
        assert_int_equal(opens_of(in), 0);
        container_cache_free(c);
        close(in);
        close(fd);
        assert_int_equal(fake_tree_remove(root), 0);
        alarm(0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_docker),
                cmocka_unit_test(test_containerd),
                cmocka_unit_test(test_containerd_plain),
                cmocka_unit_test(test_containerd_plain_no_meta),
                cmocka_unit_test(test_crio),
                cmocka_unit_test(test_podman),
                cmocka_unit_test(test_graphroot),
                cmocka_unit_test(test_storage_expand),
                cmocka_unit_test(test_rootless_storage_conf),
                cmocka_unit_test(test_hostile_files),
                cmocka_unit_test(test_eviction),
                cmocka_unit_test(test_parsers_hostile),
                cmocka_unit_test(test_storage_budget),
                cmocka_unit_test(test_storage_read_once),
                cmocka_unit_test(test_storage_volatile_once),
        };
        return cmocka_run_group_tests(tests, fake_cgroups_make, fake_cgroups_remove);
}
