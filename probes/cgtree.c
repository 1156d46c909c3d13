/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "probes/cgtree.h"
#include "probes/pressure.h"

#define CGROUP_TREE_MAX_DEPTH 64
#define CGROUP_PATH_MAX 4096

void cgroup_totals_clear(CgroupTotals *t) {
        t->n = 0;
        t->names_len = 0;
}

void cgroup_totals_done(CgroupTotals *t) {
        free(t->items);
        free(t->names);
        *t = (CgroupTotals) {};
}

static int push(CgroupTotals *t, const char *path, size_t len, const PressureStats *ps) {
        if (array_grow((void **) &t->items, &t->cap, t->n, 64, sizeof *t->items) < 0)
                return -ENOMEM;
        if (array_reserve((void **) &t->names, &t->names_cap, t->names_len + len + 1 + 1024, 1) < 0)
                return -ENOMEM;
        CgroupTotal *c = &t->items[t->n++];
        *c = (CgroupTotal) { .path = t->names_len };
        for (int s = 0; s < _PSI_STALL_MAX; s++) {
                c->has[s] = ps->has[s];
                c->total_us[s] = ps->line[s].total_us;
        }
        memcpy(t->names + t->names_len, path, len);
        t->names[t->names_len + len] = '\0';
        t->names_len += len + 1;
        return 0;
}

static int walk(int dirfd, char *path, size_t len, unsigned depth, PsiResource resource, CgroupTotals *t) {
        DIR *d;
        struct dirent *de;
        int r;

        if (depth >= CGROUP_TREE_MAX_DEPTH)
                return 0;
        r = opendir_at(dirfd, ".", &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name), sub;
                PressureStats ps;
                int child;

                if (de->d_type != DT_DIR || de->d_name[0] == '.' || len + n + 2 > CGROUP_PATH_MAX)
                        continue;
                child = openat(dirfd, de->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        continue; /* removed since readdir */
                sub = len;
                if (sub)
                        path[sub++] = '/';
                memcpy(path + sub, de->d_name, n + 1);
                sub += n;
                if (pressure_read_at(child, pressure_file_name(resource, true), &ps) >= 0)
                        r = push(t, path, sub, &ps);
                if (r >= 0)
                        r = walk(child, path, sub, depth + 1, resource, t);
                safe_close(child);
                path[len] = '\0';
                if (r == -ENOMEM)
                        break;
                r = 0; /* a child that vanished mid-walk is not an error */
        }
        closedir(d);
        return r;
}

int cgroup_totals_read(int dirfd, PsiResource resource, CgroupTotals *t) {
        char path[CGROUP_PATH_MAX] = "";

        return walk(dirfd, path, 0, 0, resource, t);
}
