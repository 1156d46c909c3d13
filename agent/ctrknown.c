/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "agent/ctrknown.h"
#include "base/array.h"
#include "base/cgpath.h"

CtrknownEntry *ctrknown_find(Ctrknown *k, const char *path, size_t *ret_at) {
        size_t lo = 0, hi = k->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(k->items[mid].path, path);
                if (c == 0)
                        return &k->items[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_at = lo;
        return NULL;
}

void ctrknown_insert(Ctrknown *k, size_t at, const char *path, bool *matches) {
        char *p = strdup(path);

        if (!p || array_grow((void **) &k->items, &k->cap, k->n, 64, sizeof *k->items) < 0) {
                free(p);
                free(matches);
                return;
        }
        memmove(&k->items[at + 1], &k->items[at], (k->n - at) * sizeof *k->items);
        k->items[at] = (CtrknownEntry) { .path = p, .matches = matches };
        k->n++;
}

void ctrknown_forget(Ctrknown *k, const char *gone) {
        size_t j = 0;

        for (size_t i = 0; i < k->n; i++) {
                if (cgpath_covers(gone, k->items[i].path)) {
                        free(k->items[i].path);
                        free(k->items[i].matches);
                } else
                        k->items[j++] = k->items[i];
        }
        k->n = j;
}

void ctrknown_clear(Ctrknown *k) {
        for (size_t i = 0; i < k->n; i++) {
                free(k->items[i].path);
                free(k->items[i].matches);
        }
        k->n = 0;
}

void ctrknown_done(Ctrknown *k) {
        ctrknown_clear(k);
        free(k->items);
        *k = (Ctrknown) {};
}
