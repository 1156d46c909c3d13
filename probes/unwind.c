/* SPDX-License-Identifier: MIT */
/* libdwfl unwinds from registers and memory it asks its callbacks for (Dwfl_Thread_Callbacks):
 * here the sample's registers and its stack copy, nothing read from the live process, so a
 * sample is unwound after the moment it was taken without stopping anyone (kernel-facts.md:
 * libdwfl-unwind). Modules are reported by address range (dwfl_report_module()) and their files
 * handed over only when a pc falls in one (Dwfl_Callbacks.find_elf), read with ELF_C_READ: a
 * file someone truncates under us is a read error, where a mapping of it would be a SIGBUS. */
#include "probes/unwind.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

#include "base/macro.h"
#include "probes/dwapi.h"
#include "probes/elfopen.h"
#include "probes/procmaps.h"
#include "probes/symtab.h"

static const char *const end_names[_UNWIND_END_MAX] = {
        [UNWIND_END_OUTERMOST] = "outermost", [UNWIND_END_NO_MODULE] = "no_module",   [UNWIND_END_NO_ELF] = "no_elf",
        [UNWIND_END_NO_CFI] = "no_cfi",       [UNWIND_END_STACK_COPY] = "stack_copy", [UNWIND_END_DEPTH] = "depth",
        [UNWIND_END_NO_REGS] = "no_regs",     [UNWIND_END_ERROR] = "error",
};

const char *unwind_end_to_string(UnwindEnd e) {
        return e >= 0 && e < _UNWIND_END_MAX ? end_names[e] : NULL;
}

bool unwind_available(void) {
#if HAVE_LIBDW && defined(__x86_64__)
        return dwapi_available();
#else
        return false;
#endif
}

#if HAVE_LIBDW && defined(__x86_64__)

typedef struct Module {
        UnwindModule pub;
        uint64_t map_start, map_end; /* one mapping of it: its /proc/PID/map_files name */
        uint32_t dev_major, dev_minor;
        uint64_t inode;
        bool exec_named; /* map_start is an executable mapping's */
        bool build_id_read;
        bool symtab_read;
        SymTab symtab;
        bool vdso;
        bool deleted;
        char *path;
        struct UnwindProc *proc;
} Module;

typedef struct Walk {
        UnwindStack *out;
        const PerfSample *sample;
        Dwfl_Module *prev_mod; /* the module of the frame before, whose CFI gave this one */
        uint64_t prev_pc;      /* its pc as looked up (a return address minus one) */
        bool read_missed;      /* a read outside the stack copy since the frame before */
} Walk;

struct UnwindProc {
        const DwApi *dw;
        int proc_fd, root_fd;
        pid_t pid;
        Dwfl *dwfl;
        Elf *arch_elf; /* the vDSO's, given to dwfl_attach_state for the machine: it must outlive dwfl */
        Module *modules;
        size_t n_modules;
        bool truncated;
        Dwfl_Callbacks callbacks; /* dwfl_begin() keeps the pointer */
        Walk *walk;               /* during unwind_sample() */
};

static Elf *vdso_elf(const DwApi *dw) {
        const uint8_t *image;
        size_t size;

        /* elf_memory() reads and never writes an image opened for reading (ELF_C_READ_MMAP). */
        return elfopen_vdso(&image, &size) ? dw->elf_memory((char *) image, size) : NULL;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base, char **file_name,
                    Elf **elfp) {
        Module *m = *userdata;
        const DwApi *dw = m->proc->dw;
        int fd;

        (void) mod;
        (void) modname;
        (void) base;
        m->pub.opened = true;
        if (m->vdso) {
                *elfp = vdso_elf(dw);
                m->pub.error = *elfp ? 0 : -ENOENT;
                return -1;
        }
        fd = elfopen_module(m->proc->proc_fd, &(ElfOpenTarget) {
                                                      .pid = m->proc->pid,
                                                      .map_start = m->map_start,
                                                      .map_end = m->map_end,
                                                      .dev_major = m->dev_major,
                                                      .dev_minor = m->dev_minor,
                                                      .inode = m->inode,
                                                      .path = m->path,
                                                      .deleted = m->deleted,
                                              });
        if (fd < 0) {
                m->pub.error = fd;
                return -1; /* *file_name left NULL: libdwfl would open a name itself */
        }
        *elfp = dw->elf_begin(fd, ELF_C_READ, NULL);
        if (!*elfp) {
                m->pub.error = -ENOEXEC;
                close(fd);
                return -1;
        }
        *file_name = strdup(m->path);
        return fd; /* libdwfl's now: closed at elf_end */
}

