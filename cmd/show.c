/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/text.h"
#include "cmd/lines.h"
#include "cmd/show.h"
#include "incident/summary.h"

#define CMDLINE_WIDTH 60

static const char *const delay_names[] = {
        "cpu", "blkio", "swapin", "reclaim", "thrashing", "compact", "wpcopy", "irq"
};

static long long get_int(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) ? (long long) json_integer_value(v) : -1;
}

static const char *get_str(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

static double get_avg10(json_t *pressure, const char *resource, const char *stall) {
        json_t *v = json_object_get(json_object_get(json_object_get(pressure, resource), stall), "avg10");
        return json_is_number(v) ? json_number_value(v) : -1;
}

static void show_pressure(json_t *inc, FILE *out) {
        json_t *p = json_object_get(inc, "pressure"), *sample = json_object_get(inc, "sample");
        static const char *const res[] = { "cpu", "memory", "io" };
        char a[32], b[32];

        fputs("  pressure  ", out);
        for (size_t i = 0; i < ELEMENTSOF(res); i++) {
                double some = get_avg10(p, res[i], "some"), full = get_avg10(p, res[i], "full");
                if (some < 0)
                        fprintf(out, "%s%s -", i ? " | " : "", res[i]);
                else
                        fprintf(out, "%s%s %.1f%% some, %.1f%% full", i ? " | " : "", res[i], some,
                                full < 0 ? 0 : full);
        }
        fputs(" (avg10)\n", out);
        const char *basis = get_str(sample, "basis");
        long long stall = get_int(sample, "stall_us"), ms = get_int(sample, "duration_ms");
        fprintf(out, "  sample    %s", basis && strcmp(basis, "lifetime") == 0 ? "lifetime totals (0 ms)" : "");
        if (!basis || strcmp(basis, "lifetime") != 0)
                fprintf(out, "%s", text_format_us(ms < 0 || ms > LLONG_MAX / 1000 ? -1 : ms * 1000, a, sizeof a));
        if (stall >= 0)
                fprintf(out, ", stall +%s", text_format_us(stall, b, sizeof b));
        fprintf(out, "; %lld tasks, %lld exited, %lld errors\n", get_int(sample, "tasks"), get_int(sample, "exited"),
                get_int(sample, "errors"));

        json_t *w = json_object_get(inc, "window");
        const char *verdict = get_str(w, "verdict");
        long long seen = get_int(w, "stall_us"), expected = get_int(w, "expected_us");
        if (verdict && seen >= 0 && expected > 0) {
                fprintf(out, "  window    %s: stall +%s, %.0f%% of the %s the trigger's rate gives",
                        get_str(w, "basis") && strcmp(get_str(w, "basis"), "recorded") == 0 ? "recorded"
                                                                                            : "after the wakeup",
                        text_format_us(seen, a, sizeof a), 100.0 * (double) seen / (double) expected,
                        text_format_us(expected, b, sizeof b));
                fputs(strcmp(verdict, "passed") == 0    ? ": the stall had passed before the sample\n"
                      : strcmp(verdict, "blocked") == 0 ? ": a thread still blocked at its end, the stall not passed\n"
                                                        : "\n",
                      out);
        }

        json_t *st = json_object_get(inc, "states");
        if (json_is_object(st)) {
                json_t *scaled = json_object_get(st, "scaled");
                fprintf(out, "  states    %lld running, %lld sleeping, %lld blocked (D), %lld stopped%s\n",
                        get_int(st, "running"), get_int(st, "sleeping"), get_int(st, "uninterruptible"),
                        get_int(st, "stopped"), json_is_true(scaled) ? " (scaled from a sample)" : "");
        }
}

/* The largest single delay of a process and its share of the process's total. */
static void dominant(json_t *delays, char *buf, size_t size) {
        long long best = -1;
        double total = 0; /* a sum of hostile values must not overflow (fuzz-show) */
        const char *name = "-";
        char d[32];

        for (size_t i = 0; i < ELEMENTSOF(delay_names); i++) {
                long long v = get_int(delays, delay_names[i]);
                if (v < 0)
                        continue;
                total += (double) v;
                if (v > best) {
                        best = v;
                        name = delay_names[i];
                }
        }
        if (best <= 0)
                snprintf(buf, size, "-");
        else
                snprintf(buf, size, "%s %s %.0f%%", name, text_format_us(best, d, sizeof d),
                         (double) best * 100 / total);
}

/* A process's longest wait (psidiag 0.8, taskstats v17) under its row, where it falls in this
 * stall: in the window, or in the trigger's window before it. One from before is not this stall's. */
static void show_worst(json_t *w, FILE *out) {
        const char *when = get_str(w, "when"), *delay = get_str(w, "delay");
        char len[32], ago[32], kind[32];
        long long before = get_int(w, "before_time_ms");

        if (!when || !delay || strcmp(when, "before") == 0)
                return;
        text_terminal_safe(delay, kind, sizeof kind);
        text_format_us(get_int(w, "us"), len, sizeof len);
        /* Hostile input may hold any integer: the magnitude is clamped before it is scaled. */
        long long mag = before < -(LLONG_MAX / 1000) || before > LLONG_MAX / 1000 ? LLONG_MAX / 1000
                        : before < 0                                              ? -before
                                                                                  : before;
        text_format_us(mag * 1000, ago, sizeof ago);
        fprintf(out, "           longest wait %s %s (tid %lld), ended %s %s the wakeup%s\n", len, kind,
                get_int(w, "tid"), ago, before < 0 ? "after" : "before",
                strcmp(when, "trigger_window") == 0 ? ": in the trigger's window, before the sample" : "");
}

/* A wait that has not ended (psidiag 0.9): "blocked 3.2 s so far (tid 812), not yet ended". */
static void show_blocked_now(json_t *b, FILE *out) {
        char len[32];
        long long ms = get_int(b, "ms");

        if (!json_is_object(b) || ms < 0)
                return;
        text_format_us(ms > LLONG_MAX / 1000 ? LLONG_MAX : ms * 1000, len, sizeof len);
        fprintf(out, "           blocked %s so far (tid %lld), not yet ended\n", len, get_int(b, "tid"));
}

/* Under a process in a container (psidiag 0.8): "container web, image nginx:1.25", or its pod;
 * ", podman pod web-pod" after the image when podman's pod is known (psidiag 0.10). */
static void show_container(json_t *c, FILE *out) {
        json_t *pod = json_object_get(c, "pod");
        char a[256], b[256], d[256];

        if (!json_is_object(c))
                return;
        if (json_is_object(pod)) {
                text_terminal_safe(get_str(pod, "namespace"), a, sizeof a);
                text_terminal_safe(get_str(pod, "name"), b, sizeof b);
                text_terminal_safe(json_is_true(json_object_get(pod, "sandbox")) ? "(sandbox)"
                                                                                 : get_str(pod, "container"),
                                   d, sizeof d);
                fprintf(out, "           pod %s/%s, container %s\n", a, b, d);
        } else if (get_str(c, "name")) {
                text_terminal_safe(get_str(c, "name"), a, sizeof a);
                text_terminal_safe(get_str(c, "image") ? get_str(c, "image") : "?", b, sizeof b);
                fprintf(out, "           container %s, image %s", a, b);
                if (get_str(c, "runtime_pod")) {
                        text_terminal_safe(get_str(c, "runtime_pod"), d, sizeof d);
                        fprintf(out, ", podman pod %s", d);
                }
                fputc('\n', out);
        } else if (get_str(c, "unverified")) {
                text_terminal_safe(get_str(c, "unverified"), a, sizeof a);
                fprintf(out, "           container unverified: %s\n", a);
        } else if (get_str(c, "unnamed")) {
                text_terminal_safe(get_str(c, "unnamed"), a, sizeof a);
                fprintf(out, "           container unnamed: %s\n", a);
        }
}

static void show_processes(json_t *inc, FILE *out) {
        json_t *top = json_object_get(inc, "most_delayed"), *p;
        size_t i;

        if (!json_is_array(top) || json_array_size(top) == 0) {
                fputs("  no process was delayed in the sample\n", out);
                return;
        }
        if (json_is_object(json_object_get(inc, "culprits")))
                fputs("  stalled:\n", out);
        fprintf(out, "  %-8s %-8s %-20s %-24s %s\n", "PID", "DELAY", "DOMINANT", "CGROUP", "COMM  CMDLINE");
        json_array_foreach(top, i, p) {
                char score[32], dom[64], comm[64], cg[256], cmd[CMDLINE_WIDTH + 8], gone[48];
                const char *cmdline = get_str(p, "cmdline");
                json_t *parent = json_object_get(p, "parent");

                /* Ended during the sample (psidiag 0.4): said so, with the parent that placed a
                 * process that also started in it. */
                if (json_is_integer(parent))
                        snprintf(gone, sizeof gone, "(ended; child of %lld)", (long long) json_integer_value(parent));
                else
                        snprintf(gone, sizeof gone, "%s",
                                 json_is_true(json_object_get(p, "ended")) ? "(ended)" : "(exited)");

                dominant(json_object_get(p, "delay_us"), dom, sizeof dom);
                text_terminal_safe(get_str(p, "comm"), comm, sizeof comm);
                text_terminal_safe(get_str(p, "cgroup") ? get_str(p, "cgroup") : "-", cg, sizeof cg);
                text_terminal_safe(cmdline ? cmdline : gone, cmd, CMDLINE_WIDTH);
                fprintf(out, "  %-8lld %-8s %-20s %-24s %s  %s%s\n", get_int(p, "pid"),
                        text_format_us(get_int(p, "score_us"), score, sizeof score), dom, cg, comm, cmd,
                        cmdline && strlen(cmdline) >= CMDLINE_WIDTH - 1 ? "..." : "");
                show_worst(json_object_get(p, "worst"), out);
                show_blocked_now(json_object_get(p, "blocked_now"), out);
                show_container(json_object_get(json_object_get(p, "meta"), "container"), out);
        }
}

/* "1.5 GiB", from a byte count (negative: a shrink, signed). */
static const char *format_bytes(long long v, char *buf, size_t size) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        double x = v < 0 ? -(double) v : (double) v;
        size_t u = 0;

        while (x >= 1024 && u + 1 < ELEMENTSOF(units)) {
                x /= 1024;
                u++;
        }
        snprintf(buf, size, "%s%.*f %s", v < 0 ? "-" : "", u ? 1 : 0, x, units[u]);
        return buf;
}

