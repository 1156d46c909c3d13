/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent/base/macro.h"
#include "triggers/psi.h"

int psi_trigger_open(int dirfd, const char *name, const PsiTriggerSpec *spec, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        char buf[64];
        ssize_t k;
        int n;

        n = psi_trigger_spec_format_kernel(spec, buf, sizeof buf);
        if (n < 0)
                return n;

        fd = openat(dirfd, name, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        /* strlen + 1: the NUL is part of what we write (fact 3 in DESIGN.md). */
        k = write(fd, buf, (size_t) n + 1);
        if (k < 0)
                return negative_errno();
        if (k != n + 1)
                return -EIO;

        *ret_fd = TAKE_FD(fd);
        return 0;
}

int psi_watch_new(int fd, uint32_t fire_mask, int *ret_epoll_fd) {
        _cleanup_close_ int efd = -EBADF;
        struct epoll_event ev = {
                .events = fire_mask | EPOLLERR | EPOLLHUP,
                .data.fd = fd,
        };

        efd = epoll_create1(EPOLL_CLOEXEC);
        if (efd < 0)
                return negative_errno();
        if (epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return negative_errno();
        *ret_epoll_fd = TAKE_FD(efd);
        return 0;
}

int psi_watch_check(int epoll_fd) {
        struct epoll_event ev;
        int n;

        do
                n = epoll_wait(epoll_fd, &ev, 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if (n > 0 && (ev.events & (EPOLLERR | EPOLLHUP)))
                return PSI_WATCH_GONE;
        return PSI_WATCH_FIRED;
}
