/* SPDX-License-Identifier: MIT */
/* The userspace OOM killers' marks: each input is a sequence of messages separated by NUL bytes
 * (one journal MESSAGE or one kmsg message each). Every message goes through every line parser,
 * and is fed in order into one nohang state, as a reader of the journal would. Names and cgroups
 * stay NUL-terminated within bounds, pids positive or 0, signals SIGTERM, SIGKILL or 0. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "kills/killmarks.h"
#include "tests/fuzz/fuzz.h"

static void check(const KillMark *m) {
        if (strnlen(m->name, sizeof m->name) == sizeof m->name ||
            strnlen(m->cgroup, sizeof m->cgroup) == sizeof m->cgroup || m->pid < 0 ||
            (m->signal != 0 && m->signal != SIGTERM && m->signal != SIGKILL) || m->uid < -1)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;
        KillMark nohang = { .uid = -1 };
        uint64_t count;

        while (p < end) {
                const char *nul = memchr(p, '\0', (size_t) (end - p));
                size_t len = (size_t) ((nul ? nul : end) - p);
                char *copy = malloc(len ? len : 1); /* exactly len bytes: ASan sees any read past them */
                KillMark m;

                if (!copy)
                        return 0;
                memcpy(copy, p, len);
                if (killmarks_parse_earlyoom_line(copy, len, &m) == 0)
                        check(&m);
                if (killmarks_parse_systemd_oomd_line(copy, len, &m) == 0)
                        check(&m);
                if (killmarks_parse_oomd_kmsg(copy, len, &m) == 0)
                        check(&m);
                (void) killmarks_feed_nohang(copy, len, &nohang);
                check(&nohang);
                (void) killmarks_parse_memory_events_group_kill(copy, len, &count);
                free(copy);
                p += len + 1;
        }
        return 0;
}
