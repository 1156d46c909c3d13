/* SPDX-License-Identifier: MIT */
/* One sample on the event loop, process first: snapshot A of the processes now, exit records
 * listened for during the window; at its middle, the processes again (M) to choose the candidates
 * whose threads are measured from there on; at its end, snapshot B, the candidates' threads, the
 * exits merged and the ranking built: processes over A..B, their threads over M..B. A window of 0
 * ranks A's lifetime totals and measures the leaders' threads once. `snapshot --pid` measures the
 * one process's threads at A and B. Used by a watch when its trigger fires, by an oom incident
 * after a kill and by `psidiag snapshot`. The answer is one SampleResult (Sampler.result,
 * sampling/result.h) with the reported processes' identities read; what is made of it is the
 * owner's (the done callback). Logs nothing. */
#pragma once

#include <ev.h>
#include <stdbool.h>

#include "probes/cgusage.h"
#include "probes/limits-find.h"
#include "sampling/culprits.h"
#include "sampling/exits.h"
#include "sampling/exitwatch.h"
#include "sampling/onwhat.h"
#include "sampling/hot.h"
#include "sampling/rank.h"
#include "sampling/result.h"
#include "sampling/snapshot.h"
#include "sampling/stacks.h"
#include "probes/taskstats.h"

typedef struct Sampler Sampler;

/* One culprit pass: the culprit scope's processes and cgroups at both ends of a window. A sample
 * runs its own (Sampler.own_pass), or one its owner lends (SampleScope.pass) to samples of the same
 * scope whose windows overlap: the first of them to start takes its start, the first to finish
 * takes its end, and each builds its culprits from it with its own victims. */
typedef struct CulpritPass {
        Snapshot ca, cb; /* the scope's processes (unless the scope is the sample's own) */
        CgroupUsages ga, gb;
        bool has_ca, has_cb, has_ga, has_gb;
        bool started, ended;                 /* its start and its end were taken (or tried) */
        usec_t start_real_us, start_mono_us; /* when the start was taken */
        usec_t end_mono_us;                  /* when the end was taken */
} CulpritPass;

/* A pass's buffers; NULL-safe on a zeroed one. */
void culprit_pass_done(CulpritPass *p);

/* Decides the culprit scope of a stall of res in stalled ("a/b" relative to the cgroup2 mount; NULL
 * for a node-wide trigger) with the finder that "limits" uses (limits_locate(): on v1 through
 * /proc/<pid>/cgroup), so both name the same limiting cgroup: the nearest of the stalled cgroup and
 * its ancestors that limits res, its processes those of limits_location_scope(); else the node
 * (also when on v1 no process tells where the cgroup is, or it is gone). own_limit: cpu and io
 * limited by the stalled cgroup's own limit. Opens its directories. 0, -EOPNOTSUPP for irq (no use
 * to rank on), or -errno (-ENOMEM, -EINVAL for a malformed limit file). */
int culprit_scope_open(const LimitsHierarchy *h, const char *stalled, PsiResource res, CulpritScope *ret);
void culprit_scope_close(CulpritScope *c);

/* Called when the sample is complete: r is 0 (s->result holds it, valid until the next start; with
 * a window of 0 its basis is LIFETIME; partial says memory ran out on the way and exits, thread
 * detail, hot cgroups or processes may be missing), or -errno when B could not be taken (-ENOENT
 * or -ENODEV: the cgroup went away; sampler_result_lifetime() can still make A a result). */
typedef void (*SamplerDone)(Sampler *s, int r);

struct Sampler {
        struct ev_loop *loop;
        const char *exit_cpus; /* where exit records are listened for; NULL: not at all */
        SamplerDone done;
        void *userdata;

