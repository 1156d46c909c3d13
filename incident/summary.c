/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "incident/summary.h"
#include "sampling/fired.h"

static const char *field_string(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* A number field (integer or real); false when missing or null. */
static bool field_number(const json_t *o, const char *key, double *ret) {
        json_t *v = json_object_get(o, key);

        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return true;
}

static double field_or_zero(const json_t *o, const char *key) {
        double v = 0;

        (void) field_number(o, key, &v);
        return v;
}

/* Names come from task comms and cgroup paths: valid UTF-8 by now, but control bytes would break a
 * pager's or a terminal's line. */
static void put_name(FILE *f, const char *s) {
        for (; s && *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\x%02x", c);
                else
                        fputc(c, f);
        }
}

/* "850 us", "42 ms", "3.1 ms", "0.31 s", "1.5 s", "12 s". */
static void put_duration_us(FILE *f, double us) {
        char buf[32];

        if (us < 1000)
                fprintf(f, "%.0f us", us);
        else if (us < 10000)
                fprintf(f, "%.1f ms", us / 1000);
        else if (us < 100000)
                fprintf(f, "%.0f ms", us / 1000);
        else if (us >= 10e6)
                fprintf(f, "%.0f s", us / 1e6);
        else {
                /* Two decimals, trailing zeros dropped: 1.00 s reads "1 s". */
                snprintf(buf, sizeof buf, "%.2f", us / 1e6);
                size_t n = strlen(buf);
                while (n > 0 && buf[n - 1] == '0')
                        buf[--n] = '\0';
                if (n > 0 && buf[n - 1] == '.')
                        buf[--n] = '\0';
                fprintf(f, "%s s", buf);
        }
}

static void put_bytes(FILE *f, double b) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        size_t u = 0;

        while (b >= 1024 && u + 1 < ELEMENTSOF(units)) {
                b /= 1024;
                u++;
        }
        if (u == 0 || b >= 100)
                fprintf(f, "%.0f %s", b, units[u]);
        else
                fprintf(f, "%.1f %s", b, units[u]);
}

/* The delay a process waited for a resource (the incident's delay_us keys). */
static double resource_delay_us(const json_t *delays, const char *resource) {
        if (strcmp(resource, "cpu") == 0)
                return field_or_zero(delays, "cpu");
        if (strcmp(resource, "io") == 0)
                return field_or_zero(delays, "blkio");
        if (strcmp(resource, "irq") == 0)
                return field_or_zero(delays, "irq");
        /* The memory score's own sum (docs/incident.md: Incident format, "memory = reclaim +
         * thrashing + swapin + compact"). */
        return field_or_zero(delays, "swapin") + field_or_zero(delays, "reclaim") + field_or_zero(delays, "thrashing") +
               field_or_zero(delays, "compact");
}

/* A snapshot has no trigger: the culprits' resource, else the one its most delayed waited on most. */
static const char *incident_resource(const json_t *incident) {
        const char *res = field_string(json_object_get(incident, "trigger"), "resource");
        static const char *const all[] = { "cpu", "io", "memory" };
        const json_t *top = json_array_get(json_object_get(incident, "most_delayed"), 0);
        double best = 0;

        if (res)
                return res;
        res = field_string(json_object_get(incident, "culprits"), "resource");
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
        const char *verdict = field_string(w, "verdict");
        double threshold, window, stall, duration_ms;
        FiredCoverage c;

        if (verdict) {
                if (strcmp(verdict, "passed") != 0)
                        return false;
                if (ret_seen_us)
                        *ret_seen_us = field_or_zero(w, "stall_us");
                return true;
        }
        /* A line written before psidiag 0.7 has no window: the same rule on its trigger and sample. */
        if (!field_number(trigger, "threshold_us", &threshold) || !field_number(trigger, "window_us", &window) ||
            !field_number(sample, "stall_us", &stall) || !field_number(sample, "duration_ms", &duration_ms) ||
            threshold < 0 || window < 0 || stall < 0 || duration_ms < 0 ||
            (field_string(sample, "basis") && strcmp(field_string(sample, "basis"), "delta") != 0))
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

        if (json_array_size(cgroups) == 0 || !field_number(json_array_get(cgroups, 0), "share", &first))
                return false;
        (void) field_number(json_array_get(cgroups, 1), "share", &second);
        return first >= SUMMARY_DOMINANT_SHARE || (first >= SUMMARY_DOMINANT_SHARE_MIN && first >= 2 * second);
}

/* "/shop/db" for a cgroup, "the node" for the root. */
static void put_where(FILE *f, const char *cgroup) {
        if (!cgroup || strcmp(cgroup, "/") == 0)
                fputs("the node", f);
        else
                put_name(f, cgroup);
}

