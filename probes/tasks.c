/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/cgwalk.h"
#include "probes/tasks.h"

void tid_list_clear(TidList *l) {
        l->n = 0;
}

void tid_list_done(TidList *l) {
        free(l->tids);
        *l = (TidList) {};
}

int tid_list_reserve(TidList *l, size_t n) {
        return array_reserve((void **) &l->tids, &l->cap, n, sizeof *l->tids);
}

int tid_list_push(TidList *l, pid_t tid) {
        if (array_grow((void **) &l->tids, &l->cap, l->n, 256, sizeof *l->tids) < 0)
                return -ENOMEM;
        l->tids[l->n++] = tid;
        return 0;
}

static int parse_pid(const char *s, size_t len, pid_t *ret) {
        uint64_t v;

        if (parse_u64_exact(s, len, &v) < 0 || v == 0 || v > 0x3fffffff) /* PID_MAX_LIMIT is 4M */
                return -EINVAL;
        *ret = (pid_t) v;
        return 0;
}

int tid_list_parse_buf(TidList *l, const char *buf, size_t len) {
        const char *p = buf, *end = buf + len;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                const char *le = eol ? eol : end;
                pid_t tid;
                int r;

                if (le > p) {
                        r = parse_pid(p, (size_t) (le - p), &tid);
                        if (r < 0)
                                return r;
                        r = tid_list_push(l, tid);
                        if (r < 0)
                                return r;
                }
                p = eol ? eol + 1 : end;
        }
        return 0;
}

/* cgroup.threads (or cgroup.procs) can be large; read it in chunks, carrying a partial line over. */
static int read_ids_file(int dirfd, const char *name, TidList *l) {
        _cleanup_close_ int fd = -EBADF;
        char buf[8192];
        size_t carry = 0;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        for (;;) {
                ssize_t k = read(fd, buf + carry, sizeof buf - carry);
                char *last_nl;
                size_t have;
                int r;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                have = carry + (size_t) k;
                if (k == 0) {
                        return tid_list_parse_buf(l, buf, have);
                }
                last_nl = memrchr(buf, '\n', have);
                if (!last_nl) {
                        if (have == sizeof buf)
                                return -EINVAL;
                        carry = have;
                        continue;
                }
                r = tid_list_parse_buf(l, buf, (size_t) (last_nl - buf));
                if (r < 0)
                        return r;
                carry = have - (size_t) (last_nl + 1 - buf);
                memmove(buf, last_nl + 1, carry);
        }
}

typedef struct IdsWalk {
        const char *file; /* cgroup.threads or cgroup.procs */
        TidList *l;
} IdsWalk;

static int visit_ids(CgroupWalkNode *node, void *userdata) {
        IdsWalk *iw = userdata;
        size_t n = iw->l->n;
        int r = read_ids_file(node->fd, iw->file, iw->l);

        /* cgroup.procs of a threaded cgroup cannot be read (EOPNOTSUPP): its processes are listed
         * at its threaded domain, above it. */
        if (r == -EOPNOTSUPP)
                return 0;
        if (r < 0)
                iw->l->n = n; /* a cgroup left out gives none of its ids, not the first few */
        return r;
}

static int list_subtree(int dirfd, const char *file, TidList *l) {
        IdsWalk iw = { .file = file, .l = l };

        return cgroup_walk(dirfd, &(CgroupWalk) { .visit = visit_ids, .userdata = &iw });
}

int cgroup_list_threads(int cgroup_fd, TidList *l) {
        return list_subtree(cgroup_fd, "cgroup.threads", l);
}

bool cgroup_is_threaded(int cgroup_fd) {
        char buf[32];
        ssize_t n = read_file_at(cgroup_fd, "cgroup.type", buf, sizeof buf);

        return n >= 8 && memcmp(buf, "threaded", 8) == 0;
}

int cgroup_list_processes(int cgroup_fd, TidList *l) {
        return list_subtree(cgroup_fd, "cgroup.procs", l);
}

int cgroup_list_own_processes(int cgroup_fd, TidList *l) {
        int r = read_ids_file(cgroup_fd, "cgroup.procs", l);

        /* A threaded cgroup's cgroup.procs cannot be read (EOPNOTSUPP): its processes are its
         * domain's. */
        return r == -EOPNOTSUPP ? 0 : r;
}

