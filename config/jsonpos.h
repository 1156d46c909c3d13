/* SPDX-License-Identifier: MIT */
/* Finds where a value sits in JSON text, by path, so semantic config errors can name a
 * line:column (jansson only positions syntax errors). The text must already be valid JSON. */
#pragma once

#include <stddef.h>

typedef struct JsonPathElem {
        const char *key; /* object member name, or NULL for an array index */
        size_t index;
} JsonPathElem;

#define JSON_KEY(k) ((JsonPathElem) { .key = (k) })
#define JSON_INDEX(i) ((JsonPathElem) { .key = NULL, .index = (i) })

/* Writes the 1-based line and column (in bytes) of the value at path; for a path that ends in an
 * object key, position of that member's value. Returns 0, or -ENOENT when the path is not there. */
int json_locate(const char *text, size_t len, const JsonPathElem *path, size_t n, unsigned *ret_line,
                unsigned *ret_column);
