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

size_t text_unsafe_char(const char *p, unsigned *ret_cp) {
        const unsigned char *s = (const unsigned char *) p;
        unsigned cp;
        size_t n;

        if (s[0] < 0x20 || s[0] == 0x7f) {
                cp = s[0];
                n = 1;
        } else if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
                cp = s[1];
                n = 2;
        } else if (s[0] == 0xd8 && s[1] == 0x9c) {
                cp = 0x061c; /* ARABIC LETTER MARK */
                n = 2;
        } else if (s[0] == 0xe2 && (s[1] == 0x80 || s[1] == 0x81) && s[2] >= 0x80 && s[2] <= 0xbf) {
                cp = 0x2000 | ((unsigned) (s[1] & 0x3f) << 6) | (s[2] & 0x3f);
                /* LRM, RLM; the embeddings and overrides LRE..RLO; the isolates LRI..PDI. */
                if (!(cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)))
                        return 0;
                n = 3;
        } else
                return 0;
        if (ret_cp)
                *ret_cp = cp;
        return n;
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

                size_t unsafe = text_unsafe_char((const char *) p, NULL);

                if (unsafe) {
                        out[o++] = '?';
                        p += unsafe;
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