/* What a culprit used, in a few words. */
static void culprit_use(const char *res, json_t *u, bool cgroup, char *buf, size_t size) {
        char a[32], b[32];

        if (strcmp(res, "cpu") == 0)
                snprintf(buf, size, "%s cpu", text_format_us(get_int(u, "cpu_us"), a, sizeof a));
        else if (strcmp(res, "io") == 0)
                snprintf(buf, size, "%s w %s r", format_bytes(get_int(u, "write_bytes"), a, sizeof a),
                         format_bytes(get_int(u, "read_bytes"), b, sizeof b));
        else {
                json_t *g = json_object_get(u, cgroup ? "memory_growth_bytes" : "rss_growth_bytes");
                format_bytes(get_int(u, cgroup ? "memory_bytes" : "rss_bytes"), a, sizeof a);
                if (json_is_integer(g))
                        snprintf(buf, size, "%s%s, %s", json_integer_value(g) >= 0 ? "+" : "",
                                 format_bytes((long long) json_integer_value(g), b, sizeof b), a);
                else
                        snprintf(buf, size, "%s", a);
        }
}

static double get_share(json_t *o) {
        json_t *v = json_object_get(o, "share");
        return json_is_number(v) ? json_number_value(v) * 100 : 0;
}

/* Who is causing it (psidiag 0.5): the processes and cgroups that used the resource most. */
static void show_culprits(json_t *inc, FILE *out) {
        json_t *c = json_object_get(inc, "culprits"), *procs, *cgroups, *limit, *p;
        const char *res;
        char scope[256], file[64], use[96], comm[64], cg[256], cmd[CMDLINE_WIDTH + 8];
        size_t i;

        if (!json_is_object(c) || !(res = get_str(c, "resource")))
                return;
        text_terminal_safe(get_str(c, "scope") ? get_str(c, "scope") : "-", scope, sizeof scope);
        limit = json_object_get(c, "limit");
        if (json_is_object(limit)) {
                text_terminal_safe(get_str(limit, "file") ? get_str(limit, "file") : "-", file, sizeof file);
                fprintf(out, "  causing it (%s in %s, %s %s):\n", res, scope,
                        json_is_true(json_object_get(c, "own_limit")) ? "throttled by its own" : "under its", file);
        } else
                fprintf(out, "  causing it (%s, the whole node):\n", res);
        if (summary_stall_passed(inc, NULL))
                fputs("  (the stall had passed before the sample: these used it in a quiet window, none is named)\n",
                      out);
        procs = json_object_get(c, "processes");
        if (!json_is_array(procs) || json_array_size(procs) == 0)
                fputs("  no process used it in the sample\n", out);
        else
                fprintf(out, "  %-8s %-22s %-6s %-24s %s\n", "PID", "USE", "SHARE", "CGROUP", "COMM  CMDLINE");
        json_array_foreach(procs, i, p) {
                const char *cmdline = get_str(p, "cmdline");
                char pid[24], ended[48], many[40];

                culprit_use(res, json_object_get(p, "usage"), false, use, sizeof use);
                text_terminal_safe(get_str(p, "comm") ? get_str(p, "comm") : "-", comm, sizeof comm);
                text_terminal_safe(get_str(p, "cgroup") ? get_str(p, "cgroup") : "-", cg, sizeof cg);
                if (json_is_integer(json_object_get(p, "pid")))
                        snprintf(pid, sizeof pid, "%lld", get_int(p, "pid"));
                else
                        snprintf(pid, sizeof pid, "-");
                if (get_int(p, "processes") > 1 || !json_is_integer(json_object_get(p, "pid")))
                        snprintf(ended, sizeof ended, "(%lld ended in the sample)", get_int(p, "processes"));
                else
                        snprintf(ended, sizeof ended, "(ended)");
                /* A program's processes, some alive: the top one's cmdline, and how many (psidiag 0.12). */
                if (cmdline && get_int(p, "processes") > 1)
                        snprintf(many, sizeof many, "  [%lld processes]", get_int(p, "processes"));
                else
                        many[0] = '\0';
                text_terminal_safe(cmdline ? cmdline : ended, cmd, CMDLINE_WIDTH);
                fprintf(out, "  %-8s %-22s %5.1f%% %-24s %s  %s%s%s%s\n", pid, use, get_share(p), cg, comm, cmd,
                        cmdline && strlen(cmdline) >= CMDLINE_WIDTH - 1 ? "..." : "", many,
                        json_is_true(json_object_get(p, "victim")) ? "  [also stalled]" : "");
                show_container(json_object_get(json_object_get(p, "meta"), "container"), out);
        }
        cgroups = json_object_get(c, "cgroups");
        json_array_foreach(cgroups, i, p) {
                if (i >= 3)
                        break;
                culprit_use(res, json_object_get(p, "usage"), true, use, sizeof use);
                text_terminal_safe(get_str(p, "path") ? get_str(p, "path") : "-", cg, sizeof cg);
                fprintf(out, "%s%s %.0f%% (%s)", i ? ", " : "  cgroups   ", cg, get_share(p), use);
        }
        if (json_is_array(cgroups) && json_array_size(cgroups) > 0)
                fputc('\n', out);
}

