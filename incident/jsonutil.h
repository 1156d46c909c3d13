/* SPDX-License-Identifier: MIT */
/* The leaf of incident/: the jansson helpers every builder of the incident uses (every jansson call
 * can fail on allocation; bytes from the kernel are made valid UTF-8 first) and the writer of a
 * reported process's identity. Pure: no I/O and no logging. Includes nothing of incident/, so
 * incident.c and the report builders (culprit-report, onwhat-report) all build on it. */
#pragma once

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/macro.h"
#include "containers/cgmeta.h"
#include "probes/pressure.h"
#include "sampling/result.h" /* ProcessInfo */

/* JSON string from arbitrary bytes (invalid UTF-8 replaced, NUL as space). NULL on ENOMEM. */
json_t *json_string_from_bytes(const char *s, size_t len);

/* comm, cmdline, uid, cgroup and meta of a reported process, set on o. 0 or -ENOMEM. A cgroup
 * outside the agent's cgroup namespace ("/../.." in /proc) is written as
 * PROC_CGROUP_OUTSIDE_NAMESPACE. */
int incident_process_identity(json_t *o, const ProcessInfo *info);

/* One line of a pressure file ({avg10, avg60, avg300, total_us}), JSON null when the file had no
 * such line. NULL on allocation failure. */
json_t *incident_pressure_line(const PressureStats *p, PsiStall which);

/* {unit, slice, pod_uid, qos, container_runtime, container_id} of a cgroup path (each null when
 * the path does not say), and "container": what its runtime named it (ci; NULL: null), or JSON null
 * for a NULL path. NULL on allocation failure. */
json_t *incident_cgroup_meta(const char *path, const ContainerInfo *ci);

/* Every jansson call can fail on allocation; set_new() returns -ENOMEM when it does, so builders can
 * chain `r |= set(...)` and check once. v is always consumed: json_object_set_new_nocheck() steals
 * the reference even when it fails (it releases v itself, also for a NULL obj), so v is never
 * released here after the call. */
static inline int set_new(json_t *obj, const char *key, json_t *v) {
        if (!v)
                return -ENOMEM;
        return json_object_set_new_nocheck(obj, key, v) < 0 ? -ENOMEM : 0;
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

/* As set_new(): json_array_append_new() steals v even when it fails (and for a NULL arr). */
static inline int append_new(json_t *arr, json_t *v) {
        if (!v)
                return -ENOMEM;
        return json_array_append_new(arr, v) < 0 ? -ENOMEM : 0;
}

static inline json_t *json_u64(uint64_t v) {
        /* json_int_t is long long: clamp rather than wrap negative. */
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}

/* "/a/b" from "a/b" (and "/" from ""), the form /proc/<pid>/cgroup uses. */
static inline json_t *cgroup_string(const char *rel) {
        char path[4096];

        if (!rel)
                return json_null();
        return json_string_from_bytes(path, MIN(cgroup_display_path(NULL, rel, path, sizeof path), sizeof path - 1));
}
