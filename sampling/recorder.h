/* SPDX-License-Identifier: MIT */
/* A watch's recent past, recorded while it stalls, so that the incident of its next wakeup can
 * cover the trigger's window instead of the second after it (kernel-facts.md: trigger-latency):
 * every period, the processes of the watch's scope (one TGID query each, states and pressure),
 * and its culprit scope's processes and cgroup counters, kept in a ring as deep as the longest
 * window; and the exit records of the whole time, so that a burst's processes that end are still
 * seen. Its owner starts it after a wakeup and stops it when the watch is quiet again: an idle
 * watch records nothing (no timer, no listener). A sample borrows an entry of the ring with
 * sampler_start_recorded() (sampling/sampler.h) and leaves the recorder running: only its owner
 * starts, stops or restarts it. Logs nothing. */
#pragma once

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/cgusage.h"
#include "sampling/culprits.h"
#include "sampling/exits.h"
#include "sampling/exitwatch.h"
#include "sampling/onwhat.h"
#include "sampling/snapshot.h"

/* The ring never holds more: a 10 s window at the shortest period (RECORDER_PERIOD_MIN_MS). */
#define RECORDER_ENTRIES_MAX 24
#define RECORDER_PERIOD_MIN_MS 500
/* Exit records kept while recording (an exit storm): past it, the oldest entries go first, and
 * what still does not fit is counted as lost. */
#define RECORDER_EXITS_MAX 65536

typedef struct RecordedEntry {
        Snapshot a;      /* the scope's processes, their states and the pressure */
        Snapshot ca;     /* the culprit scope's processes (unless the scope is the watch's) */
        CgroupUsages ga; /* the culprit scope's cgroups */
        bool has_ca, has_ga;
        size_t exits_from;     /* the recorder's exit records from this index on came after it */
        OnWhatReading *onwhat; /* the limit's counters then (the scope's limits_cgroup); NULL: none */
} RecordedEntry;

typedef struct Recorder {
        struct ev_loop *loop;
        const char *exit_cpus; /* where exit records are listened for (the owner's); NULL: not at all */
        SampleScope scope;     /* the watch's sample scope; its culprit scope stays the owner's */
        uint64_t period_ms;
        RecordedEntry ring[RECORDER_ENTRIES_MAX];
        size_t depth;     /* entries used of ring, from period and depth */
        size_t n, oldest; /* entries holding a snapshot; the oldest's index */
        bool running;
        ExitWatch exit_watch;
        ev_timer tick;
        ExitRecords exits;
        /* "On what" (the scope's limits_cgroup): where the limit is, located at the start, and each
         * entry's reading of it; for io also the node's disks. Allocated at the first start that
         * reads them and kept, as the snapshots' buffers are. */
        bool located;
        LimitsLocation loc;
        OnWhatReading *readings; /* RECORDER_ENTRIES_MAX of them, the ring's */
        DiskStats *disks;        /* io: RECORDER_ENTRIES_MAX of them */
        char *disk_buf;          /* io: ONWHAT_DISK_BUF bytes */
        /* Called after each entry the timer takes (the owner's look at it); NULL: none. It must not
         * stop or free the recorder. */
        void (*on_entry)(struct Recorder *r, void *userdata);
        void *userdata;
        /* What recording cost, for the metrics: entries taken, the time they took, exit records
         * dropped (the kernel's ENOBUFS and RECORDER_EXITS_MAX). */
        uint64_t entries_total, cost_us_total, lost_total;
} Recorder;

void recorder_init(Recorder *r, struct ev_loop *loop, const char *exit_cpus);

/* Starts recording scope (copied; what it points to must outlive the recording) every period_ms
 * (at least RECORDER_PERIOD_MIN_MS), keeping entries that reach depth_ms into the past (plus the
 * newest): the first entry is taken now. With scope->limits and limits_cgroup, each entry also
 * reads the counters of the limit behind limits_resource (and io the node's disks); short of
 * memory for them, the entries go without. A running recorder is restarted with the new scope.
 * 0, or -errno when the first entry could not be taken (-ENOENT/-ENODEV: the cgroup is gone;
 * nothing runs then). */
int recorder_start(Recorder *r, const SampleScope *scope, uint64_t period_ms, uint64_t depth_ms);

/* Stops the timer and the listener and forgets the entries; the buffers are kept for the next
 * start. NULL-safe on an initialized, stopped recorder. */
void recorder_stop(Recorder *r);

/* Forgets e, an entry of the ring whose buffers a sample took (sampler_start_recorded()), and the
 * entries older than it, with the exit records only they needed. The recorder goes on: only its
 * owner stops it. */
void recorder_forget_through(Recorder *r, const RecordedEntry *e);

/* The entry a window that starts at start_mono_us should start from: the newest taken at or before
 * it, else the oldest there is. NULL when there is none. */
RecordedEntry *recorder_find(Recorder *r, uint64_t start_mono_us);

/* The entry the window of a stall of (resource, stall) that fired a trigger should start from:
 * among the entries from recorder_find(r, start_mono_us) on, the newest one before the stall
 * began to grow, i.e. whose fired-line total had grown by at most RECORDER_ONSET_SHARE of what it
 * grew from that first entry to now_total. A stall spread over the window starts at the first
 * entry; a burst inside it starts at the entry just before the burst, so a steady neighbour is
 * not weighed over seconds the burst was not in. NULL when there is no entry. */
#define RECORDER_ONSET_SHARE 0.1
RecordedEntry *recorder_find_onset(Recorder *r, uint64_t start_mono_us, PsiResource resource, PsiStall stall,
                                   uint64_t now_total);

/* How much the fired line (resource, stall) of the scope's pressure grew over the window_us before
 * the newest entry, as the ring saw it: from the newest entry taken at or before that (or the
 * oldest, when the ring does not reach back so far) to the newest, whose total goes to *ret_total.
 * False when there are not two entries with the line. */
bool recorder_growth(Recorder *r, PsiResource resource, PsiStall stall, uint64_t window_us, uint64_t *ret_growth,
                     uint64_t *ret_total);

/* Whether a sample of scope, woken at wakeup_mono_us, can start from r's ring: r records the same
 * cgroup (the same cgroup_path, NULL node-wide) for the same resource, with a culprit pass over the same scope (or
 * neither has one), and its oldest entry was taken at least RECORDER_PERIOD_MIN_MS / 2 before the wakeup (a recording
 * that began at this wakeup holds nothing of the past). Pure. */
bool recorder_matches(const Recorder *r, const SampleScope *scope, uint64_t wakeup_mono_us);

/* Takes the next entry now (what the timer does every period; exported for tests). 0, or -errno
 * when the scope could not be listed (-ENOENT/-ENODEV: the cgroup is gone) or memory ran out. */
int recorder_take(Recorder *r);

void recorder_free(Recorder *r);
