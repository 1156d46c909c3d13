/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "config/jsonpos.h"

typedef struct Scanner {
        const char *p, *end;
} Scanner;

static void skip_ws(Scanner *s) {
        while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
                s->p++;
}

/* Skips a string starting at '"'; returns its raw content span (escapes left as they are). */
static int skip_string(Scanner *s, const char **ret_start, size_t *ret_len) {
        const char *start;

        if (s->p >= s->end || *s->p != '"')
                return -EINVAL;
        start = ++s->p;
        while (s->p < s->end && *s->p != '"') {
                if (*s->p == '\\')
                        s->p++;
                s->p++;
        }
        if (s->p >= s->end)
                return -EINVAL;
        if (ret_start) {
                *ret_start = start;
                *ret_len = (size_t) (s->p - start);
        }
        s->p++;
        return 0;
}

static int skip_value(Scanner *s, unsigned depth);

static int skip_container(Scanner *s, char close, unsigned depth) {
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == close) {
                s->p++;
                return 0;
        }
        for (;;) {
                if (close == '}') {
                        if (skip_string(s, NULL, NULL) < 0)
                                return -EINVAL;
                        skip_ws(s);
                        if (s->p >= s->end || *s->p != ':')
                                return -EINVAL;
                        s->p++;
                }
                if (skip_value(s, depth + 1) < 0)
                        return -EINVAL;
                skip_ws(s);
                if (s->p >= s->end)
                        return -EINVAL;
                if (*s->p == close) {
                        s->p++;
                        return 0;
                }
                if (*s->p != ',')
                        return -EINVAL;
                s->p++;
                skip_ws(s);
        }
}

static int skip_value(Scanner *s, unsigned depth) {
        if (depth > 512)
                return -EINVAL;
        skip_ws(s);
        if (s->p >= s->end)
                return -EINVAL;
        switch (*s->p) {
        case '"':
                return skip_string(s, NULL, NULL);
        case '{':
                return skip_container(s, '}', depth);
        case '[':
                return skip_container(s, ']', depth);
        default:
                while (s->p < s->end && !strchr(",]} \t\r\n", *s->p))
                        s->p++;
                return 0;
        }
}

/* Skips the value at s->p and the comma after it, if any. 0 or -ENOENT. */
static int skip_item(Scanner *s) {
        if (skip_value(s, 0) < 0)
                return -ENOENT;
        skip_ws(s);
        if (s->p < s->end && *s->p == ',')
                s->p++;
        return 0;
}

/* From the object at s->p to the value of its member key. 0 or -ENOENT. */
static int find_member(Scanner *s, const char *key) {
        size_t klen = strlen(key);

        if (*s->p != '{')
                return -ENOENT;
        s->p++;
        for (;;) {
                const char *k;
                size_t len;

                skip_ws(s);
                if (s->p >= s->end || *s->p == '}' || skip_string(s, &k, &len) < 0)
                        return -ENOENT;
                skip_ws(s);
                if (s->p >= s->end || *s->p != ':')
                        return -ENOENT;
                s->p++;
                skip_ws(s);
                if (len == klen && memcmp(k, key, len) == 0)
                        return 0;
                if (skip_item(s) < 0)
                        return -ENOENT;
        }
}

/* From the array at s->p to its element index. 0 or -ENOENT. */
static int find_element(Scanner *s, size_t index) {
        if (*s->p != '[')
                return -ENOENT;
        s->p++;
        for (size_t j = 0;; j++) {
                skip_ws(s);
                if (s->p >= s->end || *s->p == ']')
                        return -ENOENT;
                if (j == index)
                        return 0;
                if (skip_item(s) < 0)
                        return -ENOENT;
        }
}

/* Positions s at the value of path[0..n) starting from the value at s->p. */
static int descend(Scanner *s, const JsonPathElem *path, size_t n) {
        for (size_t i = 0; i < n; i++) {
                skip_ws(s);
                if (s->p >= s->end)
                        return -ENOENT;
                if ((path[i].key ? find_member(s, path[i].key) : find_element(s, path[i].index)) < 0)
                        return -ENOENT;
        }
        skip_ws(s);
        return 0;
}

int json_locate(const char *text, size_t len, const JsonPathElem *path, size_t n, unsigned *ret_line,
                unsigned *ret_column) {
        Scanner s = { .p = text, .end = text + len };
        unsigned line = 1, col = 1;
        int r;

        r = descend(&s, path, n);
        if (r < 0)
                return r;
        for (const char *q = text; q < s.p; q++) {
                if (*q == '\n') {
                        line++;
                        col = 1;
                } else
                        col++;
        }
        *ret_line = line;
        *ret_column = col;
        return 0;
}
