/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/cgpath.h"

bool cgpath_covers(const char *ancestor, const char *cgroup) {
        size_t n;

        if (!ancestor || ancestor[0] == '\0')
                return true;
        if (!cgroup)
                return false;
        n = strlen(ancestor);
        return strncmp(ancestor, cgroup, n) == 0 && (cgroup[n] == '\0' || cgroup[n] == '/');
}

bool cgpath_parent(char *path) {
        char *slash;

        if (!path[0])
                return false;
        slash = strrchr(path, '/');
        if (slash)
                *slash = '\0';
        else
                path[0] = '\0';
        return true;
}

const char *cgpath_trim(const char *path) {
        while (*path == '/')
                path++;
        return path;
}

ssize_t cgpath_deepest(const char *const *ancestors, size_t n, const char *cgroup) {
        ssize_t best = -1;

        for (size_t i = 0; i < n; i++) {
                const char *p = ancestors[i];
                if (!cgpath_covers(p, cgroup))
                        continue;
                if (best < 0 || (p && (!ancestors[best] || strlen(p) > strlen(ancestors[best]))))
                        best = (ssize_t) i;
        }
        return best;
}
