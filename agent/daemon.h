/* SPDX-License-Identifier: MIT */
/* The daemon's shared state, for the modules of agent/ only: the agent, its watches and their
 * triggers, and what each module offers the others. Nothing outside agent/ includes this; the
 * public entry is agent.h, which includes nothing of this (agent.c builds on both; a module that
 * reads the options includes agent.h itself). */
#pragma once

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/dirwatch.h"
#include "agent/episode.h"
#include "agent/fdbudget.h"
#include "agent/runtime.h"
#include "agent/wakeup.h"
#include "base/closer.h"
#include "base/log.h"
#include "config/config.h"
#include "incident/incident.h"
#include "incident/history.h"
#include "probes/killmarks.h"
#include "probes/kmsg.h"
#include "probes/memcg.h"
#include "sampling/sampler.h"
#include "sinks/metrics.h"
#include "sinks/registry.h"
#include "sinks/sink.h"
#include "triggers/psi.h"

/* Closing 3,000 triggers took 25 s from one thread, 1.0 s from 64, 0.29 s from 256 (2 vCPUs,
 * 6.18): concurrent closes share RCU grace periods. The helpers exist only while closing. */
#define CLOSER_THREADS_MAX 256
/* At most this many oom incidents measure their cgroup at once; kills beyond it (an OOM storm) are
 * still written, at once, with the cgroup's pressure and no task measurements (sample.basis
 * "none"). */
#define OOM_SAMPLING_MAX 4

typedef struct Agent Agent;

/* What the metrics count incidents by (psidiag_incidents_total{type}). */
typedef enum AgentIncidentType {
        AGENT_INCIDENT_PRESSURE,
        AGENT_INCIDENT_OOM,
        AGENT_INCIDENT_KILL,
        _AGENT_INCIDENT_TYPE_MAX,
} AgentIncidentType;

/* The incidents of one configured watch, by its label: the cgroup pattern as configured, "/" for
 * a node-wide watch; a pattern matching many cgroups is one label (bounded cardinality). */
typedef struct WatchCounts {
        char *label;
        uint64_t incidents[_AGENT_INCIDENT_TYPE_MAX][_PSI_RESOURCE_MAX];
        uint64_t stall_us[_PSI_RESOURCE_MAX];
} WatchCounts;
/* A node culprit pass that overlapping samples of one resource share (agent/episode.h), from the
 * agent's pool: back to it when its last sample is reported or dropped. */
typedef struct SharedPass {
        CulpritPass pass;
        PsiResource resource;
        unsigned users; /* samples in flight that use it */
        char id[EPISODE_ID_MAX];
} SharedPass;
#define SHARED_PASS_POOL_MAX 4

typedef struct AgentOptions AgentOptions;
typedef struct Watch Watch;
typedef struct OomIncident OomIncident;
typedef struct AgentKills AgentKills;

/* One armed trigger. Heap-allocated one by one: the trigger set hands its pointer back with each
 * event, so a trigger kept across a reload must not move. */
typedef struct Trigger {
        Watch *watch;
        const WatchTrigger *cfg;
        PsiTriggerSpec effective;
        int fd;         /* the pressure file with the trigger written to it */
        int64_t handle; /* its membership in the agent's trigger set (triggers/psi.h) */
        TriggerTotal total;
} Trigger;

/* One watched cgroup: a config watch applied to one concrete path (a glob config watch has one
 * per matching cgroup, created and removed as cgroups come and go). */
struct Watch {
        Agent *agent;
        const WatchConfig *cfg;
        char *path;    /* relative to the cgroup2 mount ("" the root); NULL node-wide */
        char *name;    /* for logs: the path, "/" or "node" */
        int sample_fd; /* the cgroup's directory while a sample runs (none is kept open between) */
        Trigger **triggers;
        size_t n_triggers;
        Sink *sink;

        Trigger *fired;
        Sampler sampler;
        OnWhat *onwhat;               /* lent from the agent's pool while a sample runs */
        CulpritScope *culprit;        /* while a sample runs with a culprit pass (allocated then: 4 KiB) */
        SharedPass *pass;             /* while a sample runs: the node pass it shares; NULL: its own */
        char episode[EPISODE_ID_MAX]; /* the sample's episode */
        WatchTiming timing;

        /* Without /dev/kmsg: the cgroup's oom_kill counter (probes/memcg.h). */
        bool has_oomc;
        MemcgCounterKind oomc_kind;
        int oomc_fd, oomc_event_fd, oomc_wd;
        uint64_t oomc_count;
        ev_io oomc_io; /* the v1 eventfd */
};

/* A directory under inotify watch: somewhere a configured cgroup (or a glob's match) may appear. */
typedef struct WatchedDir {
        int wd;
        char *path; /* relative to the cgroup2 mount, "" the root */
} WatchedDir;

