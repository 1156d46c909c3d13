/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/memcg.h"

const char *memcg_counter_kind_to_string(MemcgCounterKind k) {
        return k == MEMCG_COUNTER_EVENTS ? "memory.events" : "memory.oom_control";
}

int memcg_parse_oom_kill(const char *buf, size_t len, uint64_t *ret) {
        bool has = false;
        uint64_t v;

        parse_keyed(buf, len, UNPARSED_MEMORY_EVENTS, &(KeyedWant) { "oom_kill", &v, &has }, 1);
        if (!has)
                return -ENOENT;
        *ret = v;
        return 0;
}

int memcg_read_oom_kill(int fd, uint64_t *ret) {
        char buf[1024];
        ssize_t n;

        do
                n = pread(fd, buf, sizeof buf, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return memcg_parse_oom_kill(buf, (size_t) n, ret);
}

static int open_v1(const Sysroot *s, const char *path, int *ret_fd, int *ret_event_fd) {
        _cleanup_close_ int dir_fd = -EBADF, ctl_fd = -EBADF, fd = -EBADF, efd = -EBADF;
        char line[64];
        int r, n;

        r = sysroot_open_v1(s, CGROUP_V1_MEMORY, path, &dir_fd);
        if (r < 0)
                return r;
        fd = openat(dir_fd, "memory.oom_control", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ctl_fd = openat(dir_fd, "cgroup.event_control", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (ctl_fd < 0)
                return -errno;
        efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (efd < 0)
                return -errno;
        /* "<event fd> <memory.oom_control fd>": the kernel signals efd at every OOM of the memcg. */
        n = snprintf(line, sizeof line, "%d %d", efd, fd);
        ssize_t w = write(ctl_fd, line, (size_t) n);
        if (w < 0)
                return -errno;
        if (w != n)
                return -EIO;
        *ret_fd = TAKE_FD(fd);
        *ret_event_fd = TAKE_FD(efd);
        return 0;
}

int memcg_open_oom_counter(const Sysroot *s, const char *path, MemcgCounterKind *ret_kind, int *ret_fd,
                           int *ret_event_fd) {
        _cleanup_close_ int dir_fd = -EBADF;
        int fd, r;

        r = sysroot_open_cgroup(s, path, &dir_fd);
        if (r >= 0) {
                fd = openat(dir_fd, "memory.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0) {
                        *ret_kind = MEMCG_COUNTER_EVENTS;
                        *ret_fd = fd;
                        *ret_event_fd = -EBADF;
                        return 0;
                }
        }
        r = open_v1(s, path, ret_fd, ret_event_fd);
        if (r < 0)
                return r;
        *ret_kind = MEMCG_COUNTER_OOM_CONTROL;
        return 0;
}

/* A file of one decimal (or "max") and a newline. */
static bool read_number(int cgroup_fd, const char *name, uint64_t *ret) {
        char buf[64];
        ssize_t n = read_file_at(cgroup_fd, name, buf, sizeof buf);

        while (n > 0 && buf[n - 1] == '\n')
                n--;
        return n > 0 && parse_u64_exact(buf, (size_t) n, ret) >= 0;
}

void memcg_read_state(int cgroup_fd, MemcgState *ret) {
        char buf[1024];
        ssize_t n;

        *ret = (MemcgState) {};
        if (cgroup_fd < 0)
                return;
        ret->has_current = read_number(cgroup_fd, "memory.current", &ret->current_bytes);
        ret->has_max = read_number(cgroup_fd, "memory.max", &ret->max_bytes);
        ret->has_swap_current = read_number(cgroup_fd, "memory.swap.current", &ret->swap_current_bytes);
        n = read_file_at(cgroup_fd, "memory.events", buf, sizeof buf);
        ret->has_oom_kill = n > 0 && memcg_parse_oom_kill(buf, (size_t) n, &ret->oom_kill) >= 0;
}
