/* SPDX-License-Identifier: MIT */
#include "probes/symtab.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

/* A symbol nested in another (a local label with a size inside a function) is found by looking
 * back this many symbols from the last one starting at or below the address. */
#define NEST_LOOKBACK 16

int symtab_add(SymTab *t, uint64_t start, uint64_t size, const char *name, SymBind bind) {
        assert(!t->sorted);
        if (size == 0 || !name || !name[0] || start + size < start)
                return 0;
        if (t->n == SYMTAB_SYMBOLS_MAX) {
                t->truncated = true;
                return 0;
        }
        if (t->n == t->allocated) {
                size_t a = t->allocated ? t->allocated * 2 : 64;
                Sym *s = reallocarray(t->syms, a, sizeof *s);

                if (!s)
                        return -ENOMEM;
                t->syms = s;
                t->allocated = a;
        }
        t->syms[t->n++] = (Sym) { .start = start, .size = size, .name = name, .bind = bind };
        return 0;
}

static int by_start(const void *a, const void *b) {
        const Sym *x = a, *y = b;

        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        /* The alias to keep first: stronger binding, then the larger. */
        if (x->bind != y->bind)
                return x->bind > y->bind ? -1 : 1;
        if (x->size != y->size)
                return x->size > y->size ? -1 : 1;
        return 0;
}

void symtab_seal(SymTab *t) {
        size_t w = 0;

        if (t->n)
                qsort(t->syms, t->n, sizeof *t->syms, by_start);
        for (size_t i = 0; i < t->n; i++)
                if (w == 0 || t->syms[w - 1].start != t->syms[i].start)
                        t->syms[w++] = t->syms[i];
        t->n = w;
        t->sorted = true;
}

const Sym *symtab_find(const SymTab *t, uint64_t addr) {
        size_t lo = 0, hi = t->n;

        assert(t->sorted);
        /* The first symbol starting past addr. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (t->syms[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo, k = 0; i > 0 && k < NEST_LOOKBACK; i--, k++) {
                const Sym *s = &t->syms[i - 1];

                if (addr - s->start < s->size)
                        return s;
        }
        return NULL;
}

void symtab_clear(SymTab *t) {
        free(t->syms);
        *t = (SymTab) {};
}
