/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "probes/jitmap.h"
#include "probes/kallsyms.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "sampling/stacks.h"

/* The kernel's symbols, read at the first capture and kept for the agent's life (a few MiB): the
 * file is the same for every capture but for modules loaded since, whose frames have no name. */
static KallSyms *kernel_syms;
static int kernel_syms_error;
static bool kernel_syms_tried;

static void kernel_syms_get(int proc_fd) {
        if (kernel_syms_tried)
                return;
        kernel_syms_tried = true;
        kernel_syms_error = kallsyms_load(proc_fd, &kernel_syms);
        if (kernel_syms_error > 0)
                kernel_syms_error = 0;
}

/* A name pointer (an UnwindProc's symbol or module path, a kallsyms name) is copied into names
 * once a capture: an open-addressed table of the pointers seen. They stay valid while the capture
 * runs (the UnwindProcs live until the stop; the kernel's names always). */
typedef struct StackNameSlot {
        const char *ptr;
        uint32_t off;
} StackNameSlot;

static size_t slot_of(const char *ptr, size_t cap) {
        uint64_t h = (uint64_t) (uintptr_t) ptr * 0x9e3779b97f4a7c15ULL;
        return (size_t) (h >> 24) & (cap - 1);
}

static int slots_grow(StackCapture *c) {
        size_t cap = c->cap_slots ? c->cap_slots * 2 : 4096;
        StackNameSlot *t = calloc(cap, sizeof *t);

        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < c->cap_slots; i++) {
                if (!c->slots[i].ptr)
                        continue;
                size_t j = slot_of(c->slots[i].ptr, cap);
                while (t[j].ptr)
                        j = (j + 1) & (cap - 1);
                t[j] = c->slots[i];
        }
        free(c->slots);
        c->slots = t;
        c->cap_slots = cap;
        return 0;
}

static uint32_t name_append(StackCapture *c, const char *s) {
        size_t len = strnlen(s, 511);

        if (c->n_names + len + 1 > STACKS_NAME_POOL_MAX ||
            array_reserve((void **) &c->names, &c->cap_names, c->n_names + len + 1, 1) < 0)
                return STACK_NO_NAME;
        uint32_t off = (uint32_t) c->n_names;
        memcpy(c->names + off, s, len);
        c->names[off + len] = '\0';
        c->n_names += len + 1;
        return off;
}

static uint32_t name_intern(StackCapture *c, const char *ptr) {
        if (!ptr)
                return STACK_NO_NAME;
        if ((c->n_slots + 1) * 2 > c->cap_slots && slots_grow(c) < 0)
                return name_append(c, ptr);
        size_t j = slot_of(ptr, c->cap_slots);
        while (c->slots[j].ptr && c->slots[j].ptr != ptr)
                j = (j + 1) & (c->cap_slots - 1);
        if (c->slots[j].ptr)
                return c->slots[j].off;
        uint32_t off = name_append(c, ptr);
        if (off != STACK_NO_NAME) {
                c->slots[j] = (StackNameSlot) { ptr, off };
                c->n_slots++;
        }
        return off;
}

static int32_t module_add(StackCapture *c, const StackModule *m) {
        for (size_t i = 0; i < c->n_modules; i++) {
                const StackModule *o = &c->modules[i];
                if (o->kernel == m->kernel && o->build_id_size == m->build_id_size &&
                    memcmp(o->build_id, m->build_id, m->build_id_size) == 0 &&
                    strcmp(c->names + o->path, c->names + m->path) == 0)
                        return (int32_t) i;
        }
        if (c->n_modules >= STACKS_MODULES_MAX ||
            array_reserve((void **) &c->modules, &c->cap_modules, c->n_modules + 1, sizeof *c->modules) < 0)
                return -1;
        c->modules[c->n_modules] = *m;
        return (int32_t) c->n_modules++;
}

