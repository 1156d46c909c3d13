/* SPDX-License-Identifier: MIT */
/* `psidiag show` on any line: never a crash, and never a control character on the terminal
 * except the newlines it writes itself. */
#include <stdio.h>
#include <stdlib.h>

#include "cmd/show.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = NULL, error[256];
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);

        if (!out)
                return 0;
        (void) show_line((const char *) data, size, out, error, sizeof error);
        fclose(out);
        for (size_t i = 0; i < len; i++)
                if (((unsigned char) buf[i] < 0x20 && buf[i] != '\n') || buf[i] == 0x7f)
                        abort();
        free(buf);
        return 0;
}
