/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/safepath.h"
#include "sinks/metrics.h"

/* A label value with \, " and newline escaped, as the exposition format wants. */
static void label_value(FILE *f, const char *s) {
        for (; *s; s++) {
                if (*s == '\\' || *s == '"')
                        fputc('\\', f);
                if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        }
}

/* name{key="label"} value, one line per count. */
static void labelled(FILE *f, const char *name, const char *key, const MetricsCount *counts, size_t n) {
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "%s{%s=\"", name, key);
                label_value(f, counts[i].label);
                fprintf(f, "\"} %llu\n", (unsigned long long) counts[i].value);
        }
}

static void metric(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A metric without labels: its HELP and TYPE lines and its one value. */
static void single(FILE *f, const char *name, const char *type, const char *help, uint64_t value) {
        metric(f, name, type, help);
        fprintf(f, "%s %llu\n", name, (unsigned long long) value);
}

/* A time kept in microseconds, written in seconds. */
static void single_us(FILE *f, const char *name, const char *type, const char *help, uint64_t us) {
        metric(f, name, type, help);
        fprintf(f, "%s %llu.%06llu\n", name, (unsigned long long) (us / 1000000), (unsigned long long) (us % 1000000));
}

/* One sample per output, labelled with its path. */
static void per_output(FILE *f, const char *name, const Metrics *m, bool failed) {
        for (size_t i = 0; i < m->n_outputs; i++) {
                fprintf(f, "%s{output=\"", name);
                label_value(f, m->outputs[i].path);
                fprintf(f, "\"} %llu\n", (unsigned long long) (failed ? m->outputs[i].failed : m->outputs[i].written));
        }
}

/* name{k1="v1",k2="v2"} value per series; seconds: the value is microseconds, written as seconds. */
static void series(FILE *f, const char *name, const char *const *keys, size_t n_keys, const MetricsSeries *s, size_t n,
                   bool seconds) {
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "%s{", name);
                for (size_t k = 0; k < n_keys; k++) {
                        fprintf(f, "%s%s=\"", k ? "," : "", keys[k]);
                        label_value(f, s[i].labels[k] ? s[i].labels[k] : "");
                        fputc('"', f);
                }
                if (seconds)
                        fprintf(f, "} %llu.%06llu\n", (unsigned long long) (s[i].value / 1000000),
                                (unsigned long long) (s[i].value % 1000000));
                else
                        fprintf(f, "} %llu\n", (unsigned long long) s[i].value);
        }
}