/* A module named by a label, not a file ("[kernel]", "[ext4]", "[jit]"): found, or added. */
static int32_t label_module(StackCapture *c, const char *label, bool kernel) {
        for (size_t i = 0; i < c->n_modules; i++)
                if (c->modules[i].kernel == kernel && strcmp(c->names + c->modules[i].path, label) == 0)
                        return (int32_t) i;
        StackModule m = { .kernel = kernel, .path = name_append(c, label) };
        return m.path == STACK_NO_NAME ? -1 : module_add(c, &m);
}

/* The kernel's module of a frame: "[kernel]" for the core kernel, "[ext4]" for a module. */
static int32_t kernel_module(StackCapture *c, const char *kmod) {
        char label[80];

        snprintf(label, sizeof label, "[%.64s]", kmod ? kmod : "kernel");
        return label_module(c, label, true);
}

/* The capture's module of a process's UnwindModule (its path and build-id copied). */
static int32_t user_module(StackCapture *c, const UnwindModule *um) {
        StackModule m = { .path = name_intern(c, um->path),
                          .build_id_size = um->build_id_size,
                          .debug_file = um->debug_file };

        if (m.path == STACK_NO_NAME)
                return -1;
        memcpy(m.build_id, um->build_id, MIN((size_t) um->build_id_size, sizeof m.build_id));
        return module_add(c, &m);
}

static StackProc *proc_get(StackCapture *c, pid_t pid) {
        for (size_t i = 0; i < c->n_procs; i++)
                if (c->procs[i].pid == pid)
                        return &c->procs[i];
        if (c->n_procs >= STACKS_PROCS_MAX ||
            array_reserve((void **) &c->procs, &c->cap_procs, c->n_procs + 1, sizeof *c->procs) < 0)
                return NULL;
        StackProc *p = &c->procs[c->n_procs++];
        *p = (StackProc) { .pid = pid };
        if (proc_read_comm(c->o.proc_fd, pid, p->comm, sizeof p->comm) < 0)
                p->comm[0] = '\0';
        /* Made while the process lives, at its first sample: its maps now. */
        p->unwind_error = c->unwinder ? unwind_proc_new(c->o.proc_fd, c->o.root_fd, pid, &p->unwind) : -EOPNOTSUPP;
        if (p->unwind_error > 0)
                p->unwind_error = 0;
        return p;
}

static uint64_t mix(uint64_t h, uint64_t v) {
        h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        return h * 0xff51afd7ed558ccdULL;
}

/* The pcs of one sample, kernel first, what its stack is told apart by; the user frames unwound
 * are in the capture's scratch until the stack is kept or counted. */
typedef struct SampleFrames {
        size_t n;
        uint64_t pcs[PERFSAMPLE_IPS_MAX + UNWIND_FRAMES_MAX]; /* what the hash is of */
        StackEnd how;
        UnwindEnd user_end;
        size_t n_kernel;
} SampleFrames;

static void sample_frames(StackCapture *c, StackProc *p, const PerfSample *s, SampleFrames *f) {
        f->n = 0;
        for (size_t i = 0; i < s->n_kernel_ips; i++)
                f->pcs[f->n++] = s->kernel_ips[i];
        f->n_kernel = f->n;
        f->user_end = UNWIND_END_OUTERMOST;
        if (s->regs_abi == PERF_SAMPLE_REGS_ABI_NONE && s->n_user_ips == 0) {
                f->how = STACK_END_KERNEL;
                return;
        }
        if (p->unwind && c->unwind_us >= STACKS_UNWIND_BUDGET_US)
                c->over_budget++;
        else if (p->unwind) {
                usec_t t0 = now_usec(CLOCK_MONOTONIC);
                unwind_sample(p->unwind, s, c->scratch);
                c->unwind_us += now_usec(CLOCK_MONOTONIC) - t0;
                f->how = STACK_END_UNWOUND;
                f->user_end = c->scratch->end;
                for (size_t i = 0; i < c->scratch->n; i++)
                        f->pcs[f->n++] = c->scratch->frames[i].pc;
                return;
        }
        /* No unwinder: the sampled user pc is real; the kernel's frame-pointer chain past it is
         * not, in code without frame pointers. */
        f->how = STACK_END_NOT_UNWOUND;
        if (s->n_user_ips > 0)
                f->pcs[f->n++] = s->user_ips[0];
}

