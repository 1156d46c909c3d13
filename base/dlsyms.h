/* SPDX-License-Identifier: MIT */
/* A library loaded with dlopen() at its first use, and the functions the caller names in it: the
 * one loader of the optional libraries (libdw, libsqlite3), so that a node without them loses
 * only what they give. No logging. */
#pragma once

#include <stddef.h>

typedef struct DlSym {
        const char *name;
        void **fn; /* where the function goes (POSIX lets a function pointer be read from dlsym's void *) */
} DlSym;

/* dlopen(lib, RTLD_NOW | RTLD_LOCAL) and every syms[i] looked up in it (a handle's lookup covers
 * the libraries it depends on). The handle, or NULL when the library or any of the functions is
 * missing (the handle then closed; the pointers already found are left as they are: unusable). */
void *dlsyms_open(const char *lib, const DlSym *syms, size_t n);
