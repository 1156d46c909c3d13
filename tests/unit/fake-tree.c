/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/unit/fake-tree.h"

int fake_tree_make(char *template, int first, int n, FakeTreeState state) {
        char path[512];
        FILE *f;

        if (!mkdtemp(template))
                return -errno;
        snprintf(path, sizeof path, "%s/proc", template);
        if (mkdir(path, 0755) < 0)
                return -errno;
        snprintf(path, sizeof path, "%s/cgroup.threads", template);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        for (int tid = first; tid < first + n; tid++)
                fprintf(f, "%d\n", tid);
        if (fclose(f) != 0)
                return -EIO;
        for (int tid = first; tid < first + n; tid++) {
                snprintf(path, sizeof path, "%s/proc/%d", template, tid);
                if (mkdir(path, 0755) < 0)
                        return -errno;
                snprintf(path, sizeof path, "%s/proc/%d/task", template, tid);
                if (mkdir(path, 0755) < 0)
                        return -errno;
                snprintf(path, sizeof path, "%s/proc/%d/task/%d", template, tid, tid);
                if (mkdir(path, 0755) < 0)
                        return -errno;
                snprintf(path, sizeof path, "%s/proc/%d/task/%d/stat", template, tid, tid);
                f = fopen(path, "we");
                if (!f)
                        return -errno;
                fprintf(f, "%d (t) %c 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100\n", tid, state(tid));
                if (fclose(f) != 0)
                        return -EIO;
        }
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

int fake_tree_remove(const char *dir) {
        return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