static uint64_t frames_hash(const SampleFrames *f) {
        uint64_t h = mix(mix(0, f->n), ((uint64_t) f->how << 8) | f->user_end);

        for (size_t i = 0; i < f->n; i++)
                h = mix(h, f->pcs[i]);
        return h ? h : 1;
}

static void frame_kernel(StackCapture *c, uint64_t ip, StackFrame *out) {
        const char *kmod = NULL;
        uint64_t off = 0;
        const char *name = kernel_syms ? kallsyms_find(kernel_syms, ip, &off, &kmod) : NULL;

        *out = (StackFrame) { .kernel = true,
                              .name = name_intern(c, name),
                              .offset = (uint32_t) MIN(off, (uint64_t) UINT32_MAX),
                              .module = name ? kernel_module(c, kmod) : -1 };
}

/* A pc no symbol names: JIT code (in no module), or code a runtime generated into its own binary
 * (Node's builtins), named by the process's perf map (read once, within the budget). */
static void frame_jit(StackCapture *c, StackProc *p, uint64_t pc, bool activation, StackFrame *out) {
        uint64_t off = 0;

        if (!p->jit_tried) {
                usec_t t0 = now_usec(CLOCK_MONOTONIC);
                p->jit_tried = true;
                if (jitmap_load(c->o.proc_fd, p->pid, &p->jit) < 0)
                        p->jit = NULL;
                c->unwind_us += now_usec(CLOCK_MONOTONIC) - t0;
        }
        const char *name = p->jit ? jitmap_find(p->jit, activation ? pc : pc - 1, &off) : NULL;
        if (!name)
                return;
        if (out->module < 0) {
                out->module = label_module(c, "[jit]", false);
                out->address = pc;
        }
        out->name = name_intern(c, name);
        out->offset = (uint32_t) MIN(off, (uint64_t) UINT32_MAX);
}

static void frame_user(StackCapture *c, StackProc *p, const SampleFrames *f, size_t i, StackFrame *out) {
        *out = (StackFrame) { .name = STACK_NO_NAME, .module = -1 };
        if (f->how != STACK_END_UNWOUND) {
                out->address = 0; /* the process's own address means nothing without its maps */
                return;
        }
        const UnwindFrame *u = &c->scratch->frames[i];
        const UnwindModule *um = u->module >= 0 ? unwind_proc_module(p->unwind, (size_t) u->module) : NULL;
        if (um) {
                out->address = u->module_pc;
                out->name = name_intern(c, u->symbol);
                out->offset = (uint32_t) MIN(u->symbol_offset, (uint64_t) UINT32_MAX);
                out->module = user_module(c, um);
        }
        if (out->name == STACK_NO_NAME)
                frame_jit(c, p, u->pc, i == 0, out);
}

/* A new distinct stack of p, its frames copied in; false past a bound. */
static bool stack_add(StackCapture *c, StackProc *p, const SampleFrames *f, uint64_t hash) {
        if (p->n_stacks >= STACKS_UNIQUE_MAX || c->n_frames + f->n > STACKS_FRAMES_MAX ||
            array_reserve((void **) &p->stacks, &p->cap_stacks, p->n_stacks + 1, sizeof *p->stacks) < 0 ||
            array_reserve((void **) &c->frames, &c->cap_frames, c->n_frames + f->n, sizeof *c->frames) < 0)
                return false;
        StackEntry *e = &p->stacks[p->n_stacks++];
        *e = (StackEntry) { .hash = hash,
                            .count = 1,
                            .first = (uint32_t) c->n_frames,
                            .n_frames = (uint16_t) f->n,
                            .how = f->how,
                            .user_end = f->user_end };
        for (size_t i = 0; i < f->n; i++) {
                StackFrame *out = &c->frames[c->n_frames + i];
                if (i < f->n_kernel)
                        frame_kernel(c, f->pcs[i], out);
                else
                        frame_user(c, p, f, i - f->n_kernel, out);
        }
        c->n_frames += f->n;
        return true;
}

