/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/cgpath.h"

bool cgpath_covers_range(const char *ancestor, size_t ancestor_len, const char *cgroup, size_t cgroup_len) {
        if (ancestor_len == 0)
                return true;
        if (cgroup_len < ancestor_len || memcmp(ancestor, cgroup, ancestor_len) != 0)
                return false;
        return cgroup_len == ancestor_len || ancestor[ancestor_len - 1] == '/' || cgroup[ancestor_len] == '/';
}

bool cgpath_covers(const char *ancestor, const char *cgroup) {
        if (!ancestor || ancestor[0] == '\0')
                return true;
        return cgroup && cgpath_covers_range(ancestor, strlen(ancestor), cgroup, strlen(cgroup));
}

bool cgpath_covers_untrimmed(const char *ancestor, const char *cgroup) {
        size_t n;

        if (!ancestor || !cgroup)
                return false;
        ancestor = cgpath_trim(ancestor);
        cgroup = cgpath_trim(cgroup);
        n = strlen(ancestor);
        while (n > 0 && ancestor[n - 1] == '/')
                n--;
        return cgpath_covers_range(ancestor, n, cgroup, strlen(cgroup));
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

bool cgpath_next(const char **p, const char **ret_seg, size_t *ret_len) {
        const char *s = *p;

        while (*s == '/')
                s++;
        if (!*s) {
                *p = s;
                return false;
        }
        *ret_seg = s;
        *ret_len = strcspn(s, "/");
        *p = s + *ret_len;
        return true;
}
