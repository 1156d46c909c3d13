/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>

#include "base/utf8.h"

/* Length of the valid UTF-8 sequence starting at s (at most n bytes available), or 0 if invalid. */
static size_t utf8_valid_seq(const unsigned char *s, size_t n) {
        uint32_t cp;
        size_t k;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf) {
                k = 2;
                cp = s[0] & 0x1f;
        } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                k = 3;
                cp = s[0] & 0x0f;
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                k = 4;
                cp = s[0] & 0x07;
        } else
                return 0;

        if (n < k)
                return 0;
        for (size_t i = 1; i < k; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return k;
}

size_t utf8_sanitize(const char *in, size_t len, char *out, size_t size) {
        static const char replacement[] = "\xef\xbf\xbd";
        const unsigned char *s = (const unsigned char *) in;
        size_t i = 0, o = 0;

        if (size == 0)
                return 0;

        while (i < len) {
                size_t k = utf8_valid_seq(s + i, len - i);

                if (k == 0) {
                        if (o + 3 >= size)
                                break;
                        memcpy(out + o, replacement, 3);
                        o += 3;
                        i++;
                        continue;
                }
                if (o + k >= size)
                        break;
                if (k == 1 && s[i] == 0)
                        out[o] = ' ';
                else
                        memcpy(out + o, s + i, k);
                o += k;
                i += k;
        }
        out[o] = '\0';
        return o;
}
