/* SPDX-License-Identifier: MIT */
/* The cgroup usage counter parsers (cpu.stat, io.stat, blkio.throttle.io_service_bytes), each
 * fed the same bytes in an exactly sized buffer: they must read only inside them and never
 * report a sum below a part. */
#include <stdlib.h>
#include <string.h>

#include "probes/cgusage.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1);
        uint64_t us, r, w;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        (void) cgroup_usage_parse_cpu_stat(buf, size, &us);
        (void) cgroup_usage_parse_io_stat(buf, size, &r, &w);
        (void) cgroup_usage_parse_blkio_bytes(buf, size, &r, &w);
        free(buf);
        return 0;
}