/* One line of "on what" (psidiag 0.5): the limit behind the stall, and where blocked threads wait. */
static void show_on_what(json_t *inc, FILE *out) {
        json_t *l = json_object_get(inc, "limits"), *b = json_object_get(inc, "blocked"), *o;
        char line[512] = "", a[32], c[32], cg[256], name[64];
        size_t n = 0;

        if ((o = json_object_get(l, "cpu")) && json_is_object(o)) {
                long long q = get_int(o, "quota_us"), per = get_int(o, "period_us");
                text_terminal_safe(get_str(o, "cgroup") ? get_str(o, "cgroup") : "-", cg, sizeof cg);
                if (q >= 0 && per > 0)
                        n += (size_t) snprintf(
                                line, sizeof line, "%s: quota %.2f CPU at %s, throttled %s in %lld of %lld periods",
                                get_str(o, "verdict") ? get_str(o, "verdict") : "-", (double) q / (double) per, cg,
                                text_format_us(get_int(o, "throttled_us"), a, sizeof a), get_int(o, "nr_throttled"),
                                get_int(o, "nr_periods"));
                else
                        n += (size_t) snprintf(line, sizeof line, "contention: no cpu quota up to %s", cg);
        } else if ((o = json_object_get(l, "memory")) && json_is_object(o)) {
                json_t *ev = json_object_get(o, "events"), *rf = json_object_get(o, "refault");
                long long max = get_int(o, "max_bytes"), high = get_int(o, "high_bytes");
                text_terminal_safe(get_str(o, "cgroup") ? get_str(o, "cgroup") : "-", cg, sizeof cg);
                n += (size_t) snprintf(line, sizeof line, "%s %s at %s, %s used, %lld max events, %lld refaults",
                                       max >= 0    ? "memory limit"
                                       : high >= 0 ? "memory.high"
                                                   : "no memory limit",
                                       max >= 0 || high >= 0 ? format_bytes(max >= 0 ? max : high, a, sizeof a) : "-",
                                       cg, format_bytes(get_int(o, "current_bytes"), c, sizeof c),
                                       get_int(ev, "max") < 0 ? 0 : get_int(ev, "max"),
                                       (get_int(rf, "anon") < 0 ? 0 : get_int(rf, "anon")) +
                                               (get_int(rf, "file") < 0 ? 0 : get_int(rf, "file")));
        } else if ((o = json_object_get(l, "io")) && json_is_object(o)) {
                json_t *devs = json_object_get(o, "devices"), *d;
                size_t i;
                json_array_foreach(devs, i, d) {
                        if (i >= 3 || n >= sizeof line)
                                break;
                        text_terminal_safe(get_str(d, "device") ? get_str(d, "device") : "?", name, sizeof name);
                        n += (size_t) snprintf(line + n, sizeof line - n, "%s%s: %s written, %s read%s", i ? "; " : "",
                                               name, format_bytes(get_int(d, "wbytes"), a, sizeof a),
                                               format_bytes(get_int(d, "rbytes"), c, sizeof c),
                                               json_is_object(json_object_get(d, "max")) ? " (io.max)" : "");
                }
        }
        json_t *g = json_is_array(b) ? json_array_get(b, 0) : NULL;
        if (json_is_object(g) && n < sizeof line) {
                const char *res = get_str(g, "resource"); /* psidiag 0.10: what the wait is for */
                text_terminal_safe(get_str(g, "wchan") ? get_str(g, "wchan") : "an unknown wait", name, sizeof name);
                n += (size_t) snprintf(line + n, sizeof line - n, "%s%lld thread%s in %s%s", n ? "; " : "",
                                       get_int(g, "threads_total"), get_int(g, "threads_total") == 1 ? "" : "s", name,
                                       res && strcmp(res, "memory") == 0 ? " (memory)"
                                       : res && strcmp(res, "io") == 0   ? " (io)"
                                                                         : "");
        }
        if (n > 0)
                fprintf(out, "  on what   %s\n", line);
}

