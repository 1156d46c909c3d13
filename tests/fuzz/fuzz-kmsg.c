/* SPDX-License-Identifier: MIT */
/* /dev/kmsg records and the OOM kill parser: each input is a sequence of records separated by
 * NUL bytes (one read(2) of /dev/kmsg returns one record), fed in order into one OomKill, as the
 * OOM watcher does. Names stay NUL-terminated and within bounds whatever the input. The same bytes
 * also go through the oom_kill counter parser (memory.events, memory.oom_control), which must
 * read only inside them. */
#include <stdlib.h>
#include <string.h>

#include "probes/kmsg.h"
#include "probes/memcg.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        OomKill o = {};
        const char *p = (const char *) data, *end = p + size;
        char *whole = malloc(size ? size : 1);
        uint64_t count;

        if (!whole)
                return 0;
        memcpy(whole, data, size); /* exactly size bytes: ASan sees any read past them */
        (void) memcg_parse_oom_kill(whole, size, &count);
        free(whole);

        while (p < end) {
                const char *nul = memchr(p, '\0', (size_t) (end - p));
                size_t len = (size_t) ((nul ? nul : end) - p);
                char *copy = malloc(len ? len : 1);
                KmsgRecord r;

                if (!copy)
                        return 0;
                memcpy(copy, p, len);
                if (kmsg_parse_record(copy, len, &r) == 0 &&
                    oom_parse_message(r.message, r.message_len, &o) != OOM_LINE_NONE &&
                    (strnlen(o.comm, sizeof o.comm) == sizeof o.comm ||
                     strnlen(o.oom_memcg, sizeof o.oom_memcg) == sizeof o.oom_memcg ||
                     strnlen(o.task_memcg, sizeof o.task_memcg) == sizeof o.task_memcg || o.pid <= 0))
                        abort();
                free(copy);
                p += len + 1;
        }
        return 0;
}