static void on_sample(StackCapture *c, const PerfSample *s) {
        SampleFrames f;

        if (s->id.pid == 0) {
                c->idle++;
                return;
        }
        if ((pid_t) s->id.pid == c->o.exclude_tgid) {
                c->own++;
                return;
        }
        StackProc *p = proc_get(c, (pid_t) s->id.pid);
        if (!p) {
                c->unkept++;
                return;
        }
        c->samples++;
        p->samples++;
        sample_frames(c, p, s, &f);
        uint64_t hash = frames_hash(&f);
        for (size_t i = 0; i < p->n_stacks; i++)
                if (p->stacks[i].hash == hash && p->stacks[i].n_frames == f.n) {
                        p->stacks[i].count++;
                        return;
                }
        if (!stack_add(c, p, &f, hash))
                p->other++;
}

static void on_record(const PerfRecord *r, void *userdata) {
        StackCapture *c = userdata;

        if (r->kind == PERF_REC_SAMPLE)
                on_sample(c, &r->sample);
        else if (r->kind == PERF_REC_COMM && r->comm.pid == r->comm.tid) {
                for (size_t i = 0; i < c->n_procs; i++)
                        if (c->procs[i].pid == (pid_t) r->comm.pid)
                                snprintf(c->procs[i].comm, sizeof c->procs[i].comm, "%s", r->comm.comm);
        }
}

static void on_io(struct ev_loop *loop, ev_io *io, int revents) {
        StackCapture *c = io->data;

        if (c->ring)
                perfring_read(c->ring, on_record, c);
}

static void procs_free(StackCapture *c) {
        for (size_t i = 0; i < c->n_procs; i++) {
                c->procs[i].unwind = unwind_proc_free(c->procs[i].unwind);
                c->procs[i].jit = jitmap_free(c->procs[i].jit);
                free(c->procs[i].stacks);
        }
        c->n_procs = 0;
}

static void capture_clear(StackCapture *c) {
        procs_free(c);
        c->n_frames = c->n_modules = c->n_names = 0;
        if (c->slots)
                memset(c->slots, 0, c->cap_slots * sizeof *c->slots);
        c->n_slots = 0;
        c->samples = c->idle = c->own = c->unkept = c->lost = c->malformed = c->unwind_us = c->over_budget =
                c->stop_us = 0;
        c->error = c->kernel_names_error = 0;
        c->info = (PerfRingInfo) {};
        c->taken = false;
}

static int online_cpus(int root_fd, int *cpus, size_t *ret_n) {
        _cleanup_free_ char *list = NULL;
        int r = system_read_cpus_online(root_fd, &list);

        if (r < 0)
                return r;
        r = system_cpulist_expand(list, cpus, PERFRING_CPUS_MAX);
        if (r <= 0)
                return r < 0 ? r : -ENODATA;
        *ret_n = (size_t) r;
        return 0;
}

static int watch_rings(StackCapture *c) {
        size_t n;
        const int *fds = perfring_fds(c->ring, &n);

        c->ios = calloc(n, sizeof *c->ios);
        if (!c->ios)
                return -ENOMEM;
        c->n_ios = n;
        for (size_t i = 0; i < n; i++) {
                ev_io_init(&c->ios[i], on_io, fds[i], EV_READ);
                c->ios[i].data = c;
                ev_io_start(c->loop, &c->ios[i]);
        }
        return 0;
}

static void close_events(StackCapture *c) {
        for (size_t i = 0; i < c->n_ios; i++)
                ev_io_stop(c->loop, &c->ios[i]);
        c->ios = mfree(c->ios);
        c->n_ios = 0;
        c->ring = perfring_free(c->ring);
}

