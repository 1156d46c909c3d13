/* SPDX-License-Identifier: MIT */
/* Growing a reused buffer: sample buffers live across samples, so they grow to the largest need
 * seen, with a quarter of headroom so a slowly growing cgroup does not reallocate every sample;
 * lists filled one element at a time double. No I/O, no dependencies beyond libc. */
#pragma once

#include <errno.h>
#include <stdlib.h>

/* Makes *p hold at least need elements of size bytes (*cap is its capacity in elements). On
 * growth the capacity becomes need + need / 4. 0 or -ENOMEM (*p is kept then). */
static inline int array_reserve(void **p, size_t *cap, size_t need, size_t size) {
        void *q;

        if (need <= *cap)
                return 0;
        need += need / 4;
        q = realloc(*p, need * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = need;
        return 0;
}

/* Makes room for one more element after the n in use (appending one at a time): the capacity
 * doubles, starting at initial elements. 0 or -ENOMEM (*p is kept then). */
static inline int array_grow(void **p, size_t *cap, size_t n, size_t initial, size_t size) {
        void *q;
        size_t c;

        if (n < *cap)
                return 0;
        c = *cap ? *cap * 2 : initial;
        q = realloc(*p, c * size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = c;
        return 0;
}
