/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "base/parse.h"

int parse_hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int parse_u64_prefix(const char *s, const char *end, uint64_t *ret, const char **ret_rest) {
        uint64_t v = 0;
        const char *p = s;

        if (p >= end || *p < '0' || *p > '9')
                return -EINVAL;
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
                uint64_t d = (uint64_t) (*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        if (ret_rest)
                *ret_rest = p;
        return 0;
}

int parse_u64_exact(const char *s, size_t len, uint64_t *ret) {
        const char *rest;
        uint64_t v;
        int r;

        r = parse_u64_prefix(s, s + len, &v, &rest);
        if (r < 0)
                return r;
        if (rest != s + len)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_uint64(const char *s, uint64_t *ret) {
        return s ? parse_u64_exact(s, strlen(s), ret) : -EINVAL;
}

bool line_next(const char **p, const char *end, const char **ret_line, const char **ret_end) {
        const char *nl;

        if (*p >= end)
                return false;
        nl = memchr(*p, '\n', (size_t) (end - *p));
        *ret_line = *p;
        *ret_end = nl ? nl : end;
        *p = nl ? nl + 1 : end;
        return true;
}

int line_find(const char *buf, size_t len, const char *key, const char **ret_value, const char **ret_end) {
        const char *p = buf, *end = buf + len;
        size_t klen = strlen(key);

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;

                if ((size_t) (le - p) >= klen && memcmp(p, key, klen) == 0) {
                        *ret_value = p + klen;
                        *ret_end = le;
                        return 0;
                }
                p = nl ? nl + 1 : end;
        }
        return -ENOENT;
}

size_t parse_keyed(const char *buf, size_t len, UnparsedFile file, const KeyedWant *want, size_t n) {
        const char *p = buf, *end = buf + len;
        size_t read = 0;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end, *sp = memchr(p, ' ', (size_t) (le - p));
                uint64_t v;

                if (le == p) {
                        p = nl ? nl + 1 : end;
                        continue;
                }
                if (!sp || sp == p || parse_u64_exact(sp + 1, (size_t) (le - sp - 1), &v) < 0) {
                        unparsed_note(file, p, le);
                        p = nl ? nl + 1 : end;
                        continue;
                }
                read++;
                for (size_t i = 0; i < n; i++) {
                        size_t klen = strlen(want[i].key);

                        if ((size_t) (sp - p) == klen && memcmp(p, want[i].key, klen) == 0 && !*want[i].has) {
                                *want[i].value = v;
                                *want[i].has = true;
                                break;
                        }
                }
                p = nl ? nl + 1 : end;
        }
        return read;
}