/* A debug file by the module's build-id only (probes/elfopen.h): never by the module's own name
 * or debuglink, which any user may have chosen. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name) {
        Module *m = *userdata;
        const unsigned char *bits;
        GElf_Addr vaddr;
        char path[128];
        int n, fd;

        (void) modname, (void) base, (void) file_name, (void) debuglink_file, (void) debuglink_crc;
        n = m->proc->dw->module_build_id(mod, &bits, &vaddr);
        if (n <= 0 || m->proc->root_fd < 0)
                return -1;
        fd = elfopen_debug(m->proc->root_fd, bits, (size_t) n, path, sizeof path);
        if (fd < 0)
                return -1;
        *debuginfo_file_name = strdup(path);
        m->pub.debug_file = true;
        return fd; /* libdwfl checks its build-id against the module's */
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp) {
        (void) dwfl, (void) arg, (void) thread_argp;
        return 0; /* no thread is listed: each sample names its own */
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp) {
        (void) dwfl, (void) tid;
        *thread_argp = arg;
        return true;
}

/* Only the stack copy: a CFA rule that reads anywhere else ends the walk (stack_copy). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg) {
        UnwindProc *p = arg;
        const PerfSample *s = p->walk->sample;
        uint64_t sp = s->regs[PERF_REG_X86_SP];

        (void) dwfl;
        if (addr < sp || addr - sp > s->stack_dyn_size || s->stack_dyn_size - (addr - sp) < sizeof *result) {
                p->walk->read_missed = true;
                return false;
        }
        memcpy(result, s->stack + (addr - sp), sizeof *result);
        return true;
}

/* The x86-64 psABI's DWARF numbering (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
 * 8-15 r8-r15, 16 the return address: rip) from perf's PERF_REG_X86_* (kernel-facts.md:
 * dwarf-regs-x86-64). */
static const int dwarf_from_perf[17] = {
        PERF_REG_X86_AX,  PERF_REG_X86_DX,  PERF_REG_X86_CX,  PERF_REG_X86_BX,  PERF_REG_X86_SI,  PERF_REG_X86_DI,
        PERF_REG_X86_BP,  PERF_REG_X86_SP,  PERF_REG_X86_R8,  PERF_REG_X86_R9,  PERF_REG_X86_R10, PERF_REG_X86_R11,
        PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15, PERF_REG_X86_IP,
};

static bool set_initial_registers(Dwfl_Thread *thread, void *arg) {
        UnwindProc *p = arg;
        const PerfSample *s = p->walk->sample;
        Dwarf_Word regs[ELEMENTSOF(dwarf_from_perf)];

        for (size_t i = 0; i < ELEMENTSOF(dwarf_from_perf); i++)
                regs[i] = s->regs[dwarf_from_perf[i]];
        if (!p->dw->thread_state_registers(thread, 0, ELEMENTSOF(regs), regs))
                return false;
        p->dw->thread_state_register_pc(thread, s->regs[PERF_REG_X86_IP]);
        return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = next_thread,
        .get_thread = get_thread,
        .memory_read = memory_read,
        .set_initial_registers = set_initial_registers,
};

static Module *module_of(const DwApi *dw, Dwfl_Module *mod) {
        void **ud = NULL;

        (void) dw->module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
        return ud ? *ud : NULL;
}

/* Why the walk cannot go on from a frame at pc (as looked up) in mod by the CFI, or
 * _UNWIND_END_MAX when the CFI covers it. */
