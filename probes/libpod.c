/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/boltdb.h"
#include "probes/ctrmeta.h"
#include "probes/libpod.h"

/* libpod's ids are 64 hex digits (its stringid.GenerateRandomID). */
static bool is_pod_id(const char *s, int len) {
        if (len != 64)
                return false;
        for (int i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static int fail(char *reason, int r, const char *what, const char *why) {
        if (reason)
                snprintf(reason, LIBPOD_REASON_MAX, "%s: %s", what, why && why[0] ? why : strerror(-r));
        return r;
}

int libpod_pod_name(int root_fd, const char *storage_dir, int64_t owner, const char *id, char *name, size_t size,
                    char *reason) {
        char path[PATH_MAX], pod[80], who[128], why[BOLTDB_REASON_MAX];
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (reason)
                reason[0] = '\0';
        if (size == 0)
                return -EINVAL;
        name[0] = '\0';
        if (snprintf(path, sizeof path, "%s/libpod/bolt_state.db", storage_dir) >= (int) sizeof path)
                return fail(reason, -ENAMETOOLONG, "bolt_state.db", NULL);
        /* one open, without following a symlink: the file whose owner is checked is the one read */
        fd = boltdb_open_at(root_fd, path, &st, why);
        if (fd < 0)
                return fail(reason, fd, "bolt_state.db", why);
        if (!ctrmeta_file_trusted(&st, owner))
                return fail(reason, -EPERM, "bolt_state.db", "not a regular file of its owner");

        /* all-ctrs maps every container's id to its name: the container is in this database */
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "all-ctrs", id }, 2, who, sizeof who, why);
        if (r < 0)
                return fail(reason, r, "all-ctrs", why);
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "ctr", id, "pod-id" }, 3, pod, sizeof pod, why);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return fail(reason, r, "ctr pod-id", why);
        if (!is_pod_id(pod, r))
                return fail(reason, -EBADMSG, "ctr pod-id", "not a pod id");
        /* id-registry maps every container's and pod's id to its name (AddPod puts it there) */
        r = boltdb_get_fd(fd, &st, (const char *const[]) { "id-registry", pod }, 2, name, size, why);
        if (r < 0) {
                name[0] = '\0';
                return fail(reason, r, "id-registry", why);
        }
        if (r == 0)
                return fail(reason, -EBADMSG, "id-registry", "an empty pod name");
        return 1;
}
