/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pathset.h"
#include "base/array.h"

static size_t find(const Pathset *s, const char *dir, const char *name) {
        size_t k = strlen(dir);

        /* At most max entries, each compared once: a burst's cost stays bounded. */
        for (size_t i = 0; i < s->n; i++) {
                const char *p = s->items[i];
                if (k == 0 ? strcmp(p, name) == 0
                           : strncmp(p, dir, k) == 0 && p[k] == '/' && strcmp(p + k + 1, name) == 0)
                        return i;
        }
        return s->n;
}

int pathset_add(Pathset *s, const char *dir, const char *name) {
        char *p;

        if (find(s, dir, name) < s->n)
                return 0;
        if (s->n >= s->max)
                return -E2BIG;
        if (array_grow((void **) &s->items, &s->cap, s->n, 16, sizeof *s->items) < 0 ||
            asprintf(&p, "%s%s%s", dir, dir[0] ? "/" : "", name) < 0)
                return -ENOMEM;
        s->items[s->n++] = p;
        return 0;
}

void pathset_remove(Pathset *s, const char *path) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->items[i], path) == 0) {
                        free(s->items[i]);
                        memmove(s->items + i, s->items + i + 1, (s->n - i - 1) * sizeof *s->items);
                        s->n--;
                        return;
                }
}

void pathset_clear(Pathset *s) {
        for (size_t i = 0; i < s->n; i++)
                free(s->items[i]);
        s->n = 0;
}

void pathset_done(Pathset *s) {
        pathset_clear(s);
        free(s->items);
        s->items = NULL;
        s->cap = 0;
}
