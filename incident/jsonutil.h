/* SPDX-License-Identifier: MIT */
/* Small jansson helpers shared by the incident's builders: every jansson call can fail on
 * allocation, and bytes from the kernel are made valid UTF-8 first. Pure. */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "base/macro.h"
#include "incident/incident.h"

/* Every jansson call can fail on allocation; set_new() returns -ENOMEM (and drops v) when it does,
 * so builders can chain `r |= set(...)` and check once. */
static inline int set_new(json_t *obj, const char *key, json_t *v) {
        if (!obj || !v || json_object_set_new_nocheck(obj, key, v) < 0) {
                json_decref(v);
                return -ENOMEM;
        }
        return 0;
}

/* o when every set on it succeeded (r: a chain of set_new()), else NULL with o dropped: the end of
 * each builder. */
static inline json_t *object_or_null(json_t *o, int r) {
        if (r < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

static inline int append_new(json_t *arr, json_t *v) {
        if (!arr || !v || json_array_append_new(arr, v) < 0) {
                json_decref(v);
                return -ENOMEM;
        }
        return 0;
}

static inline json_t *json_u64(uint64_t v) {
        /* json_int_t is long long: clamp rather than wrap negative. */
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}

/* "/a/b" from "a/b" (and "/" from ""), the form /proc/<pid>/cgroup uses. */
static inline json_t *cgroup_string(const char *rel) {
        char path[4096];
        int n;

        if (!rel)
                return json_null();
        while (*rel == '/')
                rel++;
        n = snprintf(path, sizeof path, "/%s", rel);
        return json_string_from_bytes(path, (size_t) MIN(n, (int) sizeof path - 1));
}
