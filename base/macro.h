/* SPDX-License-Identifier: MIT */
/* Small macros every module uses: cleanup attributes, ownership transfer, array sizes.
 * No I/O, no dependencies beyond libc. */
#pragma once

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* Exchanges two lvalues of one type (a recorded snapshot and a sample's, say: their buffers
 * change hands, nothing is copied but the structs). */
#define SWAP(a, b)                                                                                                     \
        do {                                                                                                           \
                __typeof__(a) _t = (a);                                                                                \
                (a) = (b);                                                                                             \
                (b) = _t;                                                                                              \
        } while (0)

/* A pointer the caller trusts (a watcher's data, a callback's userdata), asserted set and
 * yielded: Agent *a = ASSERT_PTR(io->data); */
#define ASSERT_PTR(p)                                                                                                  \
        ({                                                                                                             \
                __typeof__(p) _ap_ = (p);                                                                              \
                assert(_ap_);                                                                                          \
                _ap_;                                                                                                  \
        })

/* Returns the pointer and leaves NULL behind, so a _cleanup_ variable can hand ownership on. */
#define TAKE_PTR(p)                                                                                                    \
        ({                                                                                                             \
                __typeof__(p) _tp_ = (p);                                                                              \
                (p) = NULL;                                                                                            \
                _tp_;                                                                                                  \
        })

#define TAKE_FD(fd)                                                                                                    \
        ({                                                                                                             \
                int _tf_ = (fd);                                                                                       \
                (fd) = -EBADF;                                                                                         \
                _tf_;                                                                                                  \
        })

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

/* free(p), returning NULL: p = mfree(p). */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void closep(int *fd) {
        safe_close(*fd);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Defines name##p(type **) that calls func on a non-NULL pointer. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                                        \
        static inline void func##p(type *p) {                                                                          \
                if (*p)                                                                                                \
                        func(*p);                                                                                      \
        }

/* errno of the last failed libc call as a negative value; never 0, so callers can return it. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}
