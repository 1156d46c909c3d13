/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "incident/summary-io.h"
#include "incident/summary-kill.h"
#include "incident/summary.h"
#include "incident/textout.h"
#include "sampling/fired.h"

/* The delay a process waited for a resource (the incident's delay_us keys). */
static double resource_delay_us(const json_t *delays, const char *resource) {
        if (strcmp(resource, "cpu") == 0)
                return textout_field_or_zero(delays, "cpu");
        if (strcmp(resource, "io") == 0)
                return textout_field_or_zero(delays, "blkio");
        if (strcmp(resource, "irq") == 0)
                return textout_field_or_zero(delays, "irq");
        /* The memory score's own sum (docs/incident.md: Incident format, "memory = reclaim +
         * thrashing + swapin + compact"). */
        return textout_field_or_zero(delays, "swapin") + textout_field_or_zero(delays, "reclaim") +
               textout_field_or_zero(delays, "thrashing") + textout_field_or_zero(delays, "compact");
}

/* A snapshot has no trigger: the culprits' resource, else the one its most delayed waited on most. */
static const char *incident_resource(const json_t *incident) {
        const char *res = textout_field_string(json_object_get(incident, "trigger"), "resource");
        static const char *const all[] = { "cpu", "io", "memory" };
        const json_t *top = json_array_get(json_object_get(incident, "most_delayed"), 0);
        double best = 0;

        if (res)
                return res;
        res = textout_field_string(json_object_get(incident, "culprits"), "resource");
        if (res)
                return res;
        res = "cpu";
        for (size_t i = 0; top && i < ELEMENTSOF(all); i++) {
                double d = resource_delay_us(json_object_get(top, "delay_us"), all[i]);
                if (d > best) {
                        best = d;
                        res = all[i];
                }
        }
        return res;
}

bool summary_stall_passed(const json_t *incident, double *ret_seen_us) {
        const json_t *w = json_object_get(incident, "window"), *sample = json_object_get(incident, "sample"),
                     *trigger = json_object_get(incident, "trigger");
        const char *verdict = textout_field_string(w, "verdict");
        double threshold, window, stall, duration_ms;
        FiredCoverage c;

        if (verdict) {
                if (strcmp(verdict, "passed") != 0)
                        return false;
                if (ret_seen_us)
                        *ret_seen_us = textout_field_or_zero(w, "stall_us");
                return true;
        }
        /* A line written before psidiag 0.7 has no window: the same rule on its trigger and sample. */
        if (!textout_field_number(trigger, "threshold_us", &threshold) ||
            !textout_field_number(trigger, "window_us", &window) || !textout_field_number(sample, "stall_us", &stall) ||
            !textout_field_number(sample, "duration_ms", &duration_ms) || threshold < 0 || window < 0 || stall < 0 ||
            duration_ms < 0 ||
            (textout_field_string(sample, "basis") && strcmp(textout_field_string(sample, "basis"), "delta") != 0))
                return false;
        c = fired_coverage(&(PsiTriggerSpec) { .threshold_us = (usec_t) threshold, .window_us = (usec_t) window },
                           (uint64_t) (duration_ms * 1000), true, (uint64_t) stall);
        if (c.verdict != FIRED_PASSED)
                return false;
        if (ret_seen_us)
                *ret_seen_us = stall;
        return true;
}

bool summary_culprit_dominant(const json_t *culprits) {
        const json_t *cgroups = json_object_get(culprits, "cgroups");
        double first = 0, second = 0;

        if (json_array_size(cgroups) == 0 || !textout_field_number(json_array_get(cgroups, 0), "share", &first))
                return false;
        (void) textout_field_number(json_array_get(cgroups, 1), "share", &second);
        return first >= SUMMARY_DOMINANT_SHARE || (first >= SUMMARY_DOMINANT_SHARE_MIN && first >= 2 * second);
}

/* "/shop/db" for a cgroup, "the node" for the root. */
static void put_where(FILE *f, const char *cgroup) {
        if (!cgroup || strcmp(cgroup, "/") == 0)
                fputs("the node", f);
        else
                textout_put_name(f, cgroup);
}