/* The kill of an oom incident: victim, where, how big, and the pressure incidents that led to it. */
static void show_oom(json_t *inc, FILE *out) {
        json_t *o = json_object_get(inc, "oom"), *v, *rss, *related = json_object_get(inc, "related");
        char comm[64], cg[256], memcg[256], src[32], first[128];

        if (!json_is_object(o))
                return;
        v = json_object_get(o, "victim");
        text_terminal_safe(get_str(o, "source") ? get_str(o, "source") : "-", src, sizeof src);
        if (json_is_object(v)) {
                rss = json_object_get(v, "rss_kib");
                text_terminal_safe(get_str(v, "comm") ? get_str(v, "comm") : "-", comm, sizeof comm);
                text_terminal_safe(get_str(v, "cgroup") ? get_str(v, "cgroup") : "-", cg, sizeof cg);
                text_terminal_safe(get_str(o, "oom_memcg")                      ? get_str(o, "oom_memcg")
                                   : json_is_true(json_object_get(o, "global")) ? "(global)"
                                                                                : "-",
                                   memcg, sizeof memcg);
                fprintf(out, "  killed    pid %lld %s in %s (limit hit: %s), anon %lld KiB, file %lld KiB\n",
                        get_int(v, "pid"), comm, cg, memcg, get_int(rss, "anon"), get_int(rss, "file"));
        } else {
                const char *c = get_str(o, "cgroup");
                text_terminal_safe(c ? c : "node", cg, sizeof cg);
                fprintf(out, "  killed    %lld task(s) in %s, counted from %s (victim unknown)\n", get_int(o, "kills"),
                        cg, src);
        }
        size_t n = json_is_array(related) ? json_array_size(related) : 0;
        if (n == 0)
                fputs("  related   no pressure incident before it\n", out);
        else {
                const char *id = json_string_value(json_array_get(related, 0));
                text_terminal_safe(id ? id : "-", first, sizeof first);
                fprintf(out, "  related   %zu pressure incident%s, newest %s\n", n, n == 1 ? "" : "s", first);
        }
}

