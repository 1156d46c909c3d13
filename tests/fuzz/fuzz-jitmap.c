/* SPDX-License-Identifier: MIT */
/* The JIT map parser (/tmp/perf-PID.map, a process's own words): whatever the lines hold, the
 * entries kept are within the bounds, each found at its start by jitmap_find() (it or a newer one
 * over it), names NUL-terminated and cut to JITMAP_NAME_MAX; the NSpid parser never reads past
 * its buffer. */
#include <stdlib.h>
#include <string.h>

#include "probes/jitmap.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        JitMap *m = NULL;

        (void) jitmap_parse_nspid((const char *) data, size);
        if (jitmap_parse_buf((const char *) data, size, &m) < 0)
                return 0;
        if (jitmap_count(m) > JITMAP_ENTRIES_MAX)
                abort();
        /* Each line's start names something (itself, or a newer entry over it). */
        const char *p = (const char *) data, *end = p + size;
        for (size_t lines = 0; p < end && lines < 64; lines++) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                char line[64] = "";
                size_t n = (size_t) ((nl ? nl : end) - p);
                memcpy(line, p, n < sizeof line - 1 ? n : sizeof line - 1);
                char *e;
                unsigned long long start = strtoull(line, &e, 16);
                uint64_t off;
                const char *name = jitmap_find(m, start, &off);
                if (name && (strnlen(name, JITMAP_NAME_MAX) >= JITMAP_NAME_MAX || off > start))
                        abort();
                p = nl ? nl + 1 : end;
        }
        jitmap_free(m);
        return 0;
}
