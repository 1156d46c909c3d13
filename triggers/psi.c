/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "base/thread.h"
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

        /* strlen + 1: the NUL is part of what we write (kernel-facts.md: trigger-write). */
        k = write(fd, buf, (size_t) n + 1);
        if (k < 0)
                return negative_errno();
        if (k != n + 1)
                return -EIO;

        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Slot and generation in the epoll data: an event of a member removed (and its slot reused) since
 * the waiter read it is recognised as stale. The stop eventfd carries STOP_KEY. */
#define STOP_KEY UINT64_MAX
#define KEY(slot, gen) (((uint64_t) (gen) << 32) | (uint32_t) (slot))
#define KEY_SLOT(k) ((uint32_t) (k))
#define KEY_GEN(k) ((uint32_t) ((k) >> 32))
#define WAIT_MAX 64
#define WAITER_STACK (64 * 1024)

typedef struct Member {
        void *userdata;
        int fd; /* -1: free */
        uint32_t gen;
        uint32_t fire_mask;
} Member;

typedef struct Queued {
        uint64_t key;
        uint32_t events;
} Queued;

struct PsiSet {
        int epoll_fd, notify_fd, stop_fd;
        pthread_t waiter;
        bool waiter_started;

        /* The loop thread's alone. */
        Member *members;
        size_t n_slots, cap_slots, n_members;
        uint32_t *free_slots;
        size_t n_free, cap_free;

        /* Shared with the waiter, under lock. With EPOLLONESHOT a member has at most one event
         * queued; stale ones of removed members wait for take(). The loop keeps room for one per
         * slot and a batch more, so the waiter grows the queue only after many removals. */
        pthread_mutex_t lock;
        Queued *queue; /* queue[head..n_queue) are waiting */
        size_t head, n_queue, cap_queue;
        int error; /* the first failure of the waiter, for psi_set_error() */
};

/* Under lock. Room for one more at the end, moving the waiting ones to the front first. */
static int queue_make_room(PsiSet *s) {
        if (s->head > 0 && s->n_queue == s->cap_queue) {
                memmove(s->queue, s->queue + s->head, (s->n_queue - s->head) * sizeof *s->queue);
                s->n_queue -= s->head;
                s->head = 0;
        }
        return array_grow((void **) &s->queue, &s->cap_queue, s->n_queue, 16, sizeof *s->queue);
}

static void *waiter_main(void *userdata) {
        PsiSet *s = userdata;
        struct epoll_event ev[WAIT_MAX];

        for (;;) {
                int n = epoll_wait(s->epoll_fd, ev, WAIT_MAX, -1);
                bool stop = false, notify;

                if (n < 0 && errno == EINTR)
                        continue;
                pthread_mutex_lock(&s->lock);
                if (n < 0) {
                        /* Cannot happen with a valid set (EBADF, EINVAL, EFAULT), but if it did every
                         * trigger would be dead: say so, and let the loop know. */
                        if (!s->error)
                                s->error = negative_errno();
                        pthread_mutex_unlock(&s->lock);
                        uint64_t one = 1;
                        (void) !write(s->notify_fd, &one, sizeof one);
                        return NULL;
                }
                notify = s->n_queue == s->head;
                for (int i = 0; i < n; i++) {
                        if (ev[i].data.u64 == STOP_KEY) {
                                stop = true;
                                continue;
                        }
                        if (queue_make_room(s) < 0) {
                                /* This member stays disabled until it is removed. */
                                if (!s->error)
                                        s->error = -ENOMEM;
                                continue;
                        }
                        s->queue[s->n_queue++] = (Queued) { .key = ev[i].data.u64, .events = ev[i].events };
                }
                pthread_mutex_unlock(&s->lock);
                if (notify && n > (stop ? 1 : 0)) {
                        uint64_t one = 1;
                        /* EAGAIN only if the counter is at its maximum: the loop is woken anyway. */
                        (void) !write(s->notify_fd, &one, sizeof one);
                }
                if (stop)
                        return NULL;
        }
}

int psi_set_new(PsiSet **ret) {
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = STOP_KEY };
        PsiSet *s;
        int r;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->epoll_fd = s->notify_fd = s->stop_fd = -EBADF;
        pthread_mutex_init(&s->lock, NULL);
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        s->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->epoll_fd < 0 || s->notify_fd < 0 || s->stop_fd < 0 ||
            epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->stop_fd, &ev) < 0) {
                r = negative_errno();
                psi_set_free(s);
                return r;
        }

        /* Signals stay the loop's. */
        r = thread_start(&s->waiter, WAITER_STACK, waiter_main, s);
        if (r < 0) {
                psi_set_free(s);
                return r;
        }
        s->waiter_started = true;
        *ret = s;
        return 0;
}

PsiSet *psi_set_free(PsiSet *s) {
        if (!s)
                return NULL;
        if (s->waiter_started) {
                uint64_t one = 1;
                (void) !write(s->stop_fd, &one, sizeof one);
                pthread_join(s->waiter, NULL);
        }
        safe_close(s->epoll_fd);
        safe_close(s->notify_fd);
        safe_close(s->stop_fd);
        pthread_mutex_destroy(&s->lock);
        free(s->members);
        free(s->free_slots);
        free(s->queue);
        free(s);
        return NULL;
}

