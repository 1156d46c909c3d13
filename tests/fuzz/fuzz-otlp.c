/* SPDX-License-Identifier: MIT */
/* The OTLP conversion on any line (what output_write() would get): never a crash, and whatever
 * converts comes out as one JSON line that parses back. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/otlp.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *line = NULL;
        size_t len = 0;
        json_t *back;

        if (otlp_format_line((const char *) data, size, 1, &line, &len) < 0)
                return 0;
        if (len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len - 1))
                abort();
        back = json_loadb(line, len, 0, NULL);
        if (!back)
                abort();
        json_decref(back);
        free(line);
        return 0;
}
