/* SPDX-License-Identifier: MIT */
/* The /proc/diskstats parser, and the busiest-device ranking over two readings of the input's two
 * halves. */
#include "tests/fuzz/fuzz.h"
#include "probes/diskstats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static DiskStats a, b;
        DiskBusy busy[4];

        if (diskstats_parse((const char *) data, size / 2, &a) < 0)
                a.n = 0;
        if (diskstats_parse((const char *) data + size / 2, size - size / 2, &b) < 0)
                return 0;
        (void) diskstats_busiest(&a, &b, size * 1000, busy, 4);
        return 0;
}
