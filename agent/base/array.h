/* SPDX-License-Identifier: MIT */
/* Growing a reused buffer: sample buffers live across samples, so they grow to the largest need
 * seen, with a quarter of headroom so a slowly growing cgroup does not reallocate every sample.
 * No I/O, no dependencies beyond libc. */
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
