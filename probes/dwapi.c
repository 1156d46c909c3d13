/* SPDX-License-Identifier: MIT */
#include "probes/dwapi.h"

#include "base/dlsyms.h"
#include "base/macro.h"

#if HAVE_LIBDW
#include <dlfcn.h>
#include <pthread.h>

static DwApi api;
static bool loaded;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
        /* libdw's handle also finds libelf's symbols: a handle's lookup covers the libraries it
         * depends on. */
        const DlSym syms[] = {
                { "dwfl_begin", (void **) &api.begin },
                { "dwfl_end", (void **) &api.end },
                { "dwfl_errno", (void **) &api.errno_ },
                { "dwfl_errmsg", (void **) &api.errmsg },
                { "dwfl_report_begin", (void **) &api.report_begin },
                { "dwfl_report_module", (void **) &api.report_module },
                { "dwfl_report_end", (void **) &api.report_end },
                { "dwfl_attach_state", (void **) &api.attach_state },
                { "dwfl_getthread_frames", (void **) &api.getthread_frames },
                { "dwfl_thread_state_registers", (void **) &api.thread_state_registers },
                { "dwfl_thread_state_register_pc", (void **) &api.thread_state_register_pc },
                { "dwfl_frame_pc", (void **) &api.frame_pc },
                { "dwfl_addrmodule", (void **) &api.addrmodule },
                { "dwfl_module_info", (void **) &api.module_info },
                { "dwfl_module_getelf", (void **) &api.module_getelf },
                { "dwfl_module_addrinfo", (void **) &api.module_addrinfo },
                { "dwfl_module_getsymtab", (void **) &api.module_getsymtab },
                { "dwfl_module_getsym_info", (void **) &api.module_getsym_info },
                { "dwfl_module_build_id", (void **) &api.module_build_id },
                { "dwfl_module_eh_cfi", (void **) &api.module_eh_cfi },
                { "dwfl_module_dwarf_cfi", (void **) &api.module_dwarf_cfi },
                { "dwarf_cfi_addrframe", (void **) &api.cfi_addrframe },
                { "dwfl_offline_section_address", (void **) &api.offline_section_address },
                { "elf_version", (void **) &api.elf_version },
                { "elf_begin", (void **) &api.elf_begin },
                { "elf_memory", (void **) &api.elf_memory },
                { "elf_end", (void **) &api.elf_end },
        };
        void *h = dlsyms_open("libdw.so.1", syms, ELEMENTSOF(syms));

        if (!h)
                return;
        if (api.elf_version(EV_CURRENT) == EV_NONE) {
                dlclose(h);
                return;
        }
        loaded = true;
}

const DwApi *dwapi_get(void) {
        pthread_once(&once, load);
        return loaded ? &api : NULL;
}

bool dwapi_available(void) {
        return dwapi_get() != NULL;
}
#else
bool dwapi_available(void) {
        return false;
}
#endif
