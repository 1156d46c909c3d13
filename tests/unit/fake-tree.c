/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int fake_tree_copy(char *template, const char *from) {
        char cmd[1024];

        if (!mkdtemp(template))
                return -errno;
        snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s'", from, template);
        return system(cmd) == 0 ? 0 : -EIO;
}

int fake_tree_mkdirs(const char *dir, const char *path) {
        char name[256];
        int fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

        /* One component at a time beneath an fd, so a path longer than PATH_MAX can be made. */
        while (fd >= 0 && *path) {
                size_t n = strcspn(path, "/");
                int child;

                if (n >= sizeof name) {
                        close(fd);
                        return -ENAMETOOLONG;
                }
                memcpy(name, path, n);
                name[n] = '\0';
                path += n + (path[n] == '/');
                if (n == 0)
                        continue;
                if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
                        close(fd);
                        return -errno;
                }
                child = openat(fd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
                close(fd);
                fd = child;
        }
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

int fake_tree_write(const char *dir, const char *path, const char *s) {
        return fake_tree_write_bytes(dir, path, s, strlen(s));
}

int fake_tree_write_bytes(const char *dir, const char *path, const void *buf, size_t len) {
        char full[8192];
        const char *slash = strrchr(path, '/');
        FILE *f;

        if (slash) {
                char parent[8192];
                int r;

                snprintf(parent, sizeof parent, "%.*s", (int) (slash - path), path);
                r = fake_tree_mkdirs(dir, parent);
                if (r < 0)
                        return r;
        }
        snprintf(full, sizeof full, "%s/%s", dir, path);
        f = fopen(full, "we");
        if (!f)
                return -errno;
        if (fwrite(buf, 1, len, f) != len) {
                fclose(f);
                return -EIO;
        }
        return fclose(f) != 0 ? -EIO : 0;
}

/* Empties the directory open at fd (taken: closed here) beneath fds, so paths longer than PATH_MAX
 * go too. 0 or -1. */
static int remove_below(int fd) {
        DIR *d = fdopendir(fd);
        struct dirent *de;
        int r = 0;

        if (!d) {
                close(fd);
                return -1;
        }
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (de->d_type == DT_DIR) {
                        int child = openat(dirfd(d), de->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                        if (child < 0 || remove_below(child) < 0)
                                r = -1;
                        if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                r = -1;
                } else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        r = -1;
        }
        closedir(d);
        return r;
}

int fake_tree_remove(const char *dir) {
        int fd = open(dir, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 || remove_below(fd) < 0)
                return -1;
        return rmdir(dir) < 0 ? -1 : 0;
}

int fake_tree_cgroup(const char *dir, const char *path) {
        char sub[4096];
        const char *p = path;
        long uid = -1;
        int r;

        while (*p == '/')
                p++;
        for (size_t at = 0;; at++) {
                size_t n = strcspn(p + at, "/");
                unsigned v;
                int k;

                if ((n == 1 && p[at] == '.') || (n == 2 && p[at] == '.' && p[at + 1] == '.'))
                        return -EINVAL; /* never a chmod of what lies above dir */
                if (snprintf(sub, sizeof sub, "%.*s", (int) (at + n), p) >= (int) sizeof sub)
                        return -ENAMETOOLONG;
                r = fake_tree_mkdirs(dir, sub);
                if (r < 0)
                        return r;
                /* systemd makes user@<uid>.service the user's (Delegate=yes); all below is theirs */
                if (uid < 0 && sscanf(p + at, "user@%u.service%n", &v, &k) == 1 && (size_t) k == n)
                        uid = v;
                if (snprintf(sub, sizeof sub, "%s/%.*s", dir, (int) (at + n), p) >= (int) sizeof sub)
                        return -ENAMETOOLONG;
                if (chmod(sub, 0755) < 0 || (uid >= 0 && chown(sub, (uid_t) uid, (gid_t) uid) < 0))
                        return -errno;
                at += n;
                if (p[at] == '\0')
                        return 0;
        }
}