/* " on vda (100% busy)": the device the io went to, from the cgroup's own counters when they saw
 * it (the one that moved most), else the node's busiest (limits.io.devices_source); how busy it
 * was when the node's counters say. */
static void put_io_device(FILE *f, const json_t *incident) {
        const json_t *io = json_object_get(json_object_get(incident, "limits"), "io");
        const json_t *nodes = json_object_get(io, "node_devices"), *best = NULL, *d;
        const char *source = field_string(io, "devices_source");
        double most = -1, util;
        size_t i;

        if (!source)
                return;
        if (strcmp(source, "node") == 0)
                best = json_array_get(nodes, 0);
        else
                json_array_foreach(json_object_get(io, "devices"), i, d) {
                        double b = field_or_zero(d, "rbytes") + field_or_zero(d, "wbytes");
                        if (field_string(d, "device") && b > most) {
                                most = b;
                                best = d;
                        }
                }
        if (!best || !field_string(best, "device"))
                return;
        fputs(" on ", f);
        put_name(f, field_string(best, "device"));
        /* The node's line of the same device says how busy it was. */
        json_array_foreach(nodes, i, d) {
                const char *verdict = field_string(d, "verdict");
                if (field_or_zero(d, "major") != field_or_zero(best, "major") ||
                    field_or_zero(d, "minor") != field_or_zero(best, "minor"))
                        continue;
                /* A device not serving its queue, said plainly: how many wait, how few completed. */
                if (verdict && strcmp(verdict, "stuck") == 0) {
                        double done = field_or_zero(d, "rios") + field_or_zero(d, "wios");
                        fprintf(f, " (stuck: %.0f requests in flight, ", field_or_zero(d, "in_flight"));
                        if (done > 0)
                                fprintf(f, "%.0f completed)", done);
                        else
                                fputs("none completed)", f);
                        break;
                }
                if (field_number(d, "util", &util)) {
                        fprintf(f, " (%.0f%% busy)", util * 100);
                        break;
                }
        }
}

static void put_usage(FILE *f, const char *resource, const json_t *usage) {
        double v, r = field_or_zero(usage, "read_bytes"), w = field_or_zero(usage, "write_bytes");

        if (strcmp(resource, "cpu") == 0) {
                if (field_number(usage, "cpu_us", &v)) {
                        fputs(" used ", f);
                        put_duration_us(f, v);
                        fputs(" of cpu", f);
                }
        } else if (strcmp(resource, "io") == 0) {
                if (r <= 0 && w <= 0)
                        return;
                if (r > 0) {
                        fputs(" read ", f);
                        put_bytes(f, r);
                }
                if (w > 0) {
                        fputs(r > 0 ? " and wrote " : " wrote ", f);
                        put_bytes(f, w);
                }
        } else {
                if ((field_number(usage, "rss_growth_bytes", &v) || field_number(usage, "memory_growth_bytes", &v)) &&
                    v > 0) {
                        fputs(" grew by ", f);
                        put_bytes(f, v);
                } else if (field_number(usage, "memory_bytes", &v) || field_number(usage, "rss_bytes", &v)) {
                        fputs(" holds ", f);
                        put_bytes(f, v);
                }
        }
}

/* "fio (/batch, pid 4242)", or "35 cc1 processes (/build, ended)" for an aggregate of ended ones. */
static void put_culprit_process(FILE *f, const json_t *p) {
        double pid = 0, n = 1;
        bool ended = json_is_true(json_object_get(p, "ended"));

        (void) field_number(p, "processes", &n);
        if (!field_number(p, "pid", &pid) && n > 1)
                fprintf(f, "%.0f ", n);
        put_name(f, field_string(p, "comm"));
        if (!field_number(p, "pid", &pid) && n > 1)
                fputs(" processes", f);
        fputs(" (", f);
        put_name(f, field_string(p, "cgroup") ? field_string(p, "cgroup") : "?");
        if (pid > 0)
                fprintf(f, ", pid %.0f", pid);
        if (ended)
                fputs(", ended", f);
        fputc(')', f);
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
        put_duration_us(f, seen_us);
        fputs(" seen of the ", f);
        put_duration_us(f, field_or_zero(trigger, "threshold_us"));
        fputs(" in ", f);
        put_duration_us(f, field_or_zero(trigger, "window_us"));
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
        if (json_is_true(json_object_get(c, "own_limit")) && field_string(limit, "file")) {
                fputs(": throttled by its own ", f);
                put_name(f, field_string(limit, "file"));
                fputs(" (", f);
                put_where(f, field_string(limit, "cgroup"));
                fputc(')', f);
                return;
        }
        if (json_array_size(cgroups) == 0)
                return;
        if (!summary_culprit_dominant(c)) {
                double total = (double) json_array_size(cgroups);
                /* culprits.cgroups lists the top few; cgroups_total counts every one that used it. */
                (void) field_number(c, "cgroups_total", &total);
                fprintf(f, ": no dominant culprit: %.0f cgroup%s share the ", total, total == 1 ? "" : "s");
                put_name(f, resource);
                if (field_number(json_array_get(cgroups, 0), "share", &share))
                        fprintf(f, ", the largest %.0f%%", share * 100);
                return;
        }
        /* The dominant cgroup's top process (the list is ranked over the whole scope: its first
         * may be a lesser cgroup's one big process); none listed: the cgroup itself. */
        cg = json_array_get(cgroups, 0);
        p = NULL;
        for (size_t i = 0; i < json_array_size(procs) && !p; i++)
                if (cgroup_within(field_string(json_array_get(procs, i), "cgroup"), field_string(cg, "path")))
                        p = json_array_get(procs, i);
        if (!p) {
                fputs(": ", f);
                put_name(f, field_string(cg, "path") ? field_string(cg, "path") : "?");
                put_usage(f, resource, json_object_get(cg, "usage"));
                return;
        }
        fputs(": ", f);
        put_culprit_process(f, p);
        put_usage(f, resource, json_object_get(p, "usage"));
        /* The culprit stalled too (it is among the most delayed): the stall comes from within. */
        if (json_is_true(json_object_get(p, "victim")))
                fputs(", itself among the stalled", f);
}