        SampleScope scope;
        uint64_t sample_ms;
        bool running;
        bool recorded;       /* A came from a recorder (sampler_start_recorded) */
        bool recorded_exits; /* and so did exit records heard since it */
        bool partial;        /* the last sample ran out of memory after its snapshots */
        usec_t wakeup_real_us;
        usec_t a_cost_us;             /* how long snapshot A took */
        usec_t b_start_us, b_end_us;  /* monotonic: around snapshot B */
        Snapshot a, m, b;             /* m: the middle, the base of the threads' deltas */
        const Snapshot *threads_base; /* m, a (--pid) or NULL (lifetime, or no candidates) */
        pid_t *candidates;            /* the processes whose threads are measured */
        size_t n_candidates, cap_candidates;
        Ranking ranking;
        HotCgroups hot;
        SampleResult result; /* what the last sample answers (sampling/result.h) */
        /* The culprit pass (SampleScope.culprit): its processes at both ends (or a and b when the
         * scope is the sample's), its cgroups, and what they add up to. pass: own_pass, or the
         * owner's (SampleScope.pass) while the sample runs. */
        CulpritPass own_pass;
        CulpritPass *pass;
        Culprits culprits;
        bool has_culprits;
        pid_t *victims;
        size_t cap_victims;
        /* SampleScope.limits_cgroup: the limit and the blocked threads, in the owner's OnWhat
         * (SampleScope.onwhat), lent from sampler_start() until sampler_drop_onwhat(). */
        OnWhat *onwhat;
        bool has_onwhat;
        ExitWatch exit_watch; /* listening only while a sample runs */
        StackCapture stacks;  /* SampleScope.stacks_hz: open only while a sample runs */
        ExitRecords exits;
        ev_timer timer, middle;
};

/* exit_cpus: the possible cpus ("0-3") on which to listen for exit records while a sample runs
 * (the caller's, kept alive by it), NULL when taskstats is unavailable. */
void sampler_init(Sampler *s, struct ev_loop *loop, const char *exit_cpus, SamplerDone done, void *userdata);

/* Sizes the buffers to the scope's threads now (*ret_n of them), so a sample taken while the
 * node is short of memory does not have to allocate (they grow later only if the cgroup does).
 * 0 or -ENOMEM (the sample then allocates as it goes). */
int sampler_preallocate(Sampler *s, const SampleScope *scope, size_t *ret_n);

/* Takes snapshot A of scope and starts the window of sample_ms (0: done is called before this
 * returns). Returns 0 (done will be called), or -errno when A could not be taken (done is not
 * called; -ENOENT/-ENODEV: the cgroup is gone). */
int sampler_start(Sampler *s, const SampleScope *scope, uint64_t sample_ms);

struct Recorder;
#define SAMPLER_RECORDED_TAIL_MS 250
/* Starts a sample whose A is the entry of rec (sampling/recorder.h) a window starting at
 * start_mono_us starts from (trimmed to where the stall of scope's fired line began:
 * recorder_find_onset()), with the exit records heard since, and whose culprit pass starts there
 * too (the sample's own: scope->pass is not used): its window covers the recorded past up to
 * SAMPLER_RECORDED_TAIL_MS from now (sample_ms if shorter). The recorder forgets that entry and the older ones
 * (recorder_forget_through()) and goes on: its owner alone stops or restarts it. Without an entry (or with a window
 * of 0) it is sampler_start(). Returns as sampler_start() does. */
int sampler_start_recorded(Sampler *s, const SampleScope *scope, uint64_t sample_ms, struct Recorder *rec,
                           uint64_t start_mono_us);

/* Stops a running sample without calling done. */
void sampler_cancel(Sampler *s);

/* Makes s->result of a alone, ranked on its lifetime totals, with no thread detail, culprits nor
 * "on what": what an owner reports when B could not be taken or the sample was cancelled. The
 * result is made in any case; -ENOMEM says the ranking (or the hot cgroups) ran out of memory. */
int sampler_result_lifetime(Sampler *s);

/* Makes s->result of scope's pressure alone (basis NONE), read now into s->a: what an owner
 * reports when no sample could be started. */
void sampler_result_unmeasured(Sampler *s, const SampleScope *scope);

/* The victim of an oom kill: its final delays when the listener heard it exit (exit_records_delays()). */
static inline bool sampler_exit_delays(const Sampler *s, pid_t pid, uint64_t ret_ns[_TASK_DELAY_MAX],
                                       uint32_t *ret_present) {
        return exit_records_delays(&s->exits, pid, ret_ns, ret_present);
}

/* Gives the sample's "on what" (Sampler.onwhat) back to its owner once its report is written (or
 * the sample is dropped); has_onwhat goes false. */
void sampler_drop_onwhat(Sampler *s);

void sampler_free(Sampler *s); /* the buffers; the Sampler itself is the owner's */