/* The victims of a kill incident, its killer and the pressure before it. */
static void show_kill(json_t *inc, FILE *out) {
        json_t *o = json_object_get(inc, "kill"), *victims, *killer, *p;
        char comm[64], cg[256], name[64], mark[256], id[128];
        size_t i;
        json_t *v;

        if (!json_is_object(o))
                return;
        victims = json_object_get(o, "victims");
        killer = json_object_get(o, "killer");
        p = json_object_get(o, "pressure");
        if (json_is_object(killer)) {
                text_terminal_safe(get_str(killer, "name") ? get_str(killer, "name") : "-", name, sizeof name);
                text_terminal_safe(get_str(killer, "mark") ? get_str(killer, "mark") : "-", mark, sizeof mark);
                fprintf(out, "  killer    %s (%s: %s)\n", name,
                        get_str(killer, "basis") ? get_str(killer, "basis") : "-", mark);
        } else
                fputs("  killer    unknown (no mark)\n", out);
        fprintf(out, "  victims   %lld\n", get_int(o, "victims_total"));
        json_array_foreach(victims, i, v) {
                text_terminal_safe(get_str(v, "comm") ? get_str(v, "comm") : "-", comm, sizeof comm);
                text_terminal_safe(get_str(v, "cgroup") ? get_str(v, "cgroup") : "-", cg, sizeof cg);
                fprintf(out, "  killed    pid %lld %s in %s by %s, rss %lld KiB\n", get_int(v, "pid"), comm, cg,
                        get_str(v, "signal") ? get_str(v, "signal") : "-", get_int(v, "rss_kib"));
        }
        if (get_str(p, "incident")) {
                text_terminal_safe(get_str(p, "incident"), id, sizeof id);
                fprintf(out, "  pressure  incident %s, %lld ms before\n", id, get_int(p, "since_ms"));
        }
        /* What systemd-oomd's prekill call let the agent measure before the kill. */
        json_t *pk = json_object_get(o, "prekill");
        if (!json_is_object(pk))
                return;
        text_terminal_safe(get_str(pk, "cgroup") ? get_str(pk, "cgroup") : "-", cg, sizeof cg);
        fprintf(out, "  prekill   %s: %s, answered in %lld us, %lld processes, %lld KiB\n", cg,
                get_str(pk, "outcome") ? get_str(pk, "outcome") : "-", get_int(pk, "answered_us"),
                get_int(pk, "processes_total"), get_int(pk, "rss_kib"));
        json_array_foreach(json_object_get(pk, "processes"), i, v) {
                text_terminal_safe(get_str(v, "comm") ? get_str(v, "comm") : "-", comm, sizeof comm);
                fprintf(out, "  before    pid %lld %s, rss %lld KiB, swap %lld KiB\n", get_int(v, "pid"), comm,
                        get_int(v, "rss_kib"), get_int(v, "swap_kib"));
        }
}

