/* SPDX-License-Identifier: MIT */
/* jansson's allocations counted (json_set_alloc_funcs(json_count_malloc, json_count_free)): the
 * bytes held now and their peak, for the tests and the fuzz target that hold a parse to the bound
 * ctrmeta_json_cost() gives. Header-only; not thread-safe. */
#pragma once

#include <stddef.h>
#include <stdlib.h>

static size_t json_bytes, json_peak;

static inline void *json_count_malloc(size_t n) {
        size_t *p = malloc(n + sizeof(max_align_t));

        if (!p)
                return NULL;
        *p = n;
        json_bytes += n;
        json_peak = json_bytes > json_peak ? json_bytes : json_peak;
        return (char *) p + sizeof(max_align_t);
}

static inline void json_count_free(void *q) {
        if (q) {
                size_t *p = (size_t *) ((char *) q - sizeof(max_align_t));
                json_bytes -= *p;
                free(p);
        }
}