int psi_set_error(PsiSet *s) {
        int r;

        pthread_mutex_lock(&s->lock);
        r = s->error;
        pthread_mutex_unlock(&s->lock);
        return r;
}

int psi_set_notify_fd(const PsiSet *s) {
        return s->notify_fd;
}

size_t psi_set_size(const PsiSet *s) {
        return s->n_members;
}

/* Room for one more slot everywhere it is counted, before the member exists. */
static int reserve_slot(PsiSet *s) {
        int r;

        if (s->n_free > 0)
                return 0;
        if (s->n_slots >= INT32_MAX)
                return -ENOMEM;
        pthread_mutex_lock(&s->lock);
        r = array_reserve((void **) &s->queue, &s->cap_queue, s->n_slots + 1 + WAIT_MAX, sizeof *s->queue);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                return r;
        r = array_grow((void **) &s->members, &s->cap_slots, s->n_slots, 16, sizeof *s->members);
        if (r < 0)
                return r;
        /* The free list can hold every slot. */
        r = array_reserve((void **) &s->free_slots, &s->cap_free, s->cap_slots, sizeof *s->free_slots);
        if (r < 0)
                return r;
        s->members[s->n_slots] = (Member) { .fd = -1 };
        s->free_slots[s->n_free++] = (uint32_t) s->n_slots++;
        return 0;
}

static int member_ctl(PsiSet *s, int op, uint32_t slot) {
        Member *m = &s->members[slot];
        struct epoll_event ev = {
                .events = m->fire_mask | EPOLLERR | EPOLLHUP | EPOLLONESHOT,
                .data.u64 = KEY(slot, m->gen),
        };

        return epoll_ctl(s->epoll_fd, op, m->fd, &ev) < 0 ? negative_errno() : 0;
}

int64_t psi_set_add(PsiSet *s, int fd, uint32_t fire_mask, void *userdata) {
        uint32_t slot;
        int r;

        if (fd < 0)
                return -EBADF;
        r = reserve_slot(s);
        if (r < 0)
                return r;
        slot = s->free_slots[--s->n_free];
        Member *m = &s->members[slot];
        m->fd = fd;
        m->userdata = userdata;
        m->fire_mask = fire_mask;
        r = member_ctl(s, EPOLL_CTL_ADD, slot);
        if (r < 0) {
                m->fd = -1;
                s->free_slots[s->n_free++] = slot;
                return r;
        }
        s->n_members++;
        return (int64_t) KEY(slot, m->gen);
}

int psi_set_remove(PsiSet *s, int64_t handle) {
        uint32_t slot = KEY_SLOT(handle);
        Member *m;

        if (handle < 0 || slot >= s->n_slots || s->members[slot].fd < 0 || s->members[slot].gen != KEY_GEN(handle))
                return -ENOENT;
        m = &s->members[slot];
        /* ENOENT cannot happen (a member is never taken out behind our back while its fd is
         * open); a failure here would leave events for a stale key, which take() drops anyway. */
        (void) epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, m->fd, NULL);
        m->fd = -1;
        m->userdata = NULL;
        m->gen = (m->gen + 1) & 0x7fffffff; /* stale now: whatever is queued for the slot; handles stay >= 0 */
        s->free_slots[s->n_free++] = slot;
        s->n_members--;
        return 0;
}

size_t psi_set_take(PsiSet *s, PsiEvent *events, size_t n) {
        size_t got = 0, used = 0;
        uint64_t count;

        /* Reset the notification before looking, so an event queued after the look wakes us again. */
        (void) !read(s->notify_fd, &count, sizeof count);
        pthread_mutex_lock(&s->lock);
        for (used = s->head; used < s->n_queue && got < n; used++) {
                Queued q = s->queue[used];
                uint32_t slot = KEY_SLOT(q.key);
                Member *m;

                if (slot >= s->n_slots || s->members[slot].fd < 0 || s->members[slot].gen != KEY_GEN(q.key))
                        continue; /* removed since the waiter saw it */
                m = &s->members[slot];
                events[got++] = (PsiEvent) { .userdata = m->userdata, .gone = q.events & (EPOLLERR | EPOLLHUP) };
                /* Re-enabled at once, before the caller acts on it: a trigger fires at most once per
                 * window (psi.c update_triggers()), so none is lost unless the loop is held up for a
                 * whole window. A removed cgroup stays disabled: its ERR would report forever. */
                if (!(q.events & (EPOLLERR | EPOLLHUP)))
                        (void) member_ctl(s, EPOLL_CTL_MOD, slot);
        }
        s->head = used;
        if (s->head == s->n_queue)
                s->head = s->n_queue = 0;
        bool more = s->n_queue > s->head;
        pthread_mutex_unlock(&s->lock);
        if (more) {
                /* Left for the next call: keep the loop's watcher readable. */
                uint64_t one = 1;
                (void) !write(s->notify_fd, &one, sizeof one);
        }
        return got;
}