/* The incident's sentence; a line written before psidiag 0.6 has none, and gets one made from its
 * fields as the agent makes it. */
static void show_summary(json_t *inc, FILE *out) {
        _cleanup_free_ char *made = NULL;
        const char *s = get_str(inc, "summary");
        char safe[1024];

        if (!s && summary_format(inc, &made) >= 0)
                s = made;
        if (s)
                fprintf(out, "  %s\n", text_terminal_safe(s, safe, sizeof safe));
}

int show_line(const char *line, size_t len, FILE *out, char *error, size_t error_size) {
        json_error_t jerr;
        json_t *inc = json_loadb(line, len, 0, &jerr), *t;
        char type[32], spec[128], cg[256], host[256], when[64];

        if (!inc) {
                snprintf(error, error_size, "not JSON: %s", jerr.text);
                return -EINVAL;
        }
        if (!json_is_object(inc) || !get_str(inc, "type") || !get_str(inc, "time")) {
                snprintf(error, error_size, "not an incident (no type or time)");
                json_decref(inc);
                return -EINVAL;
        }
        t = json_object_get(inc, "trigger");
        text_terminal_safe(get_str(inc, "type"), type, sizeof type);
        text_terminal_safe(get_str(inc, "time"), when, sizeof when);
        text_terminal_safe(get_str(json_object_get(inc, "host"), "hostname"), host, sizeof host);
        if (json_is_object(t)) {
                const char *c = get_str(t, "cgroup");
                text_terminal_safe(c ? c : "node", cg, sizeof cg);
                text_terminal_safe(get_str(t, "spec"), spec, sizeof spec);
                fprintf(out, "%s  %s  %s  \"%s\"  on %s\n", when, type, cg, spec, host);
        } else if (json_is_object(json_object_get(inc, "oom")) || json_is_object(json_object_get(inc, "kill"))) {
                json_t *k = json_object_get(inc, "oom") ? json_object_get(inc, "oom") : json_object_get(inc, "kill");
                const char *c = get_str(k, "cgroup");
                text_terminal_safe(c ? c : "node", cg, sizeof cg);
                fprintf(out, "%s  %s  %s  on %s\n", when, type, cg, host);
        } else
                fprintf(out, "%s  %s  on %s\n", when, type, host);
        show_summary(inc, out);
        show_oom(inc, out);
        show_kill(inc, out);
        show_pressure(inc, out);
        show_on_what(inc, out);
        show_processes(inc, out);
        show_culprits(inc, out);
        json_decref(inc);
        return 0;
}

/* One line shown, after a blank line between incidents (LineFn; userdata: how many were shown). */
static int show_one(const char *line, size_t len, char *error, size_t error_size, void *userdata) {
        unsigned long *shown = userdata;

        if (*shown > 0)
                fputc('\n', stdout);
        int r = show_line(line, len, stdout, error, error_size);
        if (r >= 0)
                (*shown)++;
        return r;
}

int show_run(const char *path) {
        unsigned long shown = 0;
        FILE *in = lines_open(path);

        if (!in)
                return 2;
        unsigned long bad = lines_each(in, path ? path : "stdin", show_one, &shown);
        lines_close(in);
        return bad ? 1 : 0;
}