int metrics_format(const Metrics *m, char **ret) {
        static const char *const incident_keys[] = { "watch", "type", "resource" }, *const stall_keys[] = {
                "watch", "resource"
        };
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        metric(f, "psidiag_info", "gauge", "psidiag's version.");
        fputs("psidiag_info{version=\"", f);
        label_value(f, m->version);
        fputs("\"} 1\n", f);
        single(f, "psidiag_start_time_seconds", "gauge", "When the agent started, in seconds since the epoch.",
               m->start_time_s);
        single(f, "psidiag_watches", "gauge", "Watches in the config.", m->watches);
        single(f, "psidiag_triggers_configured", "gauge", "Triggers in the config.", m->triggers_configured);
        single(f, "psidiag_triggers_armed", "gauge", "Triggers armed now.", m->triggers_armed);
        metric(f, "psidiag_wakeups_total", "counter",
               "Trigger wakeups by what the agent did: sampled, or ignored (no_growth, below_threshold, reported, "
               "busy, cooldown, capacity, rate_limit).");
        labelled(f, "psidiag_wakeups_total", "verdict", m->wakeups, m->n_wakeups);
        metric(f, "psidiag_incidents_suppressed_total", "counter",
               "Incidents not taken because a limit held them back, by reason: cooldown (the watch's cooldown_ms), "
               "rate_limit (max_incidents_per_minute), capacity (max_concurrent_samples).");
        labelled(f, "psidiag_incidents_suppressed_total", "reason", m->suppressed, m->n_suppressed);
        single(f, "psidiag_samples_total", "counter", "Samples taken.", m->samples);
        single(f, "psidiag_sample_thread_errors_total", "counter",
               "Tasks (processes since psidiag 0.4) that could not be measured for a reason other than exiting.",
               m->sample_thread_errors);
        single(f, "psidiag_cgroups_gone_total", "counter", "Watched cgroups that were removed.", m->cgroups_gone);
        single(f, "psidiag_oom_kills_total", "counter", "OOM kills written as oom incidents.", m->oom_kills);
        metric(f, "psidiag_kills_total", "counter",
               "Kill incidents (processes of a watched cgroup killed by SIGKILL or SIGTERM under pressure), by killer "
               "(earlyoom, nohang, systemd-oomd, oomd, unknown).");
        labelled(f, "psidiag_kills_total", "killer", m->kills, m->n_kills);
        metric(f, "psidiag_prekill_calls_total", "counter",
               "Calls to systemd-oomd's prekill hook, by result: notify (a kill announced, answered), answered "
               "(another call), refused (malformed, oversized or unknown: a Varlink error), denied (not root), busy "
               "(too many clients), idle (sent nothing).");
        labelled(f, "psidiag_prekill_calls_total", "result", m->prekill, m->n_prekill);
        single(f, "psidiag_kmsg_lost_total", "counter",
               "Times the kernel's message ring overwrote messages before psidiag read them.", m->kmsg_lost);
        metric(f, "psidiag_incidents_written_total", "counter", "Incident lines written, by output.");
        per_output(f, "psidiag_incidents_written_total", m, false);
        metric(f, "psidiag_incidents_lost_total", "counter", "Incident lines that could not be written, by output.");
        per_output(f, "psidiag_incidents_lost_total", m, true);
        metric(f, "psidiag_incidents_total", "counter",
               "Incidents taken, by watch (its configured cgroup pattern, / node-wide), type (pressure, oom, kill) and "
               "resource.");
        series(f, "psidiag_incidents_total", incident_keys, 3, m->incidents, m->n_incidents, false);
        metric(f, "psidiag_stall_seconds_total", "counter",
               "Stall time measured in the samples of pressure incidents (growth of the fired some/full total), by "
               "watch and resource.");
        series(f, "psidiag_stall_seconds_total", stall_keys, 2, m->stall, m->n_stall, true);
        single(f, "psidiag_exit_records_lost_total", "counter",
               "taskstats exit records the kernel dropped on the agent's exit listeners (an exit storm): during "
               "samples (ended processes missing from culprits) and in kill windows (kills reported as ended "
               "unheard).",
               m->exit_records_lost);
        single(f, "psidiag_blkio_unstarted_total", "counter",
               "blkio waits the kernel ended without having started them (a delay as long as the node's uptime), "
               "taken out of incidents' delays.",
               m->blkio_unstarted);
        metric(f, "psidiag_unparsed_lines_total", "counter",
               "Lines of kernel files psidiag could not read and skipped, keeping the rest of the file, by kind of "
               "file (a new kernel's format: run with --log-level debug to see the first of each).");
        labelled(f, "psidiag_unparsed_lines_total", "file", m->unparsed, m->n_unparsed);
        single(f, "psidiag_episodes_total", "counter",
               "Pressure episodes begun: runs of wakeups of one resource each within a trigger window of the last "
               "(the incidents' episode).",
               m->episodes);
        single(f, "psidiag_culprit_passes_total", "counter",
               "Culprit passes run (each measures its scope at both ends).", m->culprit_passes);
        single(f, "psidiag_culprit_passes_shared_total", "counter",
               "Samples whose culprits came from the node pass another overlapping sample of the resource ran "
               "(culprits.shared_pass).",
               m->culprit_passes_shared);
        single(f, "psidiag_recordings_total", "counter",
               "Recordings of a watch's recent past begun (after a pressure incident, until record_s without a "
               "wakeup).",
               m->recordings);
        single(f, "psidiag_recordings_refused_total", "counter",
               "Recordings not begun because max_concurrent_samples watches were recording.", m->recordings_refused);
        single(f, "psidiag_recorder_entries_total", "counter",
               "Entries the recorder took (each: the watch's processes, its culprit scope's processes and cgroups).",
               m->recorder_entries);
        single(f, "psidiag_recorder_wakeups_total", "counter",
               "Wakeups the recorder raised for a trigger whose growth it saw over the trigger's window (a read of the "
               "pressure file can fold the stall into the averages before the kernel checks an unprivileged trigger).",
               m->recorder_wakeups);
        single_us(f, "psidiag_recorder_seconds_total", "counter",
                  "Time the recorder spent taking its entries (on the agent's loop).", m->recorder_us);
        single_us(f, "psidiag_recording_seconds_total", "counter", "Time watches spent recording, summed over them.",
                  m->recording_us);
        single(f, "psidiag_container_lookups_total", "counter",
               "Lookups of the container a reported process or cgroup is in (its name, image and pod).",
               m->container_lookups);
        single(f, "psidiag_container_reads_total", "counter",
               "Lookups that read the container runtime's files (the first of each container: the cache's misses).",
               m->container_reads);
        single(f, "psidiag_container_evictions_total", "counter",
               "Containers forgotten by the cache of container names to make room for others.", m->container_evictions);
        single(f, "psidiag_containers_unnamed_total", "counter",
               "Lookups whose container its runtime's files did not name (meta.container.unnamed).",
               m->containers_unnamed);
        single(f, "psidiag_containers_unverified_total", "counter",
               "Of those, lookups of a cgroup that claims a container's id but was not made where or by whom its "
               "runtime makes one (meta.container.unverified).",
               m->containers_unverified);
        metric(f, "psidiag_windows_total", "counter",
               "Pressure incidents by their window's basis: after_wakeup (the sample after the wakeup) or recorded "
               "(from before the wakeup).");
        labelled(f, "psidiag_windows_total", "basis", m->windows, m->n_windows);
        single(f, "psidiag_windows_passed_total", "counter",
               "Pressure incidents whose window saw under a quarter of the stall that fired (window.verdict passed): "
               "no culprit named.",
               m->windows_passed);
        single(f, "psidiag_dir_watches", "gauge",
               "inotify watches the agent holds: directories of the cgroup tree discovery watches for cgroups and "
               "containers to appear, and memory.events files where oom kills are counted from them (kmsg closed).",
               m->dir_watches);
        single(f, "psidiag_dir_watch_limit", "gauge",
               "The most it may watch: max_dir_watches, at most a quarter of fs.inotify.max_user_watches.",
               m->dir_watch_limit);
        single(f, "psidiag_dir_watches_refused_total", "counter",
               "Directories a walk found and did not watch (the limit reached, the owning user's share of it, or the "
               "kernel's fs.inotify.max_user_watches), and memory.events files not watched at the limit.",
               m->dir_watches_refused);
        single(f, "psidiag_discovery_walks_total", "counter",
               "Walks for configured cgroups and containers: of the whole tree, or of the cgroups a burst of inotify "
               "events made.",
               m->discovery_walks);
        single_us(f, "psidiag_discovery_walk_seconds_total", "counter", "Time those walks took (on the agent's loop).",
                  m->discovery_walk_us);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

int metrics_write(const char *path, const Metrics *m, char *why, size_t why_size) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        const char *base;
        char tmp[300];
        int fd, r;

        r = metrics_format(m, &text);
        if (r < 0) {
                snprintf(why, why_size, "out of memory");
                return r;
        }
        dirfd = safepath_open_parent(path, &base, why, why_size);
        if (dirfd < 0)
                return dirfd;
        /* A dot-name, so the textfile collector (which reads *.prom) never sees it half written. */
        snprintf(tmp, sizeof tmp, ".%s.%d.tmp", base, (int) getpid());
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                snprintf(why, why_size, "cannot create %s", tmp);
                return negative_errno();
        }
        r = write_all_fd(fd, text, strlen(text), NULL);
        safe_close(fd);
        if (r < 0) {
                snprintf(why, why_size, "cannot write %s", tmp);
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        if (renameat(dirfd, tmp, dirfd, base) < 0) {
                r = negative_errno();
                snprintf(why, why_size, "cannot rename %s over %s", tmp, base);
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        return 0;
}
