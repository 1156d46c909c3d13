/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "incident/jsonutil.h"
#include "incident/onwhat-report.h"

static json_t *limit_u64(uint64_t v) {
        return v == LIMITS_UNLIMITED ? json_null() : json_u64(v);
}

static json_t *maybe_u64(bool has, uint64_t v) {
        return has ? json_u64(v) : json_null();
}

/* The cgroup's path in its hierarchy, and which hierarchy. */
static int where(json_t *o, const OnWhat *w, const char *path) {
        int r = 0;

        r |= set_new(o, "cgroup", cgroup_string(path));
        r |= set_new(o, "source", json_string(limits_source_to_string(w->loc.source)));
        r |= set_new(o, "limited", json_boolean(w->loc.limited));
        return r;
}

static json_t *cpu_object(const OnWhat *w, bool lifetime, bool has_stall, uint64_t stall_us, uint64_t duration_us) {
        json_t *o = json_object();
        CpuLimits d;
        int r = 0;

        if (lifetime)
                d = w->cpu_b;
        else
                limits_cpu_delta(&w->cpu_a, &w->cpu_b, &d);
        bool quota = d.has_quota && d.quota_us != LIMITS_UNLIMITED;
        r |= where(o, w, w->loc.limited ? w->loc.limited_path : w->loc.path);
        r |= set_new(o, "quota_us", quota ? json_u64(d.quota_us) : json_null());
        r |= set_new(o, "period_us", quota ? json_u64(d.period_us) : json_null());
        r |= set_new(o, "nr_periods", maybe_u64(d.has_stat, d.nr_periods));
        r |= set_new(o, "nr_throttled", maybe_u64(d.has_stat, d.nr_throttled));
        r |= set_new(o, "throttled_us", maybe_u64(d.has_stat, d.throttled_us));
        r |= set_new(o, "verdict",
                     json_string(!quota || !d.has_stat || lifetime
                                         ? "contention"
                                         : onwhat_cpu_verdict(d.throttled_us, has_stall, stall_us, duration_us)));
        return object_or_null(o, r);
}

static json_t *memory_object(const OnWhat *w, bool lifetime) {
        json_t *o = json_object(), *ev = json_object(), *rf = json_object();
        MemoryLimits d;
        int r = 0;

        if (lifetime)
                d = w->mem_b;
        else
                limits_memory_delta(&w->mem_a, &w->mem_b, &d);
        r |= where(o, w, w->loc.limited ? w->loc.limited_path : w->loc.path);
        r |= set_new(o, "max_bytes", d.has_max ? limit_u64(d.max_bytes) : json_null());
        r |= set_new(o, "high_bytes", d.has_high ? limit_u64(d.high_bytes) : json_null());
        r |= set_new(o, "current_bytes", maybe_u64(d.has_current, d.current_bytes));
        r |= set_new(ev, "high", maybe_u64(d.events.has_high, d.events.high));
        r |= set_new(ev, "max", maybe_u64(d.events.has_max, d.events.max));
        r |= set_new(ev, "oom", maybe_u64(d.events.has_oom, d.events.oom));
        r |= set_new(ev, "oom_kill", maybe_u64(d.events.has_oom_kill, d.events.oom_kill));
        r |= set_new(o, "events", ev);
        r |= set_new(rf, "anon", maybe_u64(d.has_refault_anon, d.refault_anon));
        r |= set_new(rf, "file", maybe_u64(d.has_refault_file, d.refault_file));
        r |= set_new(o, "refault", rf);
        r |= set_new(o, "anon_bytes", maybe_u64(d.has_anon, d.anon_bytes));
        r |= set_new(o, "file_bytes", maybe_u64(d.has_file, d.file_bytes));
        r |= set_new(o, "verdict", lifetime ? json_null() : json_string(onwhat_memory_verdict(&d)));
        return object_or_null(o, r);
}

static const IoDeviceLimits *find_device(const IoLimits *io, uint32_t major, uint32_t minor) {
        for (size_t i = 0; i < io->n_devices; i++)
                if (io->devices[i].major == major && io->devices[i].minor == minor)
                        return &io->devices[i];
        return NULL;
}