/* limits.memory when its verdict is "throttled": held at memory.high, whose reclaim and sleeps
 * count as the cgroup's stall but as no task's delay. NULL otherwise. */
static const json_t *memory_high(const json_t *incident, const char *resource) {
        const json_t *m = json_object_get(json_object_get(incident, "limits"), "memory");
        const char *v = field_string(m, "verdict");
        return strcmp(resource, "memory") == 0 && v && strcmp(v, "throttled") == 0 ? m : NULL;
}

/* ", its longest wait, 0.9 s, ended 0.3 s before the wakeup": where the named process's longest wait
 * (taskstats v17) fell in the trigger's window before the sample and was longer than all it waited
 * in the sample, it is the stall that fired, which the sample alone would not show. */
static void put_worst(FILE *f, const json_t *top, const char *resource) {
        const json_t *w = json_object_get(top, "worst");
        const char *when = field_string(w, "when");
        double us = 0, before_ms = 0;

        if (!when || strcmp(when, "trigger_window") != 0 || !field_number(w, "us", &us) ||
            !field_number(w, "before_time_ms", &before_ms) || before_ms <= 0 ||
            us <= resource_delay_us(json_object_get(top, "delay_us"), resource))
                return;
        fputs(", its longest wait, ", f);
        put_duration_us(f, us);
        fputs(", ended ", f);
        put_duration_us(f, before_ms * 1000);
        fputs(" before the wakeup", f);
}

static void put_pressure(FILE *f, const json_t *incident) {
        const char *resource = incident_resource(incident);
        const json_t *high = memory_high(incident, resource);
        const json_t *sample = json_object_get(incident, "sample"), *trigger = json_object_get(incident, "trigger");
        double stall, duration_ms = field_or_zero(sample, "duration_ms");
        const char *where = field_string(trigger, "cgroup");

        /* The most delayed process that waited for this resource at all. */
        const json_t *most = json_object_get(incident, "most_delayed"), *top = NULL;
        for (size_t i = 0; i < json_array_size(most) && !top; i++)
                if (resource_delay_us(json_object_get(json_array_get(most, i), "delay_us"), resource) > 0)
                        top = json_array_get(most, i);
        if (top && !high) {
                put_name(f, field_string(top, "comm"));
                fputs(" (", f);
                put_name(f, field_string(top, "cgroup") ? field_string(top, "cgroup") : "?");
                fputs(") waited ", f);
                put_duration_us(f, resource_delay_us(json_object_get(top, "delay_us"), resource));
                fputs(" for ", f);
                put_name(f, resource);
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        } else if (json_is_object(trigger)) {
                put_where(f, where);
                fputs(" stalled ", f);
                if (field_number(sample, "stall_us", &stall) && stall > 0) {
                        put_duration_us(f, stall);
                        fputc(' ', f);
                }
                fputs("on ", f);
                put_name(f, resource);
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        } else {
                /* A snapshot does not say which cgroup it measured. */
                put_name(f, resource);
                fputs(" stall", f);
                if (field_number(sample, "stall_us", &stall) && stall > 0) {
                        fputs(" grew ", f);
                        put_duration_us(f, stall);
                }
                if (strcmp(resource, "io") == 0)
                        put_io_device(f, incident);
        }
        if (duration_ms > 0) {
                fputs(" in ", f);
                put_duration_us(f, duration_ms * 1000);
        }
        if (high) {
                fputs(": throttled by memory.high (", f);
                put_where(f, field_string(high, "cgroup"));
                fputc(')', f);
                return;
        }
        if (!top)
                fputs(", no process measured waiting", f);
        else
                put_worst(f, top, resource);
        put_culprits(f, incident, resource);
}

