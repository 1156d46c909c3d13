/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>

#include "base/dlsyms.h"

void *dlsyms_open(const char *lib, const DlSym *syms, size_t n) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

        if (!h)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
                        dlclose(h);
                        return NULL;
                }
        return h;
}
