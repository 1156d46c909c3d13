/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
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

typedef enum MetricKind {
        METRIC_VALUE,          /* no labels: the uint64_t at offset */
        METRIC_SECONDS,        /* no labels: the uint64_t at offset, microseconds, written as seconds */
        METRIC_INFO,           /* name{keys[0]="the string at offset"} 1 */
        METRIC_COUNTS,         /* name{keys[0]="label"} value: the MetricsCount array at offset, n_offset its length */
        METRIC_SERIES,         /* name{keys...} value: the MetricsSeries array at offset, n_offset its length */
        METRIC_SERIES_SECONDS, /* the same, its values microseconds written as seconds */
        METRIC_OUTPUTS,        /* name{output="path"} value: per output, the uint64_t at offset in its MetricsOutput */
} MetricKind;

/* One metric family: its name, type and help, and where its values are. The only place a metric
 * is defined: the formatter walks the table, and scripts/check-docs reads the names from it. */
typedef struct MetricRow {
        const char *name, *type, *help;
        MetricKind kind;
        size_t offset, n_offset;
        const char *keys[METRICS_LABELS_MAX]; /* the label names, as many as the family has */
} MetricRow;

#define VALUE(field) .kind = METRIC_VALUE, .offset = offsetof(Metrics, field)
#define SECONDS(field) .kind = METRIC_SECONDS, .offset = offsetof(Metrics, field)
#define COUNTS(field, key)                                                                                             \
        .kind = METRIC_COUNTS, .offset = offsetof(Metrics, field), .n_offset = offsetof(Metrics, n_##field),           \
        .keys = { key }
#define SERIES(kind_, field, ...)                                                                                      \
        .kind = kind_, .offset = offsetof(Metrics, field), .n_offset = offsetof(Metrics, n_##field),                   \
        .keys = { __VA_ARGS__ }
#define OUTPUTS(field) .kind = METRIC_OUTPUTS, .offset = offsetof(MetricsOutput, field), .keys = { "output" }

/* In the order the file has them. */
static const MetricRow metric_table[] = {
        { "psidiag_info", "gauge", "psidiag's version.", .kind = METRIC_INFO, .offset = offsetof(Metrics, version),
          .keys = { "version" } },
        { "psidiag_start_time_seconds", "gauge", "When the agent started, in seconds since the epoch.",
          VALUE(start_time_s) },
        { "psidiag_watches", "gauge", "Watches in the config.", VALUE(watches) },
        { "psidiag_triggers_configured", "gauge", "Triggers in the config.", VALUE(triggers_configured) },
        { "psidiag_triggers_armed", "gauge", "Triggers armed now.", VALUE(triggers_armed) },
        { "psidiag_wakeups_total", "counter",
          "Trigger wakeups by what the agent did: sampled, or ignored (no_growth, below_threshold, reported, "
          "busy, cooldown, capacity, rate_limit).",
          COUNTS(wakeups, "verdict") },
        { "psidiag_incidents_suppressed_total", "counter",
          "Incidents not taken because a limit held them back, by reason: cooldown (the watch's cooldown_ms), "
          "rate_limit (max_incidents_per_minute), capacity (max_concurrent_samples).",
          COUNTS(suppressed, "reason") },
        { "psidiag_samples_total", "counter", "Samples taken.", VALUE(samples) },
        { "psidiag_sample_thread_errors_total", "counter",
          "Tasks (processes since psidiag 0.4) that could not be measured for a reason other than exiting.",
          VALUE(sample_thread_errors) },
        { "psidiag_cgroups_gone_total", "counter", "Watched cgroups that were removed.", VALUE(cgroups_gone) },
        { "psidiag_oom_kills_total", "counter", "OOM kills written as oom incidents.", VALUE(oom_kills) },
        { "psidiag_kills_total", "counter",
          "Kill incidents (processes of a watched cgroup killed by SIGKILL or SIGTERM under pressure), by killer "
          "(earlyoom, nohang, systemd-oomd, oomd, unknown).",
          COUNTS(kills, "killer") },
        { "psidiag_prekill_calls_total", "counter",
          "Calls to systemd-oomd's prekill hook, by result: notify (a kill announced, answered), answered "
          "(another call), refused (malformed, oversized or unknown: a Varlink error), denied (not root), busy "
          "(too many clients), idle (sent nothing).",
          COUNTS(prekill, "result") },
        { "psidiag_kmsg_lost_total", "counter",
          "Times the kernel's message ring overwrote messages before psidiag read them.", VALUE(kmsg_lost) },
        { "psidiag_incidents_written_total", "counter", "Incident lines written, by output.", OUTPUTS(written) },
        { "psidiag_incidents_lost_total", "counter", "Incident lines that could not be written, by output.",
          OUTPUTS(failed) },
        { "psidiag_incidents_total", "counter",
          "Incidents taken, by watch (its configured cgroup pattern, / node-wide), type (pressure, oom, kill) and "
          "resource.",
          SERIES(METRIC_SERIES, incidents, "watch", "type", "resource") },
        { "psidiag_stall_seconds_total", "counter",
          "Stall time measured in the samples of pressure incidents (growth of the fired some/full total), by "
          "watch and resource.",
          SERIES(METRIC_SERIES_SECONDS, stall, "watch", "resource") },
        { "psidiag_exit_records_lost_total", "counter",
          "taskstats exit records the kernel dropped on the agent's exit listeners (an exit storm): during "
          "samples (ended processes missing from culprits) and in kill windows (kills reported as ended "
          "unheard).",
          VALUE(exit_records_lost) },
        { "psidiag_blkio_unstarted_total", "counter",
          "blkio waits the kernel ended without having started them (a delay as long as the node's uptime), "
          "taken out of incidents' delays.",
          VALUE(blkio_unstarted) },
        { "psidiag_unparsed_lines_total", "counter",
          "Lines of kernel files psidiag could not read and skipped, keeping the rest of the file, by kind of "
          "file (a new kernel's format: run with --log-level debug to see the first of each).",
          COUNTS(unparsed, "file") },
        { "psidiag_episodes_total", "counter",
          "Pressure episodes begun: runs of wakeups of one resource each within a trigger window of the last "
          "(the incidents' episode).",
          VALUE(episodes) },
        { "psidiag_culprit_passes_total", "counter", "Culprit passes run (each measures its scope at both ends).",
          VALUE(culprit_passes) },
        { "psidiag_culprit_passes_shared_total", "counter",
          "Samples whose culprits came from the node pass another overlapping sample of the resource ran "
          "(culprits.shared_pass).",
          VALUE(culprit_passes_shared) },
        { "psidiag_recordings_total", "counter",
          "Recordings of a watch's recent past begun (after a pressure incident, until record_s without a "
          "wakeup).",
          VALUE(recordings) },
        { "psidiag_recordings_refused_total", "counter",
          "Recordings not begun because max_concurrent_samples watches were recording.", VALUE(recordings_refused) },
        { "psidiag_recorder_entries_total", "counter",
          "Entries the recorder took (each: the watch's processes, its culprit scope's processes and cgroups).",
          VALUE(recorder_entries) },
        { "psidiag_recorder_wakeups_total", "counter",
          "Wakeups the recorder raised for a trigger whose growth it saw over the trigger's window (a read of the "
          "pressure file can fold the stall into the averages before the kernel checks an unprivileged trigger).",
          VALUE(recorder_wakeups) },
        { "psidiag_recorder_seconds_total", "counter",
          "Time the recorder spent taking its entries (on the agent's loop).", SECONDS(recorder_us) },
        { "psidiag_recording_seconds_total", "counter", "Time watches spent recording, summed over them.",
          SECONDS(recording_us) },
        { "psidiag_container_lookups_total", "counter",
          "Lookups of the container a reported process or cgroup is in (its name, image and pod).",
          VALUE(container_lookups) },
        { "psidiag_container_reads_total", "counter",
          "Lookups that read the container runtime's files (the first of each container: the cache's misses).",
          VALUE(container_reads) },
        { "psidiag_container_evictions_total", "counter",
          "Containers forgotten by the cache of container names to make room for others.", VALUE(container_evictions) },
        { "psidiag_containers_unnamed_total", "counter",
          "Lookups whose container its runtime's files did not name (meta.container.unnamed).",
          VALUE(containers_unnamed) },
        { "psidiag_containers_unverified_total", "counter",
          "Of those, lookups of a cgroup that claims a container's id but was not made where or by whom its "
          "runtime makes one (meta.container.unverified).",
          VALUE(containers_unverified) },
        { "psidiag_windows_total", "counter",
          "Pressure incidents by their window's basis: after_wakeup (the sample after the wakeup) or recorded "
          "(from before the wakeup).",
          COUNTS(windows, "basis") },
        { "psidiag_windows_passed_total", "counter",
          "Pressure incidents whose window saw under a quarter of the stall that fired (window.verdict passed): "
          "no culprit named.",
          VALUE(windows_passed) },
        { "psidiag_dir_watches", "gauge",
          "inotify watches the agent holds: directories of the cgroup tree discovery watches for cgroups and "
          "containers to appear, and memory.events files where oom kills are counted from them (kmsg closed).",
          VALUE(dir_watches) },
        { "psidiag_dir_watch_limit", "gauge",
          "The most it may watch: max_dir_watches, at most a quarter of fs.inotify.max_user_watches.",
          VALUE(dir_watch_limit) },
        { "psidiag_dir_watches_refused_total", "counter",
          "Directories a walk found and did not watch (the limit reached, the owning user's share of it, or the "
          "kernel's fs.inotify.max_user_watches), and memory.events files not watched at the limit.",
          VALUE(dir_watches_refused) },
        { "psidiag_discovery_walks_total", "counter",
          "Walks for configured cgroups and containers: of the whole tree, or of the cgroups a burst of inotify "
          "events made.",
          VALUE(discovery_walks) },
        { "psidiag_discovery_walk_seconds_total", "counter", "Time those walks took (on the agent's loop).",
          SECONDS(discovery_walk_us) },
};

static void value(FILE *f, uint64_t v, bool seconds) {
        if (seconds)
                fprintf(f, " %llu.%06llu\n", (unsigned long long) (v / 1000000), (unsigned long long) (v % 1000000));
        else
                fprintf(f, " %llu\n", (unsigned long long) v);
}

/* key="value", its value escaped. */
static void label(FILE *f, const char *key, const char *v) {
        fprintf(f, "%s=\"", key);
        label_value(f, v ? v : "");
        fputc('"', f);
}

static void family(FILE *f, const MetricRow *row, const Metrics *m) {
        const char *at = (const char *) m + row->offset;
        size_t n = 0;

        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", row->name, row->help, row->name, row->type);
        if (row->kind == METRIC_COUNTS || row->kind == METRIC_SERIES || row->kind == METRIC_SERIES_SECONDS)
                n = *(const size_t *) ((const char *) m + row->n_offset);
        switch (row->kind) {
        case METRIC_VALUE:
        case METRIC_SECONDS:
                fputs(row->name, f);
                value(f, *(const uint64_t *) at, row->kind == METRIC_SECONDS);
                break;
        case METRIC_INFO:
                fprintf(f, "%s{", row->name);
                label(f, row->keys[0], *(const char *const *) at);
                fputs("} 1\n", f);
                break;
        case METRIC_COUNTS:
                for (size_t i = 0; i < n; i++) {
                        const MetricsCount *c = *(const MetricsCount *const *) at + i;
                        fprintf(f, "%s{", row->name);
                        label(f, row->keys[0], c->label);
                        fputc('}', f);
                        value(f, c->value, false);
                }
                break;
        case METRIC_SERIES:
        case METRIC_SERIES_SECONDS:
                for (size_t i = 0; i < n; i++) {
                        const MetricsSeries *s = *(const MetricsSeries *const *) at + i;
                        fprintf(f, "%s{", row->name);
                        for (size_t k = 0; k < METRICS_LABELS_MAX && row->keys[k]; k++) {
                                if (k)
                                        fputc(',', f);
                                label(f, row->keys[k], s->labels[k]);
                        }
                        fputc('}', f);
                        value(f, s->value, row->kind == METRIC_SERIES_SECONDS);
                }
                break;
        case METRIC_OUTPUTS:
                for (size_t i = 0; i < m->n_outputs; i++) {
                        fprintf(f, "%s{", row->name);
                        label(f, row->keys[0], m->outputs[i].path);
                        fputc('}', f);
                        value(f, *(const uint64_t *) ((const char *) &m->outputs[i] + row->offset), false);
                }
                break;
        }
}

int metrics_format(const Metrics *m, char **ret) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(metric_table); i++)
                family(f, &metric_table[i], m);
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
