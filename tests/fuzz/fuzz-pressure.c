/* SPDX-License-Identifier: MIT */
/* The PSI pressure-file parser ("some avg10=... total=N" / "full ..."). */
#include "tests/fuzz/fuzz.h"
#include "probes/pressure.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PressureStats st;

        (void) pressure_parse_buf((const char *) data, size, &st);
        return 0;
}