struct Agent {
        struct ev_loop *loop;
        Runtime rt;
        Config *config;
        const AgentOptions *opts;
        ev_signal sig_int, sig_term, sig_hup;
        PsiSet *psi;  /* every armed trigger, in one epoll set with its own waiter thread */
        ev_io psi_io; /* its notify fd */
        bool psi_error_logged;
        Closer *closer; /* trigger fds are closed off the loop: each close waits for an RCU grace period */
        Watch **watches;
        size_t n_watches, cap_watches;
        bool *missing_warned; /* per config watch: "not there yet" said once */
        Sink **sinks;
        size_t n_sinks, cap_sinks;
        uint64_t seq;
        unsigned armed;
        bool started;      /* arming after start-up is news worth an info line */
        unsigned sampling; /* watches with a sample in flight */
        /* "On what" for the samples in flight: as many as max_concurrent_samples has allowed, each
         * with its looks, allocated at start and when a reload raises it, so a sample allocates
         * none of it at its wakeup and an idle watch holds none. */
        OnWhat **onwhat_free;
        size_t n_onwhat_free, n_onwhat;
        /* Where every sample reads its reported processes' identities (2 * top_max entries): one for
         * all, since each incident is built in its sample's done callback, one at a time. */
        ProcessInfoBuffer procs;
        unsigned top_max;
        FdBudget fds; /* descriptors the triggers may still take */
        RateLimit rate;
        LogRateLimit rate_warned;
        History history;   /* recent pressure incidents, for the related ids of oom incidents */
        AgentKills *kills; /* kill incidents (kills.c): NULL until started */

        /* OOM kills: /dev/kmsg, or the memory cgroups' kill counters without it. */
        int kmsg_fd;
        ev_io kmsg_io;
        char *kmsg_buf;    /* KMSG_RECORD_MAX */
        OomKill kmsg_kill; /* the parser's state: an oom-kill: line waits for its Killed process line */
        OomIncident *ooms; /* in flight (sampling), freed as they are written */
        unsigned oom_sampling;
        uint64_t oom_kills, kmsg_lost;
        LogRateLimit kmsg_lost_warned;
        bool oom_counting;     /* kmsg is closed to us: kills are counted from memory cgroups */
        Dirwatch *oomc_watch;  /* memory.events changes */
        ev_timer oomc_recheck; /* a v1 OOM is announced before its kill: look again shortly */
        unsigned oomc_rechecks;

        Dirwatch *cgroup_watch; /* where configured cgroups may appear */
        bool rediscover;        /* a burst of its events asks for discover() */
        bool watches_changed;   /* ... or removed watches, for the metrics */
        WatchedDir *dirs;
        size_t n_dirs, cap_dirs;
        bool inotify_full_warned;
        ev_periodic quiet; /* never fires: makes libev watch the clock with a timerfd (below) */

        /* Node-wide storms: the episode of each resource, and the node culprit pass of each
         * resource that samples starting now may still join (its end not taken yet). */
        Episode episodes[_PSI_RESOURCE_MAX];
        uint64_t episode_seq, pass_seq;
        SharedPass *open_pass[_PSI_RESOURCE_MAX];
        SharedPass *pass_free[SHARED_PASS_POOL_MAX];
        size_t n_pass_free;

        /* Health counters for the metrics file. */
        uint64_t start_time_s;
        uint64_t wakeups[_WAKEUP_VERDICT_MAX];
        uint64_t samples, sample_thread_errors, cgroups_gone;
        uint64_t culprit_passes, culprit_passes_shared; /* passes run; samples that joined another's */
        MetricsOutput *metric_outputs;
        size_t cap_metric_outputs;
        WatchCounts *watch_counts; /* per configured watch label, kept across reloads */
        size_t n_watch_counts, cap_watch_counts;
        MetricsSeries *metric_series; /* the metrics file's scratch */
        size_t cap_metric_series;
        uint64_t exit_records_lost;
        bool watch_counts_warned;
        LogRateLimit metrics_complaints;
};

/* health.c: rewrites the metrics file after a counter changed (no timer: an idle agent stays
 * idle); complains at most every SINK_COMPLAINT_INTERVAL_US when it cannot. */
void agent_metrics_update(Agent *a);

/* The metrics label of a configured watch: its cgroup pattern, "/" node-wide or on the root. */
const char *watch_config_label(const WatchConfig *cfg);

/* Counts an incident of watch label (watch_config_label()) for the metrics, with the stall its
 * sample measured (0 when none); the caller rewrites the metrics file. Out of memory, the count is
 * lost (logged once). */
void agent_count_incident(Agent *a, const char *label, AgentIncidentType type, PsiResource res, uint64_t stall_us);
void agent_watch_counts_free(Agent *a);

