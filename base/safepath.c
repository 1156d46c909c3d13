/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/safepath.h"

#define SYMLINKS_MAX 40 /* as the kernel's MAXSYMLINKS */

/* The components still to walk, as one string that a symlink's target is spliced in front of. */
typedef struct Walk {
        char *rest;
        int fd;
        unsigned symlinks;
} Walk;

static int splice_target(Walk *w, const char *target) {
        char *n;

        if (asprintf(&n, "%s/%s", target, w->rest) < 0)
                return -ENOMEM;
        free(w->rest);
        w->rest = n;
        return 0;
}

static int walk_symlink(Walk *w, const char *name, const struct stat *st, char *why, size_t why_size) {
        struct stat dir_st;
        char target[PATH_MAX];
        ssize_t n;
        if (++w->symlinks > SYMLINKS_MAX) {
                snprintf(why, why_size, "too many symlinks");
                return -ELOOP;
        }
        if (fstat(w->fd, &dir_st) < 0)
                return negative_errno();
        if (safepath_dir_untrusted(&dir_st) && st->st_uid != geteuid() && st->st_uid != dir_st.st_uid) {
                snprintf(why, why_size,
                         "refusing to follow symlink \"%s\" owned by uid %u in a world-writable directory", name,
                         (unsigned) st->st_uid);
                return -ELOOP;
        }
        n = readlinkat(w->fd, name, target, sizeof target - 1);
        if (n < 0)
                return negative_errno();
        target[n] = '\0';
        if (target[0] == '/') {
                int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (root < 0)
                        return negative_errno();
                safe_close(w->fd);
                w->fd = root;
        }
        return splice_target(w, target);
}

int safepath_open_parent(const char *path, const char **ret_base, char *why, size_t why_size) {
        Walk w = { .fd = -EBADF };
        const char *slash = strrchr(path, '/');
        const char *base = slash ? slash + 1 : path;
        int r;

        snprintf(why, why_size, "cannot resolve the directory");
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
                snprintf(why, why_size, "the path does not name a file");
                return -EINVAL;
        }
        w.rest = slash ? strndup(path, (size_t) (slash - path)) : strdup("");
        if (!w.rest)
                return -ENOMEM;
        w.fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w.fd < 0) {
                r = negative_errno();
                goto finish;
        }
        for (;;) {
                char *p = w.rest, *end, *name;
                struct stat st;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                end = strchrnul(p, '/');
                name = strndup(p, (size_t) (end - p));
                if (!name) {
                        r = -ENOMEM;
                        goto finish;
                }
                memmove(w.rest, end, strlen(end) + 1);
                if (strcmp(name, ".") == 0) {
                        free(name);
                        continue;
                }
                if (fstatat(w.fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = negative_errno();
                        snprintf(why, why_size, "cannot look up \"%s\"", name);
                        free(name);
                        goto finish;
                }
                if (S_ISLNK(st.st_mode)) {
                        r = walk_symlink(&w, name, &st, why, why_size);
                        free(name);
                        if (r < 0)
                                goto finish;
                        continue;
                }
                /* O_NOFOLLOW: a symlink swapped in after the fstatat fails with ENOTDIR here. */
                int fd = openat(w.fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        r = negative_errno();
                        snprintf(why, why_size, "cannot open directory \"%s\"", name);
                        free(name);
                        goto finish;
                }
                free(name);
                safe_close(w.fd);
                w.fd = fd;
        }
        *ret_base = base;
        r = TAKE_FD(w.fd);
finish:
        safe_close(w.fd);
        free(w.rest);
        return r;
}
