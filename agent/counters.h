/* SPDX-License-Identifier: MIT */
/* The agent's counters: what the modules add to as things happen (wakeups, samples, incidents by
 * watch label, kills by killer, lost records) and health.c only reads for the metrics file; and
 * the metrics series they make. Pure bookkeeping: no I/O, no loop; one warning when out of memory
 * loses a watch's count. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/wakeup.h"
#include "config/config.h"
#include "kills/killmarks.h"
#include "sinks/metrics.h"
#include "probes/pressure.h"

/* What the metrics count incidents by (psidiag_incidents_total{type}). */
typedef enum CountersIncident {
        COUNTERS_INCIDENT_PRESSURE,
        COUNTERS_INCIDENT_OOM,
        COUNTERS_INCIDENT_KILL,
        _COUNTERS_INCIDENT_MAX,
} CountersIncident;

/* The prekill hook's calls (agent/prekillhook.h), psidiag_prekill_calls_total{result}. */
typedef enum CountersPrekill {
        COUNTERS_PREKILL_NOTIFY,   /* a Notify of systemd-oomd, answered */
        COUNTERS_PREKILL_ANSWERED, /* another call answered (GetInfo, GetInterfaceDescription) */
        COUNTERS_PREKILL_REFUSED,  /* malformed, oversized, unknown: a Varlink error */
        COUNTERS_PREKILL_DENIED,   /* a caller that is not root, hung up on */
        COUNTERS_PREKILL_BUSY,     /* a client beyond the most at once, hung up on */
        COUNTERS_PREKILL_IDLE,     /* a client that sent nothing, hung up on */
        _COUNTERS_PREKILL_MAX,
} CountersPrekill;

/* "notify", "answered", "refused", "denied", "busy", "idle". */
const char *counters_prekill_label(CountersPrekill p);

/* The incidents of one configured watch, by its label (counters_watch_label()). */
typedef struct WatchCounts {
        char *label;
        uint64_t incidents[_COUNTERS_INCIDENT_MAX][_PSI_RESOURCE_MAX];
        uint64_t stall_us[_PSI_RESOURCE_MAX];
} WatchCounts;

typedef struct Counters {
        /* start_time_s, samples, oom_kills, the recorder's, discovery's walks... : those the metrics
         * file writes as they are (sinks/metrics.h), health.c copies them at once (plain) */
        union {
                struct {
                        METRICS_PLAIN_MEMBERS
                };
                MetricsPlain plain;
        };
        uint64_t wakeups[_WAKEUP_VERDICT_MAX];
        uint64_t kills[_KILLER_MAX]; /* kill incidents by killer */
        uint64_t prekill[_COUNTERS_PREKILL_MAX];
        /* Pressure incidents by their window's basis (after_wakeup, recorded); those whose window
         * passed are windows_passed. */
        uint64_t windows[2];
        /* The directories discovery (agent/discovery.h) watches (inotify) now, within
         * dir_watch_limit with oomwatch's watches on memory.events files (kmsg closed). */
        uint64_t dir_watches, oom_file_watches;
        WatchCounts *watch; /* per configured watch label, kept across reloads */
        size_t n_watch, cap_watch;
        bool watch_warned;
} Counters;

/* One written incident, as the counters take it. */
typedef struct CountedIncident {
        const char *label; /* counters_watch_label() of its watch */
        CountersIncident type;
        PsiResource resource;
        uint64_t stall_us;             /* the stall its sample measured (pressure), 0 none */
        uint64_t sample_thread_errors; /* of its sample (pressure: also counts one sample) */
        uint64_t exit_records_lost;    /* exit records its sample lost */
        uint64_t blkio_unstarted;      /* blkio waits without a start taken out of it (sampling/rank.h) */
        uint64_t oom_kills;            /* kills it reports (oom) */
        bool recorded;                 /* a pressure incident: its window was recorded */
        bool passed;                   /* ... and the stall that fired had passed before it */
        bool has_killer;               /* a kill incident: */
        KillerKind killer;             /* ... who killed */
} CountedIncident;

/* The metrics label of a configured watch: its cgroup pattern, "/" node-wide or on the root (a
 * pattern matching many cgroups is one label: bounded cardinality). */
const char *counters_watch_label(const WatchConfig *cfg);

/* Counts one incident. Out of memory, its watch's count is lost (logged once); the others are
 * counted. */
void counters_count_incident(Counters *c, const CountedIncident *i);

/* The incident and stall series of the watch counts, into *buf (grown as needed, the caller's
 * scratch): psidiag_incidents_total{watch,type,resource} first, for every count above 0, then
 * psidiag_stall_us_total{watch,resource} for every watch and resource with a pressure incident.
 * Their labels point into c. 0 or -ENOMEM. */
int counters_series(const Counters *c, MetricsSeries **buf, size_t *cap, size_t *ret_n_incidents, size_t *ret_n_stall);

void counters_done(Counters *c);
