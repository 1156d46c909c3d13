/* SPDX-License-Identifier: MIT */
/* What a cgroup's name claims, checked where its runtime makes it (containers/ctrverify.h): the bytes
 * up to the first NUL as a cgroup path, anyone's to choose below a delegated subtree. Its
 * container's own cgroup is a prefix of the path that ends a component holding the id; every
 * verdict of the place is 0 or -EPERM with a reason, NUL-terminated in its buffer; no runtime but
 * podman is ever placed below a user's systemd instance. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cgpath.h"
#include "containers/cgmeta.h"
#include "containers/ctrverify.h"
#include "tests/fuzz/fuzz.h"

static void place(const char *path, const char *runtime, int64_t uid) {
        char why[CTRVERIFY_REASON_MAX];
        int r;

        memset(why, 'x', sizeof why);
        r = ctrverify_place(path, runtime, uid, why, sizeof why);
        if (r != 0 && (r != -EPERM || strnlen(why, sizeof why) == sizeof why || why[0] == '\0'))
                abort();
        /* below a user's systemd instance, any runtime's but podman's: never placed */
        if (r == 0 && uid >= 0 && strcmp(runtime, "podman") != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const runtimes[] = { "docker", "containerd", "crio", "podman", "" };
        char *path = malloc(size + 1), own[512];
        CgroupMeta m;

        if (!path)
                return 0;
        memcpy(path, data, size);
        path[size] = '\0';
        if (cgroup_meta_parse(path, &m) && m.container_id[0] &&
            ctrverify_own_cgroup(path, m.container_id, own, sizeof own) == 0) {
                const char *trimmed = cgpath_trim(path);
                size_t n = strlen(own);

                if (own[0] != '/' || strncmp(own + 1, trimmed, n - 1) != 0 || !strstr(own, m.container_id) ||
                    (trimmed[n - 1] != '\0' && trimmed[n - 1] != '/'))
                        abort();
                for (size_t k = 0; k < sizeof runtimes / sizeof runtimes[0]; k++) {
                        place(own, runtimes[k], m.user_uid);
                        place(own, runtimes[k], 1000);
                }
        }
        free(path);
        return 0;
}
