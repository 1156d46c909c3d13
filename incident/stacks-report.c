/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "incident/jsonutil.h"
#include "incident/stacks-report.h"

const char *stacks_report_error(int error, char *buf, size_t size) {
        switch (error) {
        case -EACCES:
        case -EPERM:
                snprintf(buf, size,
                         "perf_event_open refused (%s): cpu-wide and cgroup sampling need CAP_PERFMON "
                         "(or CAP_SYS_ADMIN), or kernel.perf_event_paranoid at 0 or below",
                         strerror(-error));
                break;
        case -EOPNOTSUPP:
                snprintf(buf, size, "stacks are taken on x86-64 only");
                break;
        case -ENOENT:
        case -ENOSYS:
                snprintf(buf, size, "this kernel has no perf events (%s)", strerror(-error));
                break;
        default:
                snprintf(buf, size, "perf_event_open: %s", strerror(error < 0 ? -error : error));
        }
        return buf;
}

static json_t *error_string(int error) {
        char buf[256];

        return error ? json_string(stacks_report_error(error, buf, sizeof buf)) : json_null();
}

const char *stacks_report_kernel_names(int error, char *buf, size_t size) {
        if (error == -EPERM)
                snprintf(buf, size, "/proc/kallsyms hides its addresses (kernel.kptr_restrict, or no CAP_SYSLOG)");
        else
                snprintf(buf, size, "/proc/kallsyms: %s", strerror(error < 0 ? -error : error));
        return buf;
}

static json_t *kernel_names_string(int error) {
        char buf[200];

        return error ? json_string(stacks_report_kernel_names(error, buf, sizeof buf)) : json_null();
}

static json_t *build_id_string(const StackModule *m) {
        static const char hex[] = "0123456789abcdef";
        char s[2 * UNWIND_BUILD_ID_MAX + 1];

        if (m->build_id_size == 0)
                return json_null();
        for (size_t i = 0; i < m->build_id_size && i < UNWIND_BUILD_ID_MAX; i++) {
                s[2 * i] = hex[m->build_id[i] >> 4];
                s[2 * i + 1] = hex[m->build_id[i] & 15];
        }
        s[2 * MIN((size_t) m->build_id_size, (size_t) UNWIND_BUILD_ID_MAX)] = '\0';
        return json_string(s);
}

static json_t *name_json(const StackCapture *c, uint32_t off) {
        const char *s = stack_capture_name(c, off);

        return s ? json_string_from_bytes(s, strlen(s)) : json_null();
}

static json_t *modules_array(const StackCapture *c) {
        json_t *a = json_array();
        int r = 0;

        for (size_t i = 0; i < c->n_modules; i++) {
                const StackModule *m = &c->modules[i];
                json_t *o = json_object();
                r |= set_new(o, "path", name_json(c, m->path));
                r |= set_new(o, "build_id", build_id_string(m));
                r |= set_new(o, "kernel", json_boolean(m->kernel));
                r |= set_new(o, "debug_file", json_boolean(m->debug_file));
                r |= append_new(a, object_or_null(o, r));
        }
        return object_or_null(a, r);
}

static json_t *frame_object(const StackCapture *c, const StackFrame *f) {
        json_t *o = json_object();
        char addr[24];
        int r = 0;

        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long) f->address);
        r |= set_new(o, "function", name_json(c, f->name));
        r |= set_new(o, "offset", f->name != STACK_NO_NAME ? json_u64(f->offset) : json_null());
        r |= set_new(o, "module", f->module >= 0 ? json_integer(f->module) : json_null());
        r |= set_new(o, "address", !f->kernel && f->module >= 0 ? json_string(addr) : json_null());
        r |= set_new(o, "kernel", json_boolean(f->kernel));
        return object_or_null(o, r);
}

static const char *end_string(const StackEntry *e) {
        switch (e->how) {
        case STACK_END_KERNEL:
                return "kernel_thread";
        case STACK_END_NOT_UNWOUND:
                return "not_unwound";
        default:
                return unwind_end_to_string(e->user_end);
        }
}

static json_t *stack_object(const StackCapture *c, const StackEntry *e) {
        json_t *o = json_object(), *frames = json_array();
        int r = 0;

        for (size_t i = 0; i < e->n_frames; i++)
                r |= append_new(frames, frame_object(c, &c->frames[e->first + i]));
        r |= set_new(o, "count", json_u64(e->count));
        r |= set_new(o, "end", json_string(end_string(e)));
        r |= set_new(o, "frames", object_or_null(frames, r));
        return object_or_null(o, r);
}

static json_t *proc_object(const StackCapture *c, const StackProc *p) {
        json_t *o = json_object(), *stacks = json_array();
        uint64_t shown = 0;
        int r = 0;

        for (size_t i = 0; i < p->n_stacks && i < STACKS_REPORT_STACKS; i++) {
                r |= append_new(stacks, stack_object(c, &p->stacks[i]));
                shown += p->stacks[i].count;
        }
        r |= set_new(o, "pid", json_integer(p->pid));
        r |= set_new(o, "comm", json_string_from_bytes(p->comm, strnlen(p->comm, sizeof p->comm)));
        r |= set_new(o, "samples", json_u64(p->samples));
        /* Samples in stacks not written: past the ones shown, or past the capture's bounds. */
        r |= set_new(o, "other_samples", json_u64(p->samples > shown ? p->samples - shown : 0));
        r |= set_new(o, "unwind_error", p->unwind_error ? json_string(strerror(-p->unwind_error)) : json_null());
        r |= set_new(o, "stacks", object_or_null(stacks, r));
        return object_or_null(o, r);
}

static bool is_named(pid_t pid, const pid_t *named, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (named[i] == pid)
                        return true;
        return false;
}

static json_t *procs_array(const StackCapture *c, const pid_t *named, size_t n_named) {
        json_t *a = json_array();
        int r = 0;

        for (size_t i = 0; i < c->n_procs; i++)
                if (i < STACKS_REPORT_PROCS || is_named(c->procs[i].pid, named, n_named))
                        r |= append_new(a, proc_object(c, &c->procs[i]));
        return object_or_null(a, r);
}

json_t *stacks_report_object(const StackCapture *c, const char *scope, const pid_t *named, size_t n_named) {
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "hz", json_u64(c->o.hz));
        r |= set_new(o, "scope", cgroup_string(scope));
        r |= set_new(o, "duration_ms", json_u64((c->end_mono_us - c->start_mono_us + 500) / 1000));
        r |= set_new(o, "error", error_string(c->error));
        r |= set_new(o, "kernel_callchains", json_boolean(c->error == 0 && c->info.kernel_callchains));
        r |= set_new(o, "kernel_names", kernel_names_string(c->kernel_names_error));
        r |= set_new(o, "unwinder", json_boolean(c->unwinder));
        r |= set_new(o, "samples", json_u64(c->samples));
        r |= set_new(o, "idle_samples", json_u64(c->idle));
        r |= set_new(o, "unkept_samples", json_u64(c->unkept));
        r |= set_new(o, "lost", json_u64(c->lost));
        r |= set_new(o, "unwind_ms", json_u64((c->unwind_us + 500) / 1000));
        r |= set_new(o, "over_budget_samples", json_u64(c->over_budget));
        r |= set_new(o, "end_ms", json_u64((c->stop_us + 500) / 1000));
        r |= set_new(o, "modules", modules_array(c));
        r |= set_new(o, "processes", procs_array(c, named, n_named));
        return object_or_null(o, r);
}