/* " on vda (100% busy)": the device the io went to, from the cgroup's own counters when they saw
 * it (the one that moved most), else the node's busiest (limits.io.devices_source); how busy it
 * was when the node's counters say. */
static void put_io_device(FILE *f, const json_t *incident) {
        const json_t *io = json_object_get(json_object_get(incident, "limits"), "io");
        const json_t *nodes = json_object_get(io, "node_devices"), *best = NULL, *d;
        const char *source = textout_field_string(io, "devices_source");
        double most = -1, util;
        size_t i;

        if (!source)
                return;
        if (strcmp(source, "node") == 0)
                best = json_array_get(nodes, 0);
        else
                json_array_foreach(json_object_get(io, "devices"), i, d) {
                        double b = textout_field_or_zero(d, "rbytes") + textout_field_or_zero(d, "wbytes");
                        if (textout_field_string(d, "device") && b > most) {
                                most = b;
                                best = d;
                        }
                }
        if (!best || !textout_field_string(best, "device"))
                return;
        fputs(" on ", f);
        textout_put_name(f, textout_field_string(best, "device"));
        /* The node's line of the same device says how busy it was. */
        json_array_foreach(nodes, i, d) {
                const char *verdict = textout_field_string(d, "verdict");
                if (textout_field_or_zero(d, "major") != textout_field_or_zero(best, "major") ||
                    textout_field_or_zero(d, "minor") != textout_field_or_zero(best, "minor"))
                        continue;
                /* A device not serving its queue, said plainly: how many wait, how few completed. */
                if (verdict && strcmp(verdict, "stuck") == 0) {
                        double done = textout_field_or_zero(d, "rios") + textout_field_or_zero(d, "wios");
                        double n = textout_field_or_zero(d, "in_flight");
                        fprintf(f, " (stuck: %.0f request%s in flight, ", n, n == 1 ? "" : "s");
                        if (done > 0)
                                fprintf(f, "%.0f completed)", done);
                        else
                                fputs("none completed)", f);
                        break;
                }
                if (textout_field_number(d, "util", &util)) {
                        fprintf(f, " (%.0f%% busy)", util * 100);
                        break;
                }
        }
}

static void put_usage(FILE *f, const char *resource, const json_t *usage) {
        double v, r = textout_field_or_zero(usage, "read_bytes"), w = textout_field_or_zero(usage, "write_bytes");

        if (strcmp(resource, "cpu") == 0) {
                if (textout_field_number(usage, "cpu_us", &v)) {
                        fputs(" used ", f);
                        textout_put_duration_us(f, v);
                        fputs(" of cpu", f);
                }
        } else if (strcmp(resource, "io") == 0) {
                if (r <= 0 && w <= 0)
                        return;
                if (r > 0) {
                        fputs(" read ", f);
                        textout_put_bytes(f, r);
                }
                if (w > 0) {
                        fputs(r > 0 ? " and wrote " : " wrote ", f);
                        textout_put_bytes(f, w);
                }
        } else {
                if ((textout_field_number(usage, "rss_growth_bytes", &v) ||
                     textout_field_number(usage, "memory_growth_bytes", &v)) &&
                    v > 0) {
                        fputs(" grew by ", f);
                        textout_put_bytes(f, v);
                } else if (textout_field_number(usage, "memory_bytes", &v) ||
                           textout_field_number(usage, "rss_bytes", &v)) {
                        fputs(" holds ", f);
                        textout_put_bytes(f, v);
                }
        }
}

/* "fio (/batch, pid 4242)"; a program's processes, some alive: "stress-ng (/batch, 4 processes)"
 * (", 2 ended" of them); all ended: "35 cc1 processes (/build, ended)". */
static void put_culprit_process(FILE *f, const json_t *p) {
        double pid = 0, n = 1, ended_n = 0;
        bool ended = json_is_true(json_object_get(p, "ended"));

        (void) textout_field_number(p, "processes", &n);
        (void) textout_field_number(p, "ended_processes", &ended_n);
        if (n > 1 && ended)
                fprintf(f, "%.0f ", n);
        textout_put_name(f, textout_field_string(p, "comm"));
        fputs(n > 1 && ended ? " processes (" : " (", f);
        textout_put_owner(f, p, textout_field_string(p, "cgroup"));
        if (n > 1 && !ended)
                fprintf(f, ", %.0f processes", n);
        if (n > 1 && !ended && ended_n > 0)
                fprintf(f, ", %.0f ended", ended_n);
        if (n <= 1 && textout_field_number(p, "pid", &pid) && pid > 0)
                fprintf(f, ", pid %.0f", pid);
        fputs(ended ? ", ended)" : ")", f);
}

