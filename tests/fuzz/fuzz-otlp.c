/* SPDX-License-Identifier: MIT */
/* The OTLP formatter on any JSON document (what sink_write() could get): never a crash, and
 * whatever converts comes out as one JSON line that parses back. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/otlp.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *incident = json_loadb((const char *) data, size, JSON_REJECT_DUPLICATES, NULL), *request = NULL, *back;
        char *line = NULL;
        size_t len = 0;
        int r;

        if (!incident)
                return 0;
        r = otlp_from_incident(incident, 1, &request);
        json_decref(incident);
        if (r < 0)
                return 0;
        r = otlp_dump_line(request, &line, &len);
        json_decref(request);
        if (r < 0)
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
