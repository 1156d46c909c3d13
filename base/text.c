/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "base/text.h"

char *text_format_us(long long us, char *buf, size_t size) {
        if (us < 0)
                snprintf(buf, size, "-");
        else if (us >= 10 * 1000 * 1000)
                snprintf(buf, size, "%.0fs", us / 1e6);
        else if (us >= 1000 * 1000)
                snprintf(buf, size, "%.2fs", us / 1e6);
        else if (us >= 10 * 1000)
                snprintf(buf, size, "%.0fms", us / 1e3);
        else if (us >= 1000)
                snprintf(buf, size, "%.1fms", us / 1e3);
        else
                snprintf(buf, size, "%lldus", us);
        return buf;
}

char *text_terminal_safe(const char *s, char *out, size_t size) {
        size_t o = 0;

        if (size == 0)
                return out;
        for (const unsigned char *p = (const unsigned char *) (s ? s : ""); *p && o + 1 < size;) {
                size_t n = *p < 0x80             ? 1
                           : (*p & 0xE0) == 0xC0 ? 2
                           : (*p & 0xF0) == 0xE0 ? 3
                           : (*p & 0xF8) == 0xF0 ? 4
                                                 : 1;

                if (*p < 0x20 || *p == 0x7F || (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F)) {
                        out[o++] = '?';
                        p += *p == 0xC2 ? 2 : 1;
                        continue;
                }
                if (o + n >= size)
                        break; /* never cut a character in half */
                for (size_t i = 0; i < n; i++) {
                        if (!p[i]) /* truncated sequence at the end of the string */
                                goto done;
                        out[o++] = (char) p[i];
                }
                p += n;
        }
done:
        out[o] = '\0';
        return out;
}

void text_copy_range(char *dst, size_t size, const char *s, const char *end) {
        size_t n = (size_t) (end - s);

        if (n >= size)
                n = size - 1;
        memcpy(dst, s, n);
        dst[n] = '\0';
}
