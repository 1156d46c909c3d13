/* SPDX-License-Identifier: MIT */
/* A module's function symbols, sorted once for lookups by address: pure, no ELF reading (the
 * unwinder, probes/unwind.c, feeds it what libdwfl reads from .symtab or .dynsym). libdwfl's own
 * dwfl_module_addrinfo() scans the whole symbol table at every call (some 10,000 symbols in
 * libc's debug file: about 80 us a frame); a lookup here is a binary search. Only sized symbols
 * are kept: a sizeless label says nothing of where it ends. Of symbols at the same address
 * (aliases), the global one is named, then the weak, then the local, then the first met. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMTAB_SYMBOLS_MAX (1u << 20) /* kept of one module: past it the rest is dropped */

typedef enum SymBind {
        SYM_LOCAL,
        SYM_WEAK,
        SYM_GLOBAL,
} SymBind;

typedef struct Sym {
        uint64_t start, size; /* in the process's addresses */
        const char *name;     /* not copied: the caller keeps it alive */
        SymBind bind;
} Sym;

typedef struct SymTab {
        Sym *syms;
        size_t n, allocated;
        bool sorted;
        bool truncated;
} SymTab;

/* Adds one symbol; a size of 0, a NULL or empty name, or an end past 2^64 is ignored.
 * 0 or -ENOMEM; past SYMTAB_SYMBOLS_MAX, 0 with truncated set. */
int symtab_add(SymTab *t, uint64_t start, uint64_t size, const char *name, SymBind bind);
/* Sorts and folds aliases; called once after the last symtab_add(). */
void symtab_seal(SymTab *t);
/* The symbol whose [start, start + size) holds addr (the innermost when they nest), or NULL. */
const Sym *symtab_find(const SymTab *t, uint64_t addr);
void symtab_clear(SymTab *t);