static void put_oom(FILE *f, const json_t *oom) {
        const json_t *victim = json_object_get(oom, "victim"), *rss = json_object_get(victim, "rss_kib");
        double kills = field_or_zero(oom, "kills"), pid;
        const char *memcg = field_string(oom, "oom_memcg");

        if (json_is_object(victim)) {
                fputs("the kernel's OOM killer killed ", f);
                put_name(f, field_string(victim, "comm"));
                fputs(" (", f);
                put_name(f, field_string(victim, "cgroup") ? field_string(victim, "cgroup") : "?");
                if (field_number(victim, "pid", &pid))
                        fprintf(f, ", pid %.0f", pid);
                fputc(')', f);
                if (json_is_object(rss)) {
                        fputs(" holding ", f);
                        put_bytes(f, (field_or_zero(rss, "anon") + field_or_zero(rss, "file") +
                                      field_or_zero(rss, "shmem")) *
                                             1024);
                }
        } else {
                if (kills > 0)
                        fprintf(f, "the kernel's OOM killer killed %.0f process%s in ", kills, kills == 1 ? "" : "es");
                else
                        fputs("the kernel's OOM killer killed in ", f);
                put_where(f, field_string(oom, "cgroup"));
        }
        if (json_is_true(json_object_get(oom, "global")))
                fputs(", out of memory on the node", f);
        else if (memcg) {
                fputs(", at the limit of ", f);
                put_name(f, memcg);
        }
        if (json_is_object(victim) && kills > 1)
                fprintf(f, " (%.0f kills)", kills);
}

/* "killed by earlyoom: grower (/cg, pid N) holding 40 MiB, under memory pressure (incident ID, 2.1 s
 * before)", or "3 processes of /cg killed by SIGKILL (killer unknown): ...". */
static void put_kill(FILE *f, const json_t *kill) {
        const json_t *victims = json_object_get(kill, "victims"), *v = json_array_get(victims, 0),
                     *killer = json_object_get(kill, "killer"), *p = json_object_get(kill, "pressure");
        double total = field_or_zero(kill, "victims_total"), pid, rss, since;
        const char *trigger = field_string(p, "trigger"), *id = field_string(p, "incident");

        if (json_is_object(killer)) {
                fputs("killed by ", f);
                put_name(f, field_string(killer, "name") ? field_string(killer, "name") : "?");
                if (field_string(killer, "basis") && strcmp(field_string(killer, "basis"), "running_process") == 0)
                        fputs(" (running, no log of the kill)", f);
        } else
                fputs("killed by a signal (killer unknown)", f);
        fputs(": ", f);
        if (json_is_object(v)) {
                put_name(f, field_string(v, "comm") ? field_string(v, "comm") : "?");
                fputs(" (", f);
                put_name(f, field_string(v, "cgroup")      ? field_string(v, "cgroup")
                            : field_string(kill, "cgroup") ? field_string(kill, "cgroup")
                                                           : "?");
                if (field_number(v, "pid", &pid))
                        fprintf(f, ", pid %.0f", pid);
                fputc(')', f);
                if (field_number(v, "rss_kib", &rss)) {
                        fputs(" holding ", f);
                        put_bytes(f, rss * 1024);
                }
                if (field_string(v, "signal"))
                        fprintf(f, ", %s", field_string(v, "signal"));
        }
        if (total > 1)
                fprintf(f, " and %.0f more", total - 1);
        if (trigger && strchr(trigger, ' ')) {
                /* "memory some 50ms 2s": "under memory pressure (some 50ms 2s)" */
                const char *sp = strchr(trigger, ' ');
                char res[16];
                snprintf(res, sizeof res, "%.*s", (int) MIN((size_t) (sp - trigger), sizeof res - 1), trigger);
                fputs(", under ", f);
                put_name(f, res);
                fputs(" pressure (", f);
                put_name(f, sp + 1);
                fputc(')', f);
        } else
                fputs(", under pressure", f);
        if (id) {
                fputs(" after incident ", f);
                put_name(f, id);
                if (field_number(p, "since_ms", &since)) {
                        fputs(", ", f);
                        put_duration_us(f, since * 1000);
                        fputs(" before", f);
                }
        }
}

int summary_format(const json_t *incident, char **ret) {
        const char *type = field_string(incident, "type");
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
                put_kill(f, json_object_get(incident, "kill"));
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
