/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/macro.h"
#include "incident/jsonutil.h"
#include "incident/prekill-report.h"

static json_t *opt_u64(bool has, uint64_t v) {
        return has ? json_u64(v) : json_null();
}

static json_t *ms_between(usec_t from, usec_t to) {
        return from && to >= from ? json_u64((to - from) / USEC_PER_MSEC) : json_null();
}

static json_t *delays(const uint64_t *d, const uint64_t *base, uint32_t present) {
        json_t *o = json_object();
        int r = 0;

        for (TaskDelay i = 0; i < _TASK_DELAY_MAX; i++) {
                uint64_t v = base ? (d[i] > base[i] ? d[i] - base[i] : 0) : d[i];
                r |= set_new(o, task_delay_to_string(i),
                             present & TASK_DELAY_MASK(i) ? json_u64(v / NSEC_PER_USEC) : json_null());
        }
        return object_or_null(o, r);
}

static json_t *process_object(const PrekillProcess *p) {
        const ProcMemory *mem = &p->memory;
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "pid", json_integer(p->pid));
        r |= set_new(o, "comm", json_string_from_bytes(p->comm, strnlen(p->comm, sizeof p->comm)));
        r |= set_new(o, "cmdline", p->has_cmdline ? json_string_from_bytes(p->cmdline, p->cmdline_len) : json_null());
        r |= set_new(o, "uid", p->has_memory ? json_integer(mem->uid) : json_null());
        r |= set_new(o, "rss_kib", opt_u64(p->has_memory, mem->rss_kib));
        r |= set_new(o, "anon_kib", opt_u64(p->has_memory, mem->anon_kib));
        r |= set_new(o, "file_kib", opt_u64(p->has_memory, mem->file_kib));
        r |= set_new(o, "shmem_kib", opt_u64(p->has_memory, mem->shmem_kib));
        r |= set_new(o, "swap_kib", opt_u64(p->has_memory, mem->swap_kib));
        r |= set_new(o, "delay_us", p->has_last ? delays(p->last_ns, p->first_ns, p->present) : json_null());
        r |= set_new(o, "delay_total_us",
                     p->has_first ? delays(p->has_last ? p->last_ns : p->first_ns, NULL, p->present) : json_null());
        return object_or_null(o, r);
}

static json_t *memory_object(const PrekillMeasure *pm) {
        const MemoryLimits *m = &pm->memory;
        const MemoryEvents *e = &m->events;
        json_t *o, *ev;
        int r = 0;

        if (!pm->has_memory)
                return json_null();
        o = json_object();
        ev = json_object();
        r |= set_new(o, "source", json_string(limits_source_to_string(m->source)));
        r |= set_new(o, "current_kib", opt_u64(m->has_current, m->current_bytes / 1024));
        r |= set_new(o, "max_kib", opt_u64(m->has_max && m->max_bytes != LIMITS_UNLIMITED, m->max_bytes / 1024));
        r |= set_new(o, "high_kib", opt_u64(m->has_high && m->high_bytes != LIMITS_UNLIMITED, m->high_bytes / 1024));
        r |= set_new(o, "anon_kib", opt_u64(m->has_anon, m->anon_bytes / 1024));
        r |= set_new(o, "file_kib", opt_u64(m->has_file, m->file_bytes / 1024));
        r |= set_new(o, "workingset_refault_anon", opt_u64(m->has_refault_anon, m->refault_anon));
        r |= set_new(o, "workingset_refault_file", opt_u64(m->has_refault_file, m->refault_file));
        r |= set_new(ev, "high", opt_u64(e->has_high, e->high));
        r |= set_new(ev, "max", opt_u64(e->has_max, e->max));
        r |= set_new(ev, "oom", opt_u64(e->has_oom, e->oom));
        r |= set_new(ev, "oom_kill", opt_u64(e->has_oom_kill, e->oom_kill));
        r |= set_new(o, "events", object_or_null(ev, 0));
        return object_or_null(o, r);
}

json_t *prekill_report_object(const PrekillMeasure *m, const char *outcome, usec_t kill_mono_us) {
        char buf[RFC3339_MAX];
        bool killed = strcmp(outcome, "killed") == 0;
        json_t *o = json_object(), *procs = json_array(), *pressure = json_object();
        uint64_t rss = 0, swap = 0;
        int r = 0;

        for (size_t i = 0; i < m->n_procs; i++) {
                rss += m->procs[i].memory.rss_kib;
                swap += m->procs[i].memory.swap_kib;
                if (i < PREKILL_REPORT_LISTED)
                        r |= append_new(procs, process_object(&m->procs[i]));
        }
        r |= set_new(o, "cgroup", json_string_from_bytes(m->cgroup, strnlen(m->cgroup, sizeof m->cgroup)));
        r |= set_new(o, "outcome", json_string(outcome));
        r |= set_new(o, "time", json_string_nocheck(format_rfc3339_us(m->notified_real_us, buf, sizeof buf)));
        r |= set_new(o, "answered_us",
                     m->replied_mono_us ? json_u64(m->replied_mono_us - m->notified_mono_us) : json_null());
        r |= set_new(o, "before_kill_ms", killed ? ms_between(m->notified_mono_us, kill_mono_us) : json_null());
        r |= set_new(o, "window_ms", m->last_mono_us ? ms_between(m->notified_mono_us, m->last_mono_us) : json_null());
        r |= set_new(o, "gone", json_boolean(m->gone));
        r |= set_new(o, "processes_total", json_u64(m->processes_total));
        r |= set_new(o, "rss_kib", json_u64(rss));
        r |= set_new(o, "swap_kib", json_u64(swap));
        r |= set_new(o, "memory", memory_object(m));
        r |= set_new(pressure, "some", incident_pressure_line(&m->pressure, PSI_STALL_SOME));
        r |= set_new(pressure, "full", incident_pressure_line(&m->pressure, PSI_STALL_FULL));
        r |= set_new(o, "pressure",
                     m->has_pressure ? object_or_null(pressure, 0) : (json_decref(pressure), json_null()));
        r |= set_new(o, "processes", procs);
        return object_or_null(o, r);
}