/* watch.c: watches, their triggers, wakeups and samples. */
/* Arms a watch of cfg on path (NULL: node-wide) and adds it to the agent. NULL when the cgroup
 * could not be opened or no trigger could be armed (logged). */
Watch *watch_new(Agent *a, const WatchConfig *cfg, const char *path);
Watch *watch_find(Agent *a, const WatchConfig *cfg, const char *path);
/* Disarms and frees w (its triggers go to the closer) and takes it out of the agent's list. */
void watch_remove(Agent *a, Watch *w);
/* The sinks' format: the config's output_format (one for every output). */
SinkFormat agent_sink_format(const Agent *a);

/* Points w at cfg (a reload): its output, cooldown and triggers' texts. 0 or -errno (logged). */
int watch_set_config(Agent *a, Watch *w, const WatchConfig *cfg);
/* Stops w's sample in flight, if any, and says why in the log. */
void watch_drop_sample(Watch *w, const char *why);
/* w's cgroup directory now (-1 for a node-wide watch). 0 or -errno. */
int watch_open_cgroup(Watch *w, int *ret_fd);
/* Grows the agent's pool of "on what" to n (max_concurrent_samples); it never shrinks, as samples
 * in flight may hold some. 0 or -ENOMEM (what could be allocated is kept). */
int agent_onwhat_reserve(Agent *a, size_t n);
/* Frees the pool; every sample must have given its OnWhat back (watch_drop_sample). */
void agent_onwhat_free(Agent *a);
/* Frees the pool of shared culprit passes; every sample must have given its pass back. */
void agent_passes_free(Agent *a);
/* Arms one trigger of w; cgroup_fd is w's cgroup directory (-1 node-wide). NULL when it could not
 * be armed (logged, or counted as out of descriptors). */
Trigger *trigger_arm(Agent *a, Watch *w, int cgroup_fd, const WatchTrigger *cfg);
/* Takes t out of the trigger set and hands its fd to the closer. */
void trigger_free(Agent *a, Trigger *t);
/* The trigger set's notify fd is readable: handles its events (ev_io callback, data: the agent). */
void on_trigger_set(struct ev_loop *loop, ev_io *io, int revents);

/* oom.c: oom incidents. */
/* A kill (kill NULL: counted, the victim unknown) in victim_cgroup ("a/b"; NULL unknown): one
 * incident per distinct output of the covering watches, after its cgroup's sample. */
void agent_oom(Agent *a, const OomKill *kill, const char *victim_cgroup, const char *source, uint64_t kills);
/* The victim's cgroup as our watches name it, from /proc while it lives, else its memcg. NULL when
 * unknown. The caller frees it. */
char *oom_victim_cgroup(Agent *a, const OomKill *k);
/* Writes the kills still in their sample (from snapshot A) and frees every oom incident. */
void oom_flush(Agent *a);

/* oomwatch.c: where kills are learnt: /dev/kmsg, or the memory cgroups' kill counters. */
void oom_watch_start(Agent *a);
/* Flushes the oom incidents in flight (oom_flush()) and stops reading kills. */
void oom_watch_stop(Agent *a);
/* w's kill counter, when kills are counted (once per cgroup). */
void watch_counter_open(Agent *a, Watch *w);
void watch_counter_close(Agent *a, Watch *w);

/* kills.c: kill incidents (processes of a watched cgroup ended by SIGKILL/SIGTERM under pressure).
 * A kill window opens at a pressure incident and is extended by later wakeups; while any is open an
 * exit listener, a 1 s refresh of the members and the kill log files are open, none otherwise. */
int kills_start(Agent *a);
/* Writes the groups in flight and closes everything. */
void kills_stop(Agent *a);
void kills_pressure_incident(Agent *a, Watch *w, const Trigger *t, const char *id);
void kills_trigger_wakeup(Agent *a, Watch *w);
void kills_forget_watch(Agent *a, Watch *w);
/* Every /dev/kmsg message (oomd's kill line), and the kernel OOM killer's victims. */
void kills_kmsg_message(Agent *a, const char *msg, size_t len);
void kills_kernel_victim(Agent *a, pid_t pid);
/* psidiag_kills_total{killer} */
uint64_t kills_count(const Agent *a, KillerKind k);

/* discovery.c: cgroups that come and go. */
/* Arms every configured cgroup that exists and is not armed yet, and watches (inotify) the
 * directories where others may appear. */
void discover(Agent *a);
/* Events on those directories (DirwatchHandler, userdata: the agent). */
void discovery_event(Dirwatch *d, const struct inotify_event *e, void *userdata);

/* reload.c: SIGHUP. Reopens the outputs, then reloads the config file: a bad one is refused and
 * the running one kept; triggers that did not change stay armed on the same descriptors. */
void reload(Agent *a);
