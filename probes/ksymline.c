/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/parse.h"
#include "probes/ksymline.h"

#define ADDR_DIGITS_MAX 16

/* What the kernel writes in a name: printable ASCII, no space. */
static bool is_name_byte(char c) {
        return c > ' ' && c < 0x7f;
}

/* The bytes of [p, end) that are name bytes, from p on. */
static size_t name_span(const char *p, const char *end) {
        const char *s = p;

        while (s < end && is_name_byte(*s))
                s++;
        return (size_t) (s - p);
}

/* The address and type of [*p, end), "ADDR TYPE ", *p past them. 0 or -EINVAL. */
static int scan_addr_type(const char **p, const char *end, KsymLine *l) {
        const char *s = *p;
        uint64_t v = 0;
        int d, n = 0;

        for (; s < end && (d = parse_hex_digit(*s)) >= 0; s++, n++) {
                if (n == ADDR_DIGITS_MAX)
                        return -EINVAL;
                v = v * 16 + (uint64_t) d;
        }
        if (n == 0 || end - s < 3 || s[0] != ' ' || !is_name_byte(s[1]) || s[2] != ' ')
                return -EINVAL;
        l->addr = v;
        l->type = s[1];
        *p = s + 3;
        return 0;
}

int ksymline_parse(const char *s, const char *end, KsymLine *ret) {
        const char *p = s;
        KsymLine l = {};

        if (scan_addr_type(&p, end, &l) < 0)
                return -EINVAL;
        l.name = p;
        l.name_len = name_span(p, end);
        if (l.name_len == 0)
                return -EINVAL;
        p += l.name_len;
        if (p < end) {
                /* "\t[MODULE]" (kernel/kallsyms.c s_show()), and nothing after it. */
                if (end - p < 4 || p[0] != '\t' || p[1] != '[' || end[-1] != ']')
                        return -EINVAL;
                l.module = p + 2;
                l.module_len = (size_t) (end - 1 - l.module);
                if (l.module_len == 0 || l.module_len >= KSYMLINE_MODULE_NAME_MAX ||
                    name_span(l.module, end - 1) != l.module_len || memchr(l.module, '[', l.module_len) ||
                    memchr(l.module, ']', l.module_len))
                        return -EINVAL;
        }
        *ret = l;
        return 0;
}
