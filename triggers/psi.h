/* SPDX-License-Identifier: MIT */
/* Arming one PSI trigger on one pressure file, and the private epoll set that turns the kernel's
 * EPOLLPRI (and EPOLLERR when a cgroup is removed) into callbacks. Knows nothing about tasks or
 * the event loop above it; never logs above debug. */
#pragma once

#include <stdint.h>

#include "triggers/trigger.h"

/* Opens dirfd/name read-write and writes the trigger with its terminating NUL (the kernel
 * overwrites the last byte of the buffer with NUL: psi.c psi_write()). One trigger per fd.
 * Returns 0 and the fd, or -errno: ENOENT (no such cgroup/file), ENODEV (cgroup being removed),
 * EOPNOTSUPP (PSI disabled, e.g. psi=0 or cgroup.pressure=0), EINVAL (spec refused, e.g. a window
 * that is not a multiple of 2 s without CAP_SYS_RESOURCE), EBUSY (fd already has a trigger). */
int psi_trigger_open(int dirfd, const char *name, const PsiTriggerSpec *spec, int *ret_fd);

typedef enum PsiWatchEvent {
        PSI_WATCH_FIRED, /* the trigger fired */
        PSI_WATCH_GONE,  /* EPOLLERR/EPOLLHUP: the watched cgroup was removed; close both fds */
} PsiWatchEvent;

/* libev cannot watch POLLPRI, and a PSI fd always polls readable, so each trigger fd goes into a
 * private epoll instance registered for EPOLLPRI, and the loop watches that epoll fd for EV_READ.
 *
 * One instance per trigger, not one shared set: checking whether an epoll fd is readable polls the
 * items on its ready list, and psi_trigger_poll() clears the trigger's event flag when it is polled
 * (kernel/sched/psi.c: cmpxchg(&t->event, 1, 0)). The loop's readiness check therefore consumes
 * the EPOLLPRI before any epoll_wait() on the inner set can report it: with a shared set we would
 * know that something fired but not what. EPOLLERR of a removed cgroup is a state, not an event,
 * and survives the check.
 *
 * Creates the instance with fd added for fire_mask (EPOLLPRI for triggers; tests drive it with
 * EPOLLIN on a pipe) plus EPOLLERR|EPOLLHUP. Returns 0 and the epoll fd, or -errno. */
int psi_watch_new(int fd, uint32_t fire_mask, int *ret_epoll_fd);

/* Called when epoll_fd polled readable. Returns PSI_WATCH_GONE when the member reports
 * EPOLLERR/EPOLLHUP (checked first: a removed cgroup reports ERR and PRI together, forever),
 * PSI_WATCH_FIRED otherwise, including when the wait finds nothing because the loop's readiness
 * check already consumed the EPOLLPRI; -errno when epoll_wait fails. Never blocks. */
int psi_watch_check(int epoll_fd);
