/* SPDX-License-Identifier: MIT */
/* Cgroup paths of systemd units, Kubernetes pods (both cgroup drivers, three QoS classes) and
 * containers of three runtimes, decoded. */
#include <string.h>

#include "containers/cgmeta.h"
#include "tests/unit/test-util.h"

#define UID "0f5e4c3a-1b2d-4e6f-8a9b-0c1d2e3f4a5b"
#define UIDU "0f5e4c3a_1b2d_4e6f_8a9b_0c1d2e3f4a5b"
#define CID "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b"

typedef struct Case {
        const char *path;
        const char *unit, *slice, *pod, *qos, *runtime, *id;
} Case;

static const Case cases[] = {
        { "/system.slice/nginx.service", "nginx.service", "system.slice", "", NULL, "", "" },
        { "/user.slice/user-1000.slice/session-3.scope", "session-3.scope", "user-1000.slice", "", NULL, "", "" },
        { "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU ".slice/cri-containerd-" CID ".scope",
          "cri-containerd-" CID ".scope", "kubepods-burstable-pod" UIDU ".slice", UID, "burstable", "containerd", CID },
        { "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU ".slice/crio-" CID ".scope",
          "crio-" CID ".scope", "kubepods-besteffort-pod" UIDU ".slice", UID, "besteffort", "crio", CID },
        { "/kubepods.slice/kubepods-pod" UIDU ".slice/docker-" CID ".scope", "docker-" CID ".scope",
          "kubepods-pod" UIDU ".slice", UID, "guaranteed", "docker", CID },
        { "/kubepods.slice/kubepods-pod" UIDU ".slice/crio-conmon-" CID ".scope", "crio-conmon-" CID ".scope",
          "kubepods-pod" UIDU ".slice", UID, "guaranteed", "crio", CID },
        { "/kubepods/burstable/pod" UID "/" CID, "", "", UID, "burstable", "", CID },
        { "/kubepods/besteffort/pod" UID "/" CID, "", "", UID, "besteffort", "", CID },
        { "/kubepods/pod" UID "/" CID, "", "", UID, "guaranteed", "", CID },
        { "/kubepods/pod" UID, "", "", UID, "guaranteed", "", "" },
        { "/kubepods.slice/kubepods-burstable.slice", "", "kubepods-burstable.slice", "", "burstable", "", "" },
        { "/system.slice/docker-" CID ".scope", "docker-" CID ".scope", "system.slice", "", NULL, "docker", CID },
        { "/docker/" CID, "", "", "", NULL, "docker", CID },
        /* podman 4.3.1 on Debian 12 (cgroupfs driver, as /proc/<pid>/cgroup showed it), and its
         * systemd driver, rootful and rootless */
        { "/libpod_parent/libpod-" CID, "", "", "", NULL, "podman", CID },
        { "/machine.slice/libpod-" CID ".scope", "libpod-" CID ".scope", "machine.slice", "", NULL, "podman", CID },
        { "/machine.slice/libpod-conmon-" CID ".scope", "libpod-conmon-" CID ".scope", "machine.slice", "", NULL,
          "podman", CID },
        { "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope", "libpod-" CID ".scope",
          "user.slice", "", NULL, "podman", CID },
};

static void test_cases(void **state) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const Case *c = &cases[i];
                CgroupMeta m;

                assert_true(cgroup_meta_parse(c->path, &m));
                assert_string_equal(m.unit, c->unit);
                assert_string_equal(m.slice, c->slice);
                assert_string_equal(m.pod_uid, c->pod);
                if (c->qos)
                        assert_string_equal(cgroup_qos_to_string(m.qos), c->qos);
                else
                        assert_null(cgroup_qos_to_string(m.qos));
                assert_string_equal(m.runtime, c->runtime);
                assert_string_equal(m.container_id, c->id);
        }
}

static void test_user_uid(void **state) {
        CgroupMeta m;

        assert_true(
                cgroup_meta_parse("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID ".scope", &m));
        assert_int_equal(m.user_uid, 1000);
        assert_true(cgroup_meta_parse("/machine.slice/libpod-" CID ".scope", &m));
        assert_int_equal(m.user_uid, -1);
        assert_true(cgroup_meta_parse("/user.slice/user@99999999999.service/x.scope", &m));
        assert_int_equal(m.user_uid, -1);
        assert_true(cgroup_meta_parse("/user.slice/user@1x.service", &m));
        assert_int_equal(m.user_uid, -1);
        /* podman's under another --cgroup-parent; not podman's: an id that is not hex */
        assert_true(cgroup_meta_parse("/other/libpod-" CID, &m));
        assert_string_equal(m.runtime, "podman");
        assert_true(cgroup_meta_parse("/libpod_parent/libpod-zz", &m) == false);
}

static void test_nothing_to_say(void **state) {
        CgroupMeta m;

        assert_false(cgroup_meta_parse("/", &m));
        assert_false(cgroup_meta_parse("/psidiag-it-agent-42/worker", &m));
        assert_false(cgroup_meta_parse(NULL, &m));
        /* Look-alikes: not a pod uid, not a hex id, not under kubepods. */
        assert_false(cgroup_meta_parse("/pod" UID "/" CID, &m));
        assert_true(cgroup_meta_parse("/kubepods/burstable/podnot-a-uid/" CID, &m));
        assert_string_equal(m.pod_uid, "");
        assert_string_equal(m.container_id, "");
        assert_true(cgroup_meta_parse("/system.slice/cri-containerd-XYZ.scope", &m));
        assert_string_equal(m.runtime, "");
        assert_string_equal(m.unit, "cri-containerd-XYZ.scope");
}

static void test_display_path(void **state) {
        char buf[16];

        assert_int_equal(cgroup_display_path("a/b", "c", buf, sizeof buf), 6);
        assert_string_equal(buf, "/a/b/c");
        assert_int_equal(cgroup_display_path("/a", "", buf, sizeof buf), 2);
        assert_string_equal(buf, "/a");
        assert_int_equal(cgroup_display_path("", "c/d", buf, sizeof buf), 4);
        assert_string_equal(buf, "/c/d");
        assert_int_equal(cgroup_display_path(NULL, "/c", buf, sizeof buf), 2);
        assert_string_equal(buf, "/c");
        assert_int_equal(cgroup_display_path(NULL, NULL, buf, sizeof buf), 1);
        assert_string_equal(buf, "/");
        /* Cut, and said so. */
        assert_int_equal(cgroup_display_path("system.slice", "x.service", buf, sizeof buf), 23);
        assert_string_equal(buf, "/system.slice/x");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_user_uid),
                cmocka_unit_test(test_nothing_to_say),
                cmocka_unit_test(test_display_path),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