static UnwindEnd cfi_lacking(const DwApi *dw, Dwfl_Module *mod, uint64_t pc) {
        Dwarf_CFI *(*const kinds[])(Dwfl_Module *, Dwarf_Addr *) = { dw->module_eh_cfi, dw->module_dwarf_cfi };
        GElf_Addr elf_bias;

        if (!mod)
                return UNWIND_END_NO_MODULE;
        if (!dw->module_getelf(mod, &elf_bias))
                return UNWIND_END_NO_ELF;
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                Dwarf_Addr bias;
                Dwarf_CFI *cfi = kinds[i](mod, &bias);
                Dwarf_Frame *f = NULL;

                if (cfi && dw->cfi_addrframe(cfi, pc - bias, &f) == 0) {
                        free(f);
                        return _UNWIND_END_MAX;
                }
        }
        return UNWIND_END_NO_CFI;
}

/* The module's function symbols, read once: libdwfl's .symtab (of the debug file where one was
 * found) or else .dynsym, sorted by probes/symtab.h. */
static void symtab_read(const DwApi *dw, Module *m, Dwfl_Module *mod) {
        int n = dw->module_getsymtab(mod);

        m->symtab_read = true;
        for (int i = 1; i < n; i++) {
                GElf_Sym sym;
                GElf_Addr addr;
                GElf_Word shndx;
                const char *name = dw->module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
                int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

                if (!name || shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC))
                        continue;
                if (symtab_add(&m->symtab, addr, sym.st_size, name,
                               bind == STB_GLOBAL ? SYM_GLOBAL
                               : bind == STB_WEAK ? SYM_WEAK
                                                  : SYM_LOCAL) < 0)
                        break; /* out of memory: the symbols so far */
        }
        symtab_seal(&m->symtab);
}

static void build_id_read(const DwApi *dw, Module *m, Dwfl_Module *mod) {
        const unsigned char *bits;
        GElf_Addr vaddr;
        int n = dw->module_build_id(mod, &bits, &vaddr);

        m->build_id_read = true;
        if (n > 0 && n <= UNWIND_BUILD_ID_MAX) {
                memcpy(m->pub.build_id, bits, (size_t) n);
                m->pub.build_id_size = (uint8_t) n;
        }
}

static void frame_describe(const UnwindProc *p, Dwfl_Module *mod, uint64_t pc, uint64_t lookup, UnwindFrame *f) {
        const DwApi *dw = p->dw;
        Module *m = mod ? module_of(dw, mod) : NULL;
        GElf_Addr bias;
        const Sym *sym;

        *f = (UnwindFrame) { .pc = pc, .module = m ? (int) (m - p->modules) : -1 };
        if (!m || !dw->module_getelf(mod, &bias))
                return;
        f->module_pc = pc - bias;
        if (!m->build_id_read)
                build_id_read(dw, m, mod);
        if (!m->symtab_read)
                symtab_read(dw, m, mod);
        sym = symtab_find(&m->symtab, lookup);
        if (sym) {
                f->symbol = sym->name;
                f->symbol_offset = pc - sym->start;
        }
}

static int on_frame(Dwfl_Frame *state, void *arg) {
        UnwindProc *p = arg;
        Walk *w = p->walk;
        const DwApi *dw = p->dw;
        Dwarf_Addr pc;
        bool activation;
        uint64_t lookup;
        Dwfl_Module *mod;

        if (!dw->frame_pc(state, &pc, &activation))
                return DWARF_CB_ABORT;
        if (w->out->n > 0) {
                /* This frame came from the one before by its CFI, or by libdwfl's frame-pointer
                 * guess (backends' x86_64_unwind) where there was none: refuse the guess. */
                UnwindEnd why = w->read_missed ? UNWIND_END_STACK_COPY : cfi_lacking(dw, w->prev_mod, w->prev_pc);

                if (why != _UNWIND_END_MAX) {
                        w->out->end = why;
                        return DWARF_CB_ABORT;
                }
        }
        if (w->out->n == UNWIND_FRAMES_MAX) {
                w->out->end = UNWIND_END_DEPTH;
                return DWARF_CB_ABORT;
        }
        /* A return address is the instruction after the call: looked up one byte before, in the
         * call's function (as libdwfl's own unwinding does, frame_unwind.c). */
        lookup = activation ? pc : pc - 1;
        mod = dw->addrmodule(p->dwfl, lookup);
        frame_describe(p, mod, pc, lookup, &w->out->frames[w->out->n++]);
        w->out->end_pc = pc;
        w->prev_mod = mod;
        w->prev_pc = lookup;
        w->read_missed = false;
        return DWARF_CB_OK;
}