static json_t *node_devices_array(const DiskBusy *busy, size_t n) {
        json_t *a = json_array();
        int r = 0;

        for (size_t i = 0; i < n; i++) {
                const DiskBusy *b = &busy[i];
                json_t *dev = json_object();

                r |= set_new(dev, "device", json_string_from_bytes(b->name, strlen(b->name)));
                r |= set_new(dev, "major", json_integer(b->major));
                r |= set_new(dev, "minor", json_integer(b->minor));
                r |= set_new(dev, "rbytes", json_u64(b->rbytes));
                r |= set_new(dev, "wbytes", json_u64(b->wbytes));
                r |= set_new(dev, "rios", json_u64(b->rios));
                r |= set_new(dev, "wios", json_u64(b->wios));
                r |= set_new(dev, "util", json_real(b->util));
                r |= set_new(dev, "await_ms", b->await_ms >= 0 ? json_real(b->await_ms) : json_null());
                r |= set_new(dev, "in_flight", json_u64(b->in_flight));
                r |= set_new(dev, "in_flight_start", json_u64(b->in_flight_start));
                r |= set_new(dev, "verdict", json_string(b->stuck ? "stuck" : "serving"));
                r |= append_new(a, dev);
        }
        return object_or_null(a, r);
}

/* The node's page cache waiting for its disks at the end of the sample (probes/diskstats.h). */
static json_t *writeback_object(const NodeDirty *d) {
        json_t *o = json_object();
        int r = 0;

        r |= set_new(o, "dirty_bytes", json_u64(d->dirty_bytes));
        r |= set_new(o, "writeback_bytes", json_u64(d->writeback_bytes));
        return object_or_null(o, r);
}

static json_t *io_object(const OnWhat *w, bool lifetime) {
        json_t *o = json_object(), *devs = json_array();
        const OnWhatDisks *disks = w->disks;
        DiskBusy busy[ONWHAT_NODE_DEVICES_MAX];
        size_t n_busy = 0;
        bool cgroup_io = false;
        IoLimits d;
        int r = 0;

        if (lifetime)
                d = w->io_b;
        else
                limits_io_delta(&w->io_a, &w->io_b, &d);
        r |= where(o, w, w->loc.path);
        r |= set_new(o, "limited_by", w->loc.limited ? cgroup_string(w->loc.limited_path) : json_null());
        for (size_t i = 0; i < d.n_devices; i++) {
                const IoDeviceLimits *v = &d.devices[i];
                /* The rules are the limited cgroup's (the trigger's own when it limits itself). */
                const IoDeviceLimits *rule = w->has_io_max ? find_device(&w->io_max, v->major, v->minor) : v;
                json_t *dev = json_object(), *max;

                r |= set_new(dev, "device",
                             v->name[0] ? json_string_from_bytes(v->name, strlen(v->name)) : json_null());
                r |= set_new(dev, "major", json_integer(v->major));
                r |= set_new(dev, "minor", json_integer(v->minor));
                r |= set_new(dev, "rbytes", maybe_u64(v->has_stat, v->rbytes));
                r |= set_new(dev, "wbytes", maybe_u64(v->has_stat, v->wbytes));
                r |= set_new(dev, "rios", maybe_u64(v->has_stat, v->rios));
                r |= set_new(dev, "wios", maybe_u64(v->has_stat, v->wios));
                if (rule && rule->has_max) {
                        max = json_object();
                        r |= set_new(max, "rbps", limit_u64(rule->rbps));
                        r |= set_new(max, "wbps", limit_u64(rule->wbps));
                        r |= set_new(max, "riops", limit_u64(rule->riops));
                        r |= set_new(max, "wiops", limit_u64(rule->wiops));
                } else
                        max = json_null();
                r |= set_new(dev, "max", max);
                r |= append_new(devs, dev);
                cgroup_io |= v->has_stat && v->rbytes + v->wbytes > 0;
        }
        r |= set_new(o, "devices", devs);
        /* The node's own counters name the disk where the cgroup's do not see the io. */
        if (!lifetime && disks && disks->has_a && disks->has_b)
                n_busy = diskstats_busiest(&disks->a, &disks->b, disks->b_us - disks->a_us, busy,
                                           ONWHAT_NODE_DEVICES_MAX);
        r |= set_new(o, "node_devices",
                     !lifetime && disks && disks->has_b ? node_devices_array(busy, n_busy) : json_null());
        r |= set_new(o, "writeback",
                     !lifetime && disks && disks->has_dirty ? writeback_object(&disks->dirty) : json_null());
        r |= set_new(o, "devices_source",
                     cgroup_io    ? json_string("cgroup")
                     : n_busy > 0 ? json_string("node")
                                  : json_null());
        return object_or_null(o, r);
}

