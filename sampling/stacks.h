/* SPDX-License-Identifier: MIT */
/* The on-cpu stacks of a sample's window (docs/stacks.md): a StackCapture opens the perf sampling
 * events of one cgroup2 cgroup, or of the node, on every online cpu when a sample starts
 * (probes/perfring.h), reads their rings on the event loop as they fill, and unwinds each sample
 * as it is read, while its process lives (probes/unwind.h: one UnwindProc per process, made at its
 * first sample); kernel frames are named from /proc/kallsyms (probes/kallsyms.h, read once), a
 * pc in no module (JIT code) from the process's /tmp/perf-PID.map (probes/jitmap.h). Equal
 * stacks of a process are counted once. At the stop the events are closed and every UnwindProc
 * freed (their fds and libdwfl sessions): what the incident needs (names, modules, build-ids) is
 * copied out first, so nothing stays open between samples and an idle agent has no event open.
 * Bounded: STACKS_PROCS_MAX processes unwound, STACKS_UNIQUE_MAX distinct stacks a process and
 * STACKS_FRAMES_MAX frames in all; what is past a bound is counted, never dropped silently.
 * Logs nothing; why a capture could not run is its error. */
#pragma once

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timeutil.h"
#include "probes/perfring.h"
#include "probes/unwind.h"

#define STACKS_HZ_MAX PERFRING_FREQ_MAX_HZ
#define STACKS_PROCS_MAX 64      /* processes whose samples are unwound in one capture */
#define STACKS_UNIQUE_MAX 256    /* distinct stacks kept a process; the rest counted in its other */
#define STACKS_FRAMES_MAX 131072 /* frames kept in all (32 bytes each) */
#define STACKS_MODULES_MAX 1024  /* distinct modules (files, the kernel and its modules) named */
#define STACKS_STACK_BYTES 16384 /* of user stack copied with each sample */
#define STACKS_RING_PAGES 64     /* data pages a cpu: 256 KiB, about 15 samples of 16 KiB */
#define STACKS_NAME_POOL_MAX (4u << 20)
/* The loop time a capture may spend unwinding (opening modules, reading their symbols, walking
 * CFI): past it, samples keep their kernel frames and sampled pc, not unwound, and are counted. */
#define STACKS_UNWIND_BUDGET_US 250000

/* One frame, innermost first in its stack: the kernel's frames, then the user's. */
typedef struct StackFrame {
        uint64_t address; /* user: the pc in its module's own addresses (0 without one); kernel: 0 (an address would
                             tell where the kernel is loaded) */
        uint32_t name;    /* into StackCapture.names, or STACK_NO_NAME */
        uint32_t offset;  /* from the symbol's start */
        int32_t module;   /* into StackCapture.modules, or -1 */
        bool kernel;
} StackFrame;

#define STACK_NO_NAME UINT32_MAX

typedef enum StackEnd {
        STACK_END_UNWOUND,     /* the user stack unwound: see user_end */
        STACK_END_KERNEL,      /* a kernel thread: no user stack */
        STACK_END_NOT_UNWOUND, /* the process's user stack was not unwound (its error, or no unwinder): the sampled pc
                                  alone */
} StackEnd;

typedef struct StackEntry {
        uint64_t hash;
        uint32_t count;
        uint32_t first; /* into StackCapture.frames */
        uint16_t n_frames;
        StackEnd how;
        UnwindEnd user_end; /* with STACK_END_UNWOUND: where the walk ended */
} StackEntry;

typedef struct StackProc {
        pid_t pid;
        char comm[16];
        uint32_t samples;
        uint32_t other;   /* samples of stacks past STACKS_UNIQUE_MAX or STACKS_FRAMES_MAX */
        int unwind_error; /* why its user stacks were not unwound (-EACCES, -ESRCH, -EOPNOTSUPP...), or 0 */
        UnwindProc *unwind;
        struct JitMap *jit; /* its /tmp/perf-PID.map, read at its first pc in no module */
        bool jit_tried;
        StackEntry *stacks;
        size_t n_stacks, cap_stacks;
} StackProc;

typedef struct StackModule {
        uint32_t path; /* into names: as the maps name it (a label), "[kernel]" or "[MODULE]" for the kernel's */
        bool kernel;
        uint8_t build_id_size;
        uint8_t build_id[UNWIND_BUILD_ID_MAX];
        bool debug_file;
} StackModule;

typedef struct StackCaptureOptions {
        uint32_t hz;        /* 1 to STACKS_HZ_MAX */
        int cgroup_fd;      /* a cgroup2 directory, or -1: every task of the node */
        int root_fd;        /* the host's root: the online cpus, debug files */
        int proc_fd;        /* the host's /proc */
        pid_t exclude_tgid; /* the agent: its own samples are not kept */
} StackCaptureOptions;

typedef struct StackCapture {
        struct ev_loop *loop;
        StackCaptureOptions o;
        PerfRing *ring;
        ev_io *ios;
        size_t n_ios;
        bool running;
        bool taken; /* a capture ran (or was tried) for the sample: its result or error stands */
        int error;  /* why there is no capture (perfring_open()'s, -EOPNOTSUPP...), 0 */
        PerfRingInfo info;
        int kernel_names_error; /* why kernel frames are unnamed (-EPERM: kptr_restrict hides kallsyms), 0 */
        bool unwinder;          /* libdw was there */
        usec_t start_mono_us, end_mono_us;
        uint64_t samples, idle, own, unkept; /* unkept: of processes past STACKS_PROCS_MAX */
        uint64_t lost, malformed;
        uint64_t unwind_us;   /* spent unwinding */
        uint64_t stop_us;     /* spent in stack_capture_stop(): the last records, the unwinders freed */
        uint64_t over_budget; /* samples not unwound: past STACKS_UNWIND_BUDGET_US */
        StackProc *procs;
        size_t n_procs, cap_procs;
        StackFrame *frames;
        size_t n_frames, cap_frames;
        StackModule *modules;
        size_t n_modules, cap_modules;
        char *names; /* NUL-terminated strings, at offsets */
        size_t n_names, cap_names;
        struct StackNameSlot *slots; /* the names interned while the capture runs, by pointer */
        size_t n_slots, cap_slots;
        UnwindStack *scratch;
} StackCapture;

/* Opens and enables the events of o on every online cpu, watched on loop; whatever the previous
 * capture held is cleared first. 0, or -errno (the capture's error too: -EACCES or -EPERM when
 * perf_event_paranoid refuses it without CAP_PERFMON, -EOPNOTSUPP off x86-64...). */
int stack_capture_start(StackCapture *c, struct ev_loop *loop, const StackCaptureOptions *o);
/* Reads what the rings hold, closes the events and frees the processes' unwinders, keeping the
 * stacks, names and modules until the next start or stack_capture_done(). NULL-safe on a zeroed
 * or stopped capture. */
void stack_capture_stop(StackCapture *c);
void stack_capture_done(StackCapture *c);

/* The processes in the order of their samples, most first (sorted by stack_capture_stop()), and
 * each process's stacks, most counted first. */
const StackProc *stack_capture_find(const StackCapture *c, pid_t pid);
static inline const char *stack_capture_name(const StackCapture *c, uint32_t off) {
        return off == STACK_NO_NAME ? NULL : c->names + off;
}
