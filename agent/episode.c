/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>

#include "agent/episode.h"
#include "base/macro.h"

bool episode_note(Episode *e, uint64_t *next_seq, usec_t now_mono_us, usec_t now_real_us, usec_t window_us,
                  usec_t sample_end_mono_us) {
        bool opened = !e->open || now_mono_us > e->until_mono_us;

        if (opened)
                *e = (Episode) { .open = true, .seq = ++*next_seq, .start_real_us = now_real_us };
        /* A stall that goes on fires again about a window after the last firing, or after the end
         * of the sample that firing started: at most once a window (kernel-facts.md: windows), and
         * when the averaging or polling clock next looks, so a little later than a window. */
        usec_t last = MAX(now_mono_us, sample_end_mono_us);
        e->until_mono_us = MAX(e->until_mono_us, last + 2 * window_us);
        return opened;
}

void episode_format_id(char kind, usec_t start_real_us, uint64_t seq, const char *boot_id, pid_t pid, char *buf,
                       size_t size) {
        char boot[9] = "00000000";
        size_t j = 0;

        for (size_t i = 0; boot_id && boot_id[i] && j < 8; i++)
                if (boot_id[i] != '-')
                        boot[j++] = boot_id[i];
        snprintf(buf, size, "%s-%" PRIx64 "-%x-%c%" PRIu64, boot, (uint64_t) start_real_us, (unsigned) pid, kind, seq);
}

bool episode_pass_joinable(bool pass_open, bool pass_ended, uint64_t sample_ms) {
        return pass_open && !pass_ended && sample_ms > 0;
}