static bool sample_usable(const PerfSample *s) {
        for (size_t i = 0; i < ELEMENTSOF(dwarf_from_perf); i++)
                if (!(s->regs_mask & (UINT64_C(1) << dwarf_from_perf[i])))
                        return false;
        return s->regs_abi == PERF_SAMPLE_REGS_ABI_64 && s->stack && s->stack_dyn_size > 0;
}

int unwind_sample(UnwindProc *p, const PerfSample *s, UnwindStack *ret) {
        Walk w = { .out = ret, .sample = s };
        int r;

        ret->n = 0;
        ret->end = UNWIND_END_NO_REGS;
        ret->end_pc = 0;
        if (s->id.pid != (uint32_t) p->pid)
                return -EINVAL;
        if (!sample_usable(s))
                return 0;
        ret->end = _UNWIND_END_MAX;
        p->walk = &w;
        r = p->dw->getthread_frames(p->dwfl, (pid_t) s->id.tid, on_frame, p);
        p->walk = NULL;
        if (ret->end != _UNWIND_END_MAX)
                return 0; /* on_frame() said why */
        if (r == 0)
                ret->end = UNWIND_END_OUTERMOST;
        else if (w.read_missed)
                ret->end = UNWIND_END_STACK_COPY;
        else {
                UnwindEnd why = ret->n ? cfi_lacking(p->dw, w.prev_mod, w.prev_pc) : UNWIND_END_ERROR;
                ret->end = why == _UNWIND_END_MAX ? UNWIND_END_ERROR : why;
        }
        return 0;
}

static Dwfl_Callbacks dwfl_callbacks_of(const DwApi *dw) {
        return (Dwfl_Callbacks) {
                .find_elf = find_elf,
                .find_debuginfo = find_debuginfo,
                .section_address = dw->offline_section_address,
        };
}

/* Whether row continues module m: the same file, after it. */
static bool module_continues(const Module *m, const ProcMap *row) {
        return !m->vdso && row->deleted == m->deleted && row->inode == m->inode && row->dev_major == m->dev_major &&
               row->dev_minor == m->dev_minor && row->start >= m->pub.high && strcmp(row->path, m->path) == 0;
}

/* A module per file mapped (its rows from the first to the last), and the vDSO. The module
 * starts where the file's offset 0 is (libdwfl takes the load bias from it and the first
 * PT_LOAD); the mapping named for map_files is its first executable one, or else its first. */
static int module_add(UnwindProc *p, const ProcMap *row, bool vdso) {
        Module *m = &p->modules[p->n_modules];
        char *path = strdup(row->path);

        if (!path)
                return -ENOMEM;
        *m = (Module) {
                .pub = { .path = path, .low = row->start - row->offset, .high = row->end },
                .map_start = row->start,
                .map_end = row->end,
                .exec_named = row->exec,
                .dev_major = row->dev_major,
                .dev_minor = row->dev_minor,
                .inode = row->inode,
                .vdso = vdso,
                .deleted = row->deleted,
                .path = path,
                .proc = p,
        };
        p->n_modules++;
        return 0;
}

