/* SPDX-License-Identifier: MIT */
/* A process's user stacks, unwound from on-cpu samples (probes/perfsample.h: the user registers
 * and the copy of the user stack each sample carries) with the DWARF CFI of each module it has
 * mapped, and symbolised: elfutils' libdwfl, loaded with dlopen at the first use (a node without
 * libdw1 has no stacks, and nothing else is lost). One UnwindProc per process, opened while it is
 * alive: its maps read once (probes/procmaps.h), each module opened when a pc first falls in it
 * (probes/elfopen.h: the file mapped, by map_files or inside the process's root, checked against
 * the maps' device and inode). A frame is only ever what the CFI gives: libdwfl's frame-pointer guess where
 * a module has no CFI is refused, and the walk says where and why it ended. Symbols come from the
 * module's .symtab or .dynsym, or from a debug file under <root>/usr/lib/debug/.build-id named by
 * the module's build-id; a pc no sized symbol covers has none. Capturing is probes/perfring.h's;
 * merging and naming stacks for an incident is a higher layer's. Never logs. x86-64 only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/perfsample.h"

#define UNWIND_FRAMES_MAX 128
#define UNWIND_MODULES_MAX 512
#define UNWIND_BUILD_ID_MAX 20

typedef enum UnwindEnd {
        UNWIND_END_OUTERMOST,  /* the CFI says there is no caller: the thread's first frame */
        UNWIND_END_NO_MODULE,  /* a pc in no module the maps named (JIT code, a module mapped since) */
        UNWIND_END_NO_ELF,     /* the module could not be opened or read as ELF */
        UNWIND_END_NO_CFI,     /* the module has no CFI for the pc */
        UNWIND_END_STACK_COPY, /* the CFI needed stack past the copy the sample carried */
        UNWIND_END_DEPTH,      /* UNWIND_FRAMES_MAX frames */
        UNWIND_END_NO_REGS,    /* the sample has no 64-bit user registers or no stack copy */
        UNWIND_END_ERROR,      /* the CFI could not be evaluated */
        _UNWIND_END_MAX,
} UnwindEnd;

/* "outermost", "no_module", "no_elf", "no_cfi", "stack_copy", "depth", "no_regs", "error". */
const char *unwind_end_to_string(UnwindEnd e);

typedef struct UnwindFrame {
        uint64_t pc; /* in the process: the sampled ip, then return addresses */
        int module;  /* unwind_proc_module()'s index, or -1 */
        /* pc in the module's own addresses (pc minus its load bias): what `addr2line -e FILE` and
         * a symboliser given the build-id take. 0 without a module. */
        uint64_t module_pc;
        const char *symbol; /* NULL without one; valid while the UnwindProc lives */
        uint64_t symbol_offset;
} UnwindFrame;

typedef struct UnwindStack {
        size_t n;
        UnwindFrame frames[UNWIND_FRAMES_MAX]; /* innermost first */
        UnwindEnd end;
        uint64_t end_pc; /* the pc of the last frame, where the walk ended (0 for no_regs) */
} UnwindStack;

typedef struct UnwindModule {
        const char *path; /* as the maps name it (any user's choice of name): never opened by it alone */
        uint64_t low, high;
        bool opened; /* tried: a pc fell in it */
        int error;   /* why it could not be used (-ENOENT, -ESTALE: not the file mapped...), or 0 */
        uint8_t build_id_size;
        uint8_t build_id[UNWIND_BUILD_ID_MAX];
        bool debug_file; /* symbols from <root>/usr/lib/debug/.build-id */
} UnwindModule;

typedef struct UnwindProc UnwindProc;

/* True when libdw.so.1 could be loaded (once, on the first call). */
bool unwind_available(void);

/* Reads /proc/PID/maps through proc_fd and reports its file-backed modules (and the vDSO, whose
 * image is the agent's own) to a new libdwfl session; past UNWIND_MODULES_MAX modules the first
 * are kept and unwind_proc_truncated() says so. root_fd is the host's root, where debug files
 * are looked for (-1: none). 0; -EOPNOTSUPP without libdw or off x86-64; -ESRCH when the process
 * is gone; -EACCES without ptrace access to it; -ENOMEM. */
int unwind_proc_new(int proc_fd, int root_fd, pid_t pid, UnwindProc **ret);
UnwindProc *unwind_proc_free(UnwindProc *p);
static inline void unwind_proc_freep(UnwindProc **p) {
        unwind_proc_free(*p);
}

pid_t unwind_proc_pid(const UnwindProc *p);
size_t unwind_proc_n_modules(const UnwindProc *p);
const UnwindModule *unwind_proc_module(const UnwindProc *p, size_t i);
bool unwind_proc_truncated(const UnwindProc *p);

/* Unwinds one sample of this process (s->id.pid) from its user registers and stack copy into
 * *ret, innermost frame first. Always fills *ret (its end says how far it got); 0, or -EINVAL
 * when the sample is another process's. */
int unwind_sample(UnwindProc *p, const PerfSample *s, UnwindStack *ret);