/* io node-wide (or where no cgroup could be located): no cgroup counters and no rule, the node's
 * disks only. */
static json_t *io_node_object(const OnWhat *w, bool lifetime) {
        OnWhat node = *w;

        node.loc = (LimitsLocation) { .source = LIMITS_SOURCE_NONE, .path = "" };
        node.io_a = node.io_b = (IoLimits) {};
        node.has_io_max = false;
        return io_object(&node, lifetime);
}

json_t *onwhat_limits_object(const OnWhat *w, bool lifetime, bool has_stall, uint64_t stall_us, uint64_t duration_us) {
        json_t *o = json_object();
        bool ok = w->located && w->has_b && (lifetime || w->has_a);
        int r = 0;

        if (!ok && w->resource == PSI_RESOURCE_IO && w->disks && w->disks->has_b && !lifetime) {
                r |= set_new(o, "cpu", json_null());
                r |= set_new(o, "memory", json_null());
                r |= set_new(o, "io", io_node_object(w, lifetime));
                return object_or_null(o, r);
        }

        r |= set_new(o, "cpu",
                     ok && w->resource == PSI_RESOURCE_CPU ? cpu_object(w, lifetime, has_stall, stall_us, duration_us)
                                                           : json_null());
        r |= set_new(o, "memory", ok && w->resource == PSI_RESOURCE_MEMORY ? memory_object(w, lifetime) : json_null());
        r |= set_new(o, "io", ok && w->resource == PSI_RESOURCE_IO ? io_object(w, lifetime) : json_null());
        return object_or_null(o, r);
}

json_t *onwhat_blocked_array(const OnWhat *w) {
        json_t *a = json_array();
        int r = 0;

        for (size_t i = 0; w->has_blocked && i < w->blocked.n_groups; i++) {
                const BlockedGroup *g = &w->blocked.groups[i];
                json_t *o = json_object(), *threads = json_array(), *stack = json_null();

                r |= set_new(o, "wchan",
                             g->wchan[0] ? json_string_from_bytes(g->wchan, strlen(g->wchan)) : json_null());
                r |= set_new(o, "resource",
                             waitfor_to_string(g->wait_for) ? json_string(waitfor_to_string(g->wait_for))
                                                            : json_null());
                r |= set_new(o, "seen", json_u64(g->seen));
                for (size_t k = 0; k < g->n_threads; k++) {
                        json_t *t = json_object();
                        r |= set_new(t, "pid", json_integer(g->threads[k].pid));
                        r |= set_new(t, "tid", json_integer(g->threads[k].tid));
                        r |= set_new(t, "comm", json_string_from_bytes(g->threads[k].comm, strlen(g->threads[k].comm)));
                        r |= set_new(t, "blocked_ms",
                                     g->threads[k].blocked_ns >= 0
                                             ? json_integer(g->threads[k].blocked_ns / (int64_t) NSEC_PER_MSEC)
                                             : json_null());
                        r |= append_new(threads, t);
                }
                r |= set_new(o, "threads", threads);
                r |= set_new(o, "threads_total", json_u64(g->n_threads_total));
                if (w->has_stack && strcmp(g->wchan, w->stack_wchan) == 0 && g->wait_for == w->stack_wait_for) {
                        json_decref(stack);
                        stack = json_array();
                        for (size_t k = 0; k < w->stack.n_frames; k++)
                                r |= append_new(stack,
                                                json_string_from_bytes(w->stack.frames[k], strlen(w->stack.frames[k])));
                }
                r |= set_new(o, "stack", stack);
                r |= append_new(a, o);
        }
        if (r < 0) {
                json_decref(a);
                return NULL;
        }
        return a;
}

const char *onwhat_since_unavailable(const OnWhat *w) {
        switch (w->since_error) {
        case 0:
                return NULL;
        case -EINVAL:
                return "its cpu is outside the agent's cpuset";
        case -ENODATA:
                return "the kernel did not say when it last ran";
        case -ENOENT:
                return "no /proc/<tid>/sched (kernel without CONFIG_SCHED_DEBUG)";
        case -EPERM:
                return "sched_setaffinity() refused by a system call filter";
        default:
                return strerrorname_np(-w->since_error) ?: "unknown error";
        }
}

const char *onwhat_stack_unavailable(const OnWhat *w) {
        return !w->has_stack && w->stack_error < 0 ? wchan_stack_error_reason(w->stack_error) : NULL;
}
