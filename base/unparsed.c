/* SPDX-License-Identifier: MIT */
#include <stdbool.h>

#include "base/log.h"
#include "base/text.h"
#include "base/unparsed.h"

/* Parsers run on the loop and on the sample pools' threads: relaxed atomics, since a count is
 * read only for the metrics and one line logged twice would do no harm. */
static uint64_t counts[_UNPARSED_MAX];
static bool logged[_UNPARSED_MAX];

const char *unparsed_file_to_string(UnparsedFile f) {
        static const char *const names[_UNPARSED_MAX] = {
                [UNPARSED_IO_STAT] = "io.stat",
                [UNPARSED_IO_MAX] = "io.max",
                [UNPARSED_BLKIO] = "blkio",
                [UNPARSED_MEMORY_STAT] = "memory.stat",
                [UNPARSED_MEMORY_EVENTS] = "memory.events",
                [UNPARSED_CPU_STAT] = "cpu.stat",
                [UNPARSED_PRESSURE] = "pressure",
                [UNPARSED_DISKSTATS] = "diskstats",
        };
        return f >= 0 && f < _UNPARSED_MAX ? names[f] : NULL;
}

void unparsed_note(UnparsedFile f, const char *line, const char *end) {
        char raw[128], safe[128];

        if (f < 0 || f >= _UNPARSED_MAX)
                return;
        __atomic_add_fetch(&counts[f], 1, __ATOMIC_RELAXED);
        if (__atomic_exchange_n(&logged[f], true, __ATOMIC_RELAXED))
                return;
        text_copy_range(raw, sizeof raw, line, end);
        log_debug("%s: skipped a line psidiag cannot read (the rest of the file is used; further ones "
                  "are only counted): \"%s\"",
                  unparsed_file_to_string(f), text_terminal_safe(raw, safe, sizeof safe));
}

uint64_t unparsed_count(UnparsedFile f) {
        return f >= 0 && f < _UNPARSED_MAX ? __atomic_load_n(&counts[f], __ATOMIC_RELAXED) : 0;
}
