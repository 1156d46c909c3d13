/* SPDX-License-Identifier: MIT */
/* elfutils' libdw (and the libelf it links), loaded with dlopen("libdw.so.1") at the first use:
 * the stack unwinder's only library (probes/unwind.h), which a node without it does without.
 * The calls are the headers' own, through one table; nothing here opens a file. Never logs. */
#pragma once

#include <stdbool.h>

#if HAVE_LIBDW
#include <elfutils/libdwfl.h>
#include <gelf.h>

typedef struct DwApi {
        Dwfl *(*begin)(const Dwfl_Callbacks *);
        void (*end)(Dwfl *);
        int (*errno_)(void);
        const char *(*errmsg)(int);
        void (*report_begin)(Dwfl *);
        Dwfl_Module *(*report_module)(Dwfl *, const char *, Dwarf_Addr, Dwarf_Addr);
        int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *), void *);
        bool (*attach_state)(Dwfl *, Elf *, pid_t, const Dwfl_Thread_Callbacks *, void *);
        int (*getthread_frames)(Dwfl *, pid_t, int (*)(Dwfl_Frame *, void *), void *);
        bool (*thread_state_registers)(Dwfl_Thread *, int, unsigned, const Dwarf_Word *);
        void (*thread_state_register_pc)(Dwfl_Thread *, Dwarf_Word);
        bool (*frame_pc)(Dwfl_Frame *, Dwarf_Addr *, bool *);
        Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
        const char *(*module_info)(Dwfl_Module *, void ***, Dwarf_Addr *, Dwarf_Addr *, Dwarf_Addr *, Dwarf_Addr *,
                                   const char **, const char **);
        Elf *(*module_getelf)(Dwfl_Module *, GElf_Addr *);
        const char *(*module_addrinfo)(Dwfl_Module *, GElf_Addr, GElf_Off *, GElf_Sym *, GElf_Word *, Elf **,
                                       Dwarf_Addr *);
        int (*module_getsymtab)(Dwfl_Module *);
        const char *(*module_getsym_info)(Dwfl_Module *, int, GElf_Sym *, GElf_Addr *, GElf_Word *, Elf **,
                                          Dwarf_Addr *);
        int (*module_build_id)(Dwfl_Module *, const unsigned char **, GElf_Addr *);
        Dwarf_CFI *(*module_eh_cfi)(Dwfl_Module *, Dwarf_Addr *);
        Dwarf_CFI *(*module_dwarf_cfi)(Dwfl_Module *, Dwarf_Addr *);
        int (*cfi_addrframe)(Dwarf_CFI *, Dwarf_Addr, Dwarf_Frame **);
        int (*offline_section_address)(Dwfl_Module *, void **, const char *, Dwarf_Addr, const char *, GElf_Word,
                                       const GElf_Shdr *, Dwarf_Addr *);
        unsigned (*elf_version)(unsigned);
        Elf *(*elf_begin)(int, Elf_Cmd, Elf *);
        Elf *(*elf_memory)(char *, size_t);
        int (*elf_end)(Elf *);
} DwApi;

/* The table, loaded once (thread-safe); NULL when libdw.so.1 or one of its symbols is missing. */
const DwApi *dwapi_get(void);
#endif

/* True when the build has libdw's headers and libdw.so.1 loads. */
bool dwapi_available(void);