static bool is_pid_name(const char *s, pid_t *ret) {
        return parse_pid(s, strlen(s), ret) >= 0;
}

/* Appends every numeric entry of the directory open at fd, read with getdents64(2) on fd itself
 * (no second descriptor, as opendir would take). 0, -ENOMEM or -errno. */
static int push_pid_entries_fd(int fd, TidList *l) {
        _Alignas(8) char buf[8192];

        for (;;) {
                ssize_t n = getdents64(fd, buf, sizeof buf);

                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        return 0;
                for (ssize_t o = 0; o < n;) {
                        const struct dirent64 *de = (const struct dirent64 *) (buf + o);
                        pid_t id;

                        if (de->d_reclen == 0 || de->d_reclen > n - o)
                                return -EIO;
                        if (is_pid_name(de->d_name, &id) && tid_list_push(l, id) < 0)
                                return -ENOMEM;
                        o += de->d_reclen;
                }
        }
}

static int open_task_dir(int proc_fd, pid_t pid) {
        char path[32];
        int fd;

        snprintf(path, sizeof path, "%d/task", (int) pid);
        fd = openat(proc_fd, path, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        return fd;
}

int proc_open_process_threads(int proc_fd, pid_t pid, TidList *l, int *ret_task_fd) {
        int fd, r;

        fd = open_task_dir(proc_fd, pid);
        if (fd < 0)
                return fd;
        r = push_pid_entries_fd(fd, l);
        if (r < 0 || !ret_task_fd)
                safe_close(fd);
        else
                *ret_task_fd = fd;
        return r == -ENOENT ? -ESRCH : r;
}

int proc_open_process_task_dir(int proc_fd, pid_t pid) {
        return open_task_dir(proc_fd, pid);
}

int proc_task_nth(int task_fd, size_t k, pid_t *ret_tid) {
        /* Room for exactly one entry: 19 bytes of header and a tid of up to 10 digits, aligned to
         * 8, take at most 32; two entries take at least 48. */
        union {
                struct dirent64 de;
                char raw[sizeof(struct dirent64)];
        } u;
        ssize_t n;
        pid_t id;

        if (k > (size_t) INT_MAX - 2)
                return -ERANGE;
        if (lseek(task_fd, (off_t) k + 2, SEEK_SET) < 0)
                return negative_errno();
        n = getdents64(task_fd, u.raw, 40);
        if (n < 0)
                return errno == ENOENT ? -ESRCH : negative_errno(); /* the process ended */
        if (n == 0)
                return -ESRCH; /* past the last thread: the process has fewer now */
        if ((size_t) n <= offsetof(struct dirent64, d_name) || u.de.d_reclen > n ||
            !memchr(u.de.d_name, '\0', (size_t) n - offsetof(struct dirent64, d_name)) ||
            !is_pid_name(u.de.d_name, &id))
                return -EIO;
        *ret_tid = id;
        return 0;
}

int proc_list_process_threads(int proc_fd, pid_t pid, TidList *l) {
        return proc_open_process_threads(proc_fd, pid, l, NULL);
}

int proc_count_threads(int proc_fd, pid_t pid) {
        char path[32];
        struct stat st;
        DIR *d;
        int n = 0, r;

        snprintf(path, sizeof path, "%d/task", (int) pid);
        if (fstatat(proc_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        if (st.st_nlink >= 2)
                return (int) MIN(st.st_nlink - 2, (nlink_t) INT_MAX);
        r = opendir_at(proc_fd, path, &d);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

int proc_list_processes(int proc_fd, TidList *l) {
        int fd = openat(proc_fd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        int r;

        if (fd < 0)
                return negative_errno();
        r = push_pid_entries_fd(fd, l);
        safe_close(fd);
        return r;
}

int proc_list_threads(int proc_fd, TidList *l) {
        DIR *d;
        struct dirent *de;
        int r;

        r = opendir_at(proc_fd, ".", &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                pid_t pid;

                if (!is_pid_name(de->d_name, &pid))
                        continue;
                /* One that exited since readdir (or whose listing failed) keeps what was listed. */
                r = proc_list_process_threads(proc_fd, pid, l);
                if (r == -ENOMEM)
                        break;
                r = 0;
        }
        closedir(d);
        return r;
}
