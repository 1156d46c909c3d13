/* SPDX-License-Identifier: MIT */
/* bbolt lookups (probes/boltdb.h) in any bytes: the paths the seeds hold (containerd's meta.db,
 * and the files bbolt wrote in tests/fixtures/boltdb). The value stays NUL-terminated within its
 * buffer and the reason within its own, whatever the input. */
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "probes/boltdb.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const paths[][6] = {
                { "v1", "default", "containers", "bigenv", "image" },
                { "v1", "many", "containers", "c123", "image" },
                { "deep", "k0777" },
        };
        uint8_t *buf = malloc(size ? size : 1);
        char value[64], why[BOLTDB_REASON_MAX];

        if (!buf)
                return 0;
        memcpy(buf, data, size); /* exactly size bytes: ASan sees any read past them */
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                size_t n = 0;
                while (n < ELEMENTSOF(paths[i]) && paths[i][n])
                        n++;
                value[0] = '\0';
                int r = boltdb_get_buf(buf, size, paths[i], n, value, sizeof value, why);
                if (strnlen(value, sizeof value) == sizeof value || strnlen(why, sizeof why) == sizeof why ||
                    (r >= 0 && why[0]))
                        abort();
        }
        free(buf);
        return 0;
}