static int capture_open(StackCapture *c) {
        int cpus[PERFRING_CPUS_MAX];
        size_t n_cpus = 0;
        int r = online_cpus(c->o.root_fd, cpus, &n_cpus);

        if (r < 0)
                return r;
        PerfRingOptions po = { .cpus = cpus,
                               .n_cpus = n_cpus,
                               .cgroup_fd = c->o.cgroup_fd,
                               .tid = 0,
                               .freq_hz = c->o.hz,
                               .stack_bytes = STACKS_STACK_BYTES,
                               .ring_pages = STACKS_RING_PAGES };
        if (!c->scratch && !(c->scratch = malloc(sizeof *c->scratch)))
                return -ENOMEM;
        r = perfring_open(&po, &c->ring);
        if (r < 0)
                return r;
        perfring_info(c->ring, &c->info);
        r = watch_rings(c);
        if (r >= 0)
                r = perfring_enable(c->ring);
        return r;
}

int stack_capture_start(StackCapture *c, struct ev_loop *loop, const StackCaptureOptions *o) {
        stack_capture_stop(c);
        capture_clear(c);
        c->loop = loop;
        c->o = *o;
        c->taken = true;
        if (o->hz == 0 || o->hz > STACKS_HZ_MAX)
                return c->error = -EINVAL;
        c->unwinder = unwind_available();
        kernel_syms_get(o->proc_fd);
        c->kernel_names_error = kernel_syms_error;
        c->start_mono_us = c->end_mono_us = now_usec(CLOCK_MONOTONIC);
        int r = capture_open(c);
        if (r < 0) {
                close_events(c);
                return c->error = r;
        }
        c->running = true;
        return 0;
}

static int cmp_procs(const void *x, const void *y) {
        const StackProc *a = x, *b = y;
        return a->samples != b->samples ? (a->samples < b->samples ? 1 : -1) : (a->pid > b->pid) - (a->pid < b->pid);
}

static int cmp_stacks(const void *x, const void *y) {
        const StackEntry *a = x, *b = y;
        return a->count != b->count ? (a->count < b->count ? 1 : -1) : (a->first > b->first) - (a->first < b->first);
}

void stack_capture_stop(StackCapture *c) {
        if (!c->running)
                return;
        c->running = false;
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        (void) perfring_disable(c->ring);
        perfring_read(c->ring, on_record, c);
        const PerfRingStats *st = perfring_stats(c->ring);
        c->lost = st->lost;
        c->malformed = st->malformed + st->corrupt;
        close_events(c);
        c->end_mono_us = now_usec(CLOCK_MONOTONIC);
        /* What the incident needs is copied out: the unwinders (their fds) go now. */
        for (size_t i = 0; i < c->n_procs; i++) {
                c->procs[i].unwind = unwind_proc_free(c->procs[i].unwind);
                c->procs[i].jit = jitmap_free(c->procs[i].jit);
        }
        if (c->n_procs > 0)
                qsort(c->procs, c->n_procs, sizeof *c->procs, cmp_procs);
        for (size_t i = 0; i < c->n_procs; i++)
                if (c->procs[i].n_stacks > 0)
                        qsort(c->procs[i].stacks, c->procs[i].n_stacks, sizeof *c->procs[i].stacks, cmp_stacks);
        c->stop_us = now_usec(CLOCK_MONOTONIC) - t0;
}

void stack_capture_done(StackCapture *c) {
        if (c->running)
                stack_capture_stop(c);
        close_events(c);
        procs_free(c);
        free(c->procs);
        free(c->frames);
        free(c->modules);
        free(c->names);
        free(c->slots);
        free(c->scratch);
        *c = (StackCapture) {};
}

const StackProc *stack_capture_find(const StackCapture *c, pid_t pid) {
        for (size_t i = 0; i < c->n_procs; i++)
                if (c->procs[i].pid == pid)
                        return &c->procs[i];
        return NULL;
}