static int modules_build(UnwindProc *p, const ProcMaps *maps) {
        p->modules = calloc(MIN(maps->n, (size_t) UNWIND_MODULES_MAX) + 1, sizeof *p->modules);
        if (!p->modules)
                return -ENOMEM;
        for (size_t i = 0; i < maps->n; i++) {
                const ProcMap *row = &maps->rows[i];
                bool vdso = strcmp(row->path, "[vdso]") == 0;
                Module *m = p->n_modules ? &p->modules[p->n_modules - 1] : NULL;
                int r;

                if (!vdso && (row->inode == 0 || row->path[0] != '/' || row->path_cut))
                        continue;
                if (m && module_continues(m, row)) {
                        m->pub.high = row->end;
                        if (row->exec && !m->exec_named) {
                                m->map_start = row->start;
                                m->map_end = row->end;
                                m->exec_named = true;
                        }
                        continue;
                }
                /* Where its offset 0 would be is below 0 or inside the module before: not a file
                 * mapped the way a loader maps one; left out rather than placed wrong. */
                if (row->offset > row->start || (m && row->start - row->offset < m->pub.high))
                        continue;
                if (p->n_modules == UNWIND_MODULES_MAX) {
                        p->truncated = true;
                        break;
                }
                r = module_add(p, row, vdso);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int modules_report(UnwindProc *p) {
        const DwApi *dw = p->dw;

        dw->report_begin(p->dwfl);
        for (size_t i = 0; i < p->n_modules; i++) {
                Module *m = &p->modules[i];
                Dwfl_Module *mod = dw->report_module(p->dwfl, m->path, m->pub.low, m->pub.high);
                void **ud = NULL;

                if (!mod)
                        return -ENOMEM;
                (void) dw->module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
                if (ud)
                        *ud = m;
        }
        return dw->report_end(p->dwfl, NULL, NULL) == 0 ? 0 : -ENOMEM;
}

int unwind_proc_new(int proc_fd, int root_fd, pid_t pid, UnwindProc **ret) {
        _cleanup_(unwind_proc_freep) UnwindProc *p = NULL;
        ProcMaps maps = {};
        int r;

        if (!unwind_available())
                return -EOPNOTSUPP;
        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        *p = (UnwindProc) { .dw = dwapi_get(), .proc_fd = proc_fd, .root_fd = root_fd, .pid = pid };
        r = procmaps_read(proc_fd, pid, &maps);
        if (r < 0)
                return r;
        r = modules_build(p, &maps);
        procmaps_clear(&maps);
        if (r < 0)
                return r;
        p->callbacks = dwfl_callbacks_of(p->dw);
        p->dwfl = p->dw->begin(&p->callbacks);
        if (!p->dwfl)
                return -ENOMEM;
        r = modules_report(p);
        if (r < 0)
                return r;
        /* The machine from the vDSO's ELF (ours), so that no module of the process is opened for it. */
        p->arch_elf = vdso_elf(p->dw);
        if (!p->dw->attach_state(p->dwfl, p->arch_elf, pid, &thread_callbacks, p))
                return -EOPNOTSUPP;
        *ret = TAKE_PTR(p);
        return 0;
}

UnwindProc *unwind_proc_free(UnwindProc *p) {
        if (!p)
                return NULL;
        if (p->dwfl)
                p->dw->end(p->dwfl);
        if (p->arch_elf)
                p->dw->elf_end(p->arch_elf);
        for (size_t i = 0; i < p->n_modules; i++) {
                free(p->modules[i].path);
                symtab_clear(&p->modules[i].symtab);
        }
        free(p->modules);
        free(p);
        return NULL;
}

pid_t unwind_proc_pid(const UnwindProc *p) {
        return p->pid;
}

size_t unwind_proc_n_modules(const UnwindProc *p) {
        return p->n_modules;
}

const UnwindModule *unwind_proc_module(const UnwindProc *p, size_t i) {
        return i < p->n_modules ? &p->modules[i].pub : NULL;
}

bool unwind_proc_truncated(const UnwindProc *p) {
        return p->truncated;
}

#else

int unwind_proc_new(int proc_fd, int root_fd, pid_t pid, UnwindProc **ret) {
        (void) proc_fd, (void) root_fd, (void) pid, (void) ret;
        return -EOPNOTSUPP;
}

UnwindProc *unwind_proc_free(UnwindProc *p) {
        assert(!p);
        return NULL;
}

pid_t unwind_proc_pid(const UnwindProc *p) {
        (void) p;
        return 0;
}

size_t unwind_proc_n_modules(const UnwindProc *p) {
        (void) p;
        return 0;
}

const UnwindModule *unwind_proc_module(const UnwindProc *p, size_t i) {
        (void) p, (void) i;
        return NULL;
}

bool unwind_proc_truncated(const UnwindProc *p) {
        (void) p;
        return false;
}

int unwind_sample(UnwindProc *p, const PerfSample *s, UnwindStack *ret) {
        (void) p, (void) s;
        ret->n = 0;
        ret->end = UNWIND_END_NO_REGS;
        ret->end_pc = 0;
        return -EOPNOTSUPP;
}

#endif
