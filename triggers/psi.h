/* SPDX-License-Identifier: MIT */
/* Arming one PSI trigger on one pressure file, and the private epoll set that turns the kernel's
 * EPOLLPRI (and EPOLLERR when a cgroup is removed) into callbacks. Knows nothing about tasks or
 * the event loop above it; never logs above debug. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "triggers/trigger.h"

/* Opens dirfd/name read-write and writes the trigger with its terminating NUL (the kernel
 * overwrites the last byte of the buffer with NUL: psi.c psi_write()). One trigger per fd.
 * Returns 0 and the fd, or -errno: ENOENT (no such cgroup/file), ENODEV (cgroup being removed),
 * EOPNOTSUPP (PSI disabled, e.g. psi=0 or cgroup.pressure=0), EINVAL (spec refused, e.g. a window
 * that is not a multiple of 2 s without CAP_SYS_RESOURCE), EBUSY (fd already has a trigger). */
int psi_trigger_open(int dirfd, const char *name, const PsiTriggerSpec *spec, int *ret_fd);

/* The set of armed triggers: one epoll instance for all of them, and one waiter thread.
 *
 * libev cannot watch POLLPRI, and a PSI fd always polls readable. Nesting the set in the loop's
 * own epoll does not work either: checking whether an epoll fd is ready polls the members on its
 * ready list, and psi_trigger_poll() clears a trigger's event when it is polled
 * (kernel/sched/psi.c: cmpxchg(&t->event, 1, 0)). The loop's readiness check would eat the
 * EPOLLPRI of the first trigger that fired, and the set's own epoll_wait() would no longer report
 * it. (Adding EPOLLIN|EPOLLET to make every woken member report is no way out: a cgroup trigger is
 * woken through kernfs_notify(), which wakes every trigger on the same pressure file, fired or
 * not.) So one thread does nothing but epoll_wait() on the set, directly, and queues what it
 * reports; the loop watches psi_set_notify_fd() and takes the queue.
 *
 * Members are EPOLLONESHOT: a member that reported is disabled until psi_set_take() hands its
 * event over, and re-enabled there unless it was gone. The waiter therefore never spins on the
 * EPOLLERR of a removed cgroup (a state, not an event), and a member has at most one event
 * queued. Events of members removed in the meantime are dropped at take: the epoll data is a slot
 * and a generation, not a pointer. The queue has room for one event per slot and a batch more;
 * only many such stale events make the waiter grow it.
 *
 * Only the thread that created the set may call these functions; the waiter is internal. Never
 * logs. */
typedef struct PsiSet PsiSet;

typedef struct PsiEvent {
        void *userdata;
        bool gone; /* EPOLLERR/EPOLLHUP: the cgroup was removed; the member is no longer enabled */
} PsiEvent;

/* Creates the set and starts its waiter thread (which blocks every signal). Returns 0 or -errno. */
int psi_set_new(PsiSet **ret);

/* Stops and joins the waiter and closes the set's own descriptors (three: the epoll instance and
 * two eventfds), not its members'. NULL-safe; returns NULL. */
PsiSet *psi_set_free(PsiSet *s);

/* Readable (EV_READ) when psi_set_take() has events to hand over. */
int psi_set_notify_fd(const PsiSet *s);

/* Adds fd for fire_mask (EPOLLPRI for triggers; tests use EPOLLIN on a pipe) plus EPOLLERR and
 * EPOLLHUP. The fd stays the caller's. Returns a handle (>= 0) for psi_set_remove(), or -errno. */
int64_t psi_set_add(PsiSet *s, int fd, uint32_t fire_mask, void *userdata);

/* Takes the member out of the set; its queued event, if any, is dropped. Call it before the fd
 * is closed (or handed to a closer). Returns 0 or -ENOENT for a handle that is not a member. */
int psi_set_remove(PsiSet *s, int64_t handle);

/* Moves up to n queued events of current members into events, in the order they arrived, and
 * re-enables the members that fired. Returns how many (0 when none are left). */
size_t psi_set_take(PsiSet *s, PsiEvent *events, size_t n);

/* Members now. */
size_t psi_set_size(const PsiSet *s);

/* 0, or the first failure of the waiter: -ENOMEM when an event could not be queued (that member
 * stays disabled until removed), another -errno when epoll_wait() failed and the waiter stopped
 * (no trigger reports any more). Never happens in practice; the caller logs it once. */
int psi_set_error(PsiSet *s);