/* Whether cgroup path is dir or below it ("/" holds every path). */
static bool cgroup_within(const char *path, const char *dir) {
        size_t n;

        if (!path || !dir)
                return false;
        if (strcmp(dir, "/") == 0)
                return true;
        n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ", but the stall had passed before the sample: 2.6 ms seen of the 100 ms in 2 s that fired; no
 * dominant culprit". */
static void put_passed(FILE *f, const json_t *incident, double seen_us) {
        const json_t *trigger = json_object_get(incident, "trigger");

        fputs(", but the stall had passed before the sample: ", f);
        textout_put_duration_us(f, seen_us);
        fputs(" seen of the ", f);
        textout_put_duration_us(f, textout_field_or_zero(trigger, "threshold_us"));
        fputs(" in ", f);
        textout_put_duration_us(f, textout_field_or_zero(trigger, "window_us"));
        fputs(" that fired; no dominant culprit", f);
}

static void put_culprits(FILE *f, const json_t *incident, const char *resource) {
        const json_t *c = json_object_get(incident, "culprits"), *limit = json_object_get(c, "limit");
        const json_t *cgroups = json_object_get(c, "cgroups"), *procs = json_object_get(c, "processes"), *p, *cg;
        double share = 0, seen_us = 0;

        /* Who used the resource in a window without the stall says nothing of who caused it. */
        if (summary_stall_passed(incident, &seen_us)) {
                put_passed(f, incident, seen_us);
                return;
        }
        if (!json_is_object(c))
                return;
        if (json_is_true(json_object_get(c, "own_limit")) && textout_field_string(limit, "file")) {
                fputs(": throttled by its own ", f);
                textout_put_name(f, textout_field_string(limit, "file"));
                fputs(" (", f);
                put_where(f, textout_field_string(limit, "cgroup"));
                fputc(')', f);
                return;
        }
        if (json_array_size(cgroups) == 0)
                return;
        if (!summary_culprit_dominant(c)) {
                double total = (double) json_array_size(cgroups);
                /* culprits.cgroups lists the top few; cgroups_total counts every one that used it. */
                (void) textout_field_number(c, "cgroups_total", &total);
                fprintf(f, ": no dominant culprit: %.0f cgroup%s share the ", total, total == 1 ? "" : "s");
                textout_put_name(f, resource);
                if (textout_field_number(json_array_get(cgroups, 0), "share", &share))
                        fprintf(f, ", the largest %.0f%%", share * 100);
                return;
        }
        /* The dominant cgroup's top process (the list is ranked over the whole scope: its first
         * may be a lesser cgroup's one big process); none listed: the cgroup itself. */
        cg = json_array_get(cgroups, 0);
        p = NULL;
        for (size_t i = 0; i < json_array_size(procs) && !p; i++)
                if (cgroup_within(textout_field_string(json_array_get(procs, i), "cgroup"),
                                  textout_field_string(cg, "path")))
                        p = json_array_get(procs, i);
        if (!p) {
                if (strcmp(resource, "io") == 0 && summary_writeback_cgroup(f, incident, cg))
                        return;
                fputs(": ", f);
                textout_put_owner(f, cg, textout_field_string(cg, "path"));
                put_usage(f, resource, json_object_get(cg, "usage"));
                return;
        }
        bool io = strcmp(resource, "io") == 0;
        if (!io || !summary_writeback_by_cgroup(f, incident, p)) {
                fputs(": ", f);
                put_culprit_process(f, p);
                if (!io || !summary_writeback_usage(f, incident, p))
                        put_usage(f, resource, json_object_get(p, "usage"));
        }
        /* The culprit stalled too (it is among the most delayed): the stall comes from within. */
        if (json_is_true(json_object_get(p, "victim")))
                fputs(", itself among the stalled", f);
}

/* limits.memory when its verdict is "throttled": held at memory.high, whose reclaim and sleeps
 * count as the cgroup's stall but as no task's delay. NULL otherwise. */
static const json_t *memory_high(const json_t *incident, const char *resource) {
        const json_t *m = json_object_get(json_object_get(incident, "limits"), "memory");
        const char *v = textout_field_string(m, "verdict");
        return strcmp(resource, "memory") == 0 && v && strcmp(v, "throttled") == 0 ? m : NULL;
}

/* ", its longest wait, 0.9 s, ended 0.3 s before the wakeup": where the named process's longest wait
 * (taskstats v17) fell in the trigger's window before the sample and was longer than all it waited
 * in the sample, it is the stall that fired, which the sample alone would not show. */
static void put_worst(FILE *f, const json_t *top, const char *resource) {
        const json_t *w = json_object_get(top, "worst");
        const char *when = textout_field_string(w, "when");
        double us = 0, before_ms = 0;

        if (!when || strcmp(when, "trigger_window") != 0 || !textout_field_number(w, "us", &us) ||
            !textout_field_number(w, "before_time_ms", &before_ms) || before_ms <= 0 ||
            us <= resource_delay_us(json_object_get(top, "delay_us"), resource))
                return;
        fputs(", its longest wait, ", f);
        textout_put_duration_us(f, us);
        fputs(", ended ", f);
        textout_put_duration_us(f, before_ms * 1000);
        fputs(" before the wakeup", f);
}

/* The wchan of the blocked[] group that lists thread tid; NULL when none does or it is unknown. */
static const char *blocked_wchan(const json_t *incident, double tid) {
        const json_t *groups = json_object_get(incident, "blocked");

        for (size_t i = 0; i < json_array_size(groups); i++) {
                const json_t *g = json_array_get(groups, i), *threads = json_object_get(g, "threads");
                for (size_t k = 0; k < json_array_size(threads); k++)
                        if (textout_field_or_zero(json_array_get(threads, k), "tid") == tid) {
                                const char *w = textout_field_string(g, "wchan");
                                return w && w[0] ? w : NULL;
                        }
        }
        return NULL;
}

/* most_delayed[0] when a wait that has not ended ranked it first (io and memory: sampling/rank.h:
 * ranking_add_blocked()) and it has been blocked for the whole sample at least and longer than all
 * it waited in it: stuck, rather than between two short waits; its blocked_now in *ret. */
static const json_t *blocked_top(const json_t *incident, const char *resource, const json_t **ret) {
        const json_t *top = json_array_get(json_object_get(incident, "most_delayed"), 0);
        const json_t *now = json_object_get(top, "blocked_now");
        double ms = textout_field_or_zero(now, "ms");

        if (!json_is_object(now) || (strcmp(resource, "io") != 0 && strcmp(resource, "memory") != 0) ||
            ms < textout_field_or_zero(json_object_get(incident, "sample"), "duration_ms") ||
            ms * 1000 <= resource_delay_us(json_object_get(top, "delay_us"), resource))
                return NULL;
        *ret = now;
        return top;
}

/* "dd (/batch) blocked for io on vdb, 3.2 s so far in blk_mq_get_tag". */
static void put_blocked_top(FILE *f, const json_t *incident, const char *resource, const json_t *top,
                            const json_t *now) {
        const char *wchan = blocked_wchan(incident, textout_field_or_zero(now, "tid"));

        textout_put_name(f, textout_field_string(top, "comm"));
        fputs(" (", f);
        textout_put_owner(f, top, textout_field_string(top, "cgroup"));
        fputs(") blocked for ", f);
        textout_put_name(f, resource);
        if (strcmp(resource, "io") == 0)
                put_io_device(f, incident);
        fputs(", ", f);
        textout_put_duration_us(f, textout_field_or_zero(now, "ms") * 1000);
        fputs(" so far", f);
        if (wchan) {
                fputs(" in ", f);
                textout_put_name(f, wchan);
        }
}

/* The first blocked[] group whose wait may be for resource: for io and memory, its "resource" null
 * or that one (sampling/waitfor.h), else the first group. *ret_other: what the group's wait is
 * for when that is known and not resource, to be said; NULL otherwise. */
static const json_t *blocked_group_for(const json_t *incident, const char *resource, const char **ret_other) {
        const json_t *groups = json_object_get(incident, "blocked"), *g = json_array_get(groups, 0);
        bool told = strcmp(resource, "io") == 0 || strcmp(resource, "memory") == 0;

        for (size_t i = 0; told && i < json_array_size(groups); i++) {
                const char *r = textout_field_string(json_array_get(groups, i), "resource");
                if (!r || strcmp(r, resource) == 0) {
                        g = json_array_get(groups, i);
                        break;
                }
        }
        *ret_other = textout_field_string(g, "resource");
        if (*ret_other && strcmp(*ret_other, resource) == 0)
                *ret_other = NULL;
        return g;
}

/* No wait ended in the sample: the threads blocked in D now, if a look saw one (a wait that has not
 * ended is in no delay: kernel-facts.md: delayacct), else that none was measured waiting. A wait
 * known to be for another resource says so ("blocked now for io: ..."). */
static void put_blocked_now(FILE *f, const json_t *incident, const char *resource) {
        const char *other;
        const json_t *group = blocked_group_for(incident, resource, &other);
        const json_t *thread = json_array_get(json_object_get(group, "threads"), 0);
        double total = 0, ms;

        if (!thread || !textout_field_string(thread, "comm")) {
                fputs(", no process measured waiting", f);
                return;
        }
        fputs(", no wait ended in it; blocked now", f);
        if (other) {
                fputs(" for ", f);
                textout_put_name(f, other);
        }
        fputs(": ", f);
        textout_put_name(f, textout_field_string(thread, "comm"));
        fprintf(f, " (pid %.0f)", textout_field_or_zero(thread, "pid"));
        if (textout_field_number(thread, "blocked_ms", &ms)) {
                fputs(" for ", f);
                textout_put_duration_us(f, ms * 1000);
        }
        if (textout_field_string(group, "wchan") && textout_field_string(group, "wchan")[0]) {
                fputs(" in ", f);
                textout_put_name(f, textout_field_string(group, "wchan"));
        }
        (void) textout_field_number(group, "threads_total", &total);
        if (total > 1)
                fprintf(f, " and %.0f more thread%s", total - 1, total > 2 ? "s" : "");
}

static void put_pressure(FILE *f, const json_t *incident) {
        const char *resource = incident_resource(incident);
        const json_t *high = memory_high(incident, resource);
        const json_t *sample = json_object_get(incident, "sample"), *trigger = json_object_get(incident, "trigger");
        double stall, duration_ms = textout_field_or_zero(sample, "duration_ms");
        const char *where = textout_field_string(trigger, "cgroup");

        /* The most delayed process that waited for this resource at all, or one stuck longer. */
        const json_t *most = json_object_get(incident, "most_delayed"), *top = NULL, *now = NULL;
        const json_t *stuck = high ? NULL : blocked_top(incident, resource, &now);
        for (size_t i = 0; i < json_array_size(most) && !top; i++)
                if (resource_delay_us(json_object_get(json_array_get(most, i), "delay_us"), resource) > 0)
                        top = json_array_get(most, i);
        if (stuck) {
                put_blocked_top(f, incident, resource, stuck, now);
                put_culprits(f, incident, resource);
                return;
        }
        if (top && !high) {
                textout_put_name(f, textout_field_string(top, "comm"));
                fputs(" (", f);
                textout_put_owner(f, top, textout_field_string(top, "cgroup"));
                fputs(") waited ", f);
                textout_put_duration_us(f, resource_delay_us(json_object_get(top, "delay_us"), resource));
                fputs(" for ", f);
                textout_put_name(f, resource);
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        } else if (json_is_object(trigger)) {
                put_where(f, where);
                fputs(" stalled ", f);
                if (textout_field_number(sample, "stall_us", &stall) && stall > 0) {
                        textout_put_duration_us(f, stall);
                        fputc(' ', f);
                }
                fputs("on ", f);
                textout_put_name(f, resource);
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        } else {
                /* A snapshot does not say which cgroup it measured. */
                textout_put_name(f, resource);
                fputs(" stall", f);
                if (textout_field_number(sample, "stall_us", &stall) && stall > 0) {
                        fputs(" grew ", f);
                        textout_put_duration_us(f, stall);
                }
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        }
        if (duration_ms > 0) {
                fputs(" in ", f);
                textout_put_duration_us(f, duration_ms * 1000);
        }
        if (high) {
                fputs(": throttled by memory.high (", f);
                put_where(f, textout_field_string(high, "cgroup"));
                fputc(')', f);
                return;
        }
        if (!top)
                put_blocked_now(f, incident, resource);
        else
                put_worst(f, top, resource);
        put_culprits(f, incident, resource);
}

static void put_oom(FILE *f, const json_t *oom) {
        const json_t *victim = json_object_get(oom, "victim"), *rss = json_object_get(victim, "rss_kib");
        double kills = textout_field_or_zero(oom, "kills"), pid;
        const char *memcg = textout_field_string(oom, "oom_memcg");

        if (json_is_object(victim)) {
                fputs("the kernel's OOM killer killed ", f);
                textout_put_name(f, textout_field_string(victim, "comm"));
                fputs(" (", f);
                textout_put_name(f,
                                 textout_field_string(victim, "cgroup") ? textout_field_string(victim, "cgroup") : "?");
                if (textout_field_number(victim, "pid", &pid))
                        fprintf(f, ", pid %.0f", pid);
                fputc(')', f);
                if (json_is_object(rss)) {
                        fputs(" holding ", f);
                        textout_put_bytes(f, (textout_field_or_zero(rss, "anon") + textout_field_or_zero(rss, "file") +
                                              textout_field_or_zero(rss, "shmem")) *
                                                     1024);
                }
        } else {
                if (kills > 0)
                        fprintf(f, "the kernel's OOM killer killed %.0f process%s in ", kills, kills == 1 ? "" : "es");
                else
                        fputs("the kernel's OOM killer killed in ", f);
                put_where(f, textout_field_string(oom, "cgroup"));
        }
        if (json_is_true(json_object_get(oom, "global")))
                fputs(", out of memory on the node", f);
        else if (memcg) {
                fputs(", at the limit of ", f);
                textout_put_name(f, memcg);
        }
        if (json_is_object(victim) && kills > 1)
                fprintf(f, " (%.0f kills)", kills);
}
int summary_format(const json_t *incident, char **ret) {
        const char *type = textout_field_string(incident, "type");
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (!type)
                return -EINVAL;
        if (strcmp(type, "oom") == 0    ? !json_is_object(json_object_get(incident, "oom"))
            : strcmp(type, "kill") == 0 ? !json_is_object(json_object_get(incident, "kill"))
                                        : !json_is_object(json_object_get(incident, "sample")))
                return -EINVAL;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        if (strcmp(type, "oom") == 0)
                put_oom(f, json_object_get(incident, "oom"));
        else if (strcmp(type, "kill") == 0)
                summary_kill_put(f, json_object_get(incident, "kill"));
        else
                put_pressure(f, incident);
        if (ferror(f) | fclose(f)) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

json_t *summary_add(json_t *incident) {
        json_t *culprits = json_object_get(incident, "culprits"), *out, *v;
        char *s = NULL;
        const char *key;
        int r;

        if (!incident)
                return NULL;
        if (json_is_object(culprits) &&
            json_object_set_new_nocheck(
                    culprits, "dominant",
                    json_boolean(summary_culprit_dominant(culprits) && !summary_stall_passed(incident, NULL))) < 0)
                return incident;
        r = summary_format(incident, &s);
        if (r < 0)
                return incident;
        /* jansson keeps insertion order: a new object puts summary right after time, where a line
         * view shows it first. */
        out = json_object();
        if (!out)
                goto fail;
        json_object_foreach(incident, key, v) {
                if (json_object_set_nocheck(out, key, v) < 0)
                        goto fail;
                if (strcmp(key, "time") == 0 &&
                    json_object_set_new_nocheck(out, "summary", json_stringn_nocheck(s, strlen(s))) < 0)
                        goto fail;
        }
        if (!json_object_get(out, "summary"))
                goto fail;
        free(s);
        json_decref(incident);
        return out;
fail:
        free(s);
        json_decref(out);
        return incident;
}
