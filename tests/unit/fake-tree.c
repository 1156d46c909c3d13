/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/unit/fake-tree.h"

/* DIR/proc/<dir_pid>/task/<tid>/stat with the state letter state(tid). 0 or -errno. */
static int write_stat(const char *template, int dir_pid, int tid, FakeTreeState state) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof path, "%s/proc/%d/task/%d/stat", template, dir_pid, tid);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "%d (t) %c 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100\n", tid, state(tid));
        return fclose(f) != 0 ? -EIO : 0;
}

int fake_tree_make(char *template, int first, int n, int per_process, FakeTreeState state) {
        char path[512];
        FILE *f;
        int r;

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
        snprintf(path, sizeof path, "%s/cgroup.procs", template);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        for (int tid = first; tid < first + n; tid += per_process)
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
                r = write_stat(template, tid, tid, state);
                if (r < 0)
                        return r;
        }
        /* The other threads of each process under its leader's task/. */
        for (int tid = first; tid < first + n; tid++) {
                int tgid = first + (tid - first) / per_process * per_process;

                if (tid == tgid)
                        continue;
                snprintf(path, sizeof path, "%s/proc/%d/task/%d", template, tgid, tid);
                if (mkdir(path, 0755) < 0)
                        return -errno;
                r = write_stat(template, tgid, tid, state);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

int fake_tree_remove(const char *dir) {
        return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}
