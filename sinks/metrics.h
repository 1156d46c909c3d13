/* SPDX-License-Identifier: MIT */
/* The agent's health counters as a Prometheus textfile (node_exporter's textfile collector):
 * written whole (a temporary file renamed over the old one) whenever a counter changes, never on
 * a timer, so an idle agent still makes no wakeups. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* One labelled value of a counter family ("sample" in psidiag_wakeups_total{verdict="sample"}). */
typedef struct MetricsCount {
        const char *label;
        uint64_t value;
} MetricsCount;

/* One series of a family with up to three labels, in the order of the family's label names. */
#define METRICS_LABELS_MAX 3
typedef struct MetricsSeries {
        const char *labels[METRICS_LABELS_MAX];
        uint64_t value;
} MetricsSeries;

typedef struct MetricsOutput {
        const char *path; /* the output's path, or "stdout", "journal" */
        uint64_t written, failed;
} MetricsOutput;

/* The plain counters: those the agent keeps in its Counters (agent/counters.h) under the same name
 * and the metrics file writes as they are, one unlabelled metric each (a row of metrics.c's
 * table). One list of members, so that Counters and Metrics both have them as their own
 * (c->samples, m.samples) and, in a union with a MetricsPlain, health.c copies them at once. */
#define METRICS_PLAIN_MEMBERS                                                                                          \
        uint64_t start_time_s;                                                                                         \
        uint64_t samples, sample_thread_errors, cgroups_gone;                                                          \
        uint64_t oom_kills, kmsg_lost;                                                                                 \
        uint64_t exit_records_lost; /* taskstats exit records the kernel dropped: samples', kill windows' */           \
        uint64_t blkio_unstarted;   /* blkio waits without a start taken out (sampling/rank.h) */                      \
        uint64_t episodes;          /* pressure episodes begun (agent/episode.h) */                                    \
        uint64_t culprit_passes, culprit_passes_shared; /* passes run; samples that joined another's */                \
        /* The recorder (agent/recording.h): recordings begun, and not begun for the bound; entries                    \
         * taken, wakeups raised; the time the entries took; the time watches spent recording. */                      \
        uint64_t recordings, recordings_refused, recorder_entries, recorder_wakeups;                                   \
        uint64_t recorder_us, recording_us;                                                                            \
        /* pressure incidents whose window saw under a quarter of the stall that fired */                              \
        uint64_t windows_passed;                                                                                       \
        /* discovery (agent/discovery.h): the most directories it may watch, those refused; its walks of               \
         * the tree and their time */                                                                                  \
        uint64_t dir_watch_limit, dir_watches_refused, discovery_walks, discovery_walk_us;

typedef struct MetricsPlain {
        METRICS_PLAIN_MEMBERS
} MetricsPlain;

/* What the file shows. Every value a metric without labels is a uint64_t (metrics.c's table reads
 * them by offset); a labelled family is an array and its length n_<field>. */
typedef struct Metrics {
        const char *version;
        union {
                struct {
                        METRICS_PLAIN_MEMBERS
                };
                MetricsPlain plain;
        };
        uint64_t watches, triggers_configured, triggers_armed;
        /* inotify watches the agent holds: discovery's directories and oomwatch's memory.events */
        uint64_t dir_watches;
        /* container names (containers/containers.h): lookups, the runtime files' reads (misses), containers
         * evicted from the cache, lookups answered without a name, and of those, of a cgroup that
         * claims a container's id but is not its runtime's */
        uint64_t container_lookups, container_reads, container_evictions, containers_unnamed, containers_unverified;
        const MetricsCount *wakeups; /* psidiag_wakeups_total{verdict=...} */
        size_t n_wakeups;
        const MetricsCount *suppressed; /* psidiag_incidents_suppressed_total{reason=...} */
        size_t n_suppressed;
        const MetricsCount *unparsed; /* psidiag_unparsed_lines_total{file=...} (base/unparsed.h) */
        size_t n_unparsed;
        const MetricsCount *windows; /* psidiag_windows_total{basis=...} */
        size_t n_windows;
        const MetricsCount *kills; /* psidiag_kills_total{killer=...}: kill incidents by killer */
        size_t n_kills;
        const MetricsCount *prekill; /* psidiag_prekill_calls_total{result=...} */
        size_t n_prekill;
        /* psidiag_incidents_total{watch, type, resource} and psidiag_stall_seconds_total{watch,
         * resource} (values in microseconds, written as seconds): one series per configured watch
         * (its cgroup pattern, "/" node-wide), never per matched cgroup. */
        const MetricsSeries *incidents;
        size_t n_incidents;
        const MetricsSeries *stall;
        size_t n_stall;
        const MetricsOutput *outputs;
        size_t n_outputs;
} Metrics;

/* Formats the exposition text into a malloc'ed string. 0 or -ENOMEM. */
int metrics_format(const Metrics *m, char **ret);

/* Writes the text to path atomically (temporary file in the same directory, then rename), with
 * the same symlink rules as incident outputs. 0 or -errno, with a sentence in why. */
int metrics_write(const char *path, const Metrics *m, char *why, size_t why_size);
