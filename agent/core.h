/* SPDX-License-Identifier: MIT */
/* The daemon's core, for the modules of agent/ only: the agent (what every module needs: the loop,
 * the runtime, the config, the outputs, the watches and their triggers, the counters), the hooks
 * through which a module follows the watches without the watch module knowing it, and the opening
 * of a watch's cgroup. Each module keeps its own state behind its own pointer here and its own
 * header; nothing outside agent/ includes this (the public entry is agent.h). */
#pragma once

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/counters.h"
#include "agent/episode.h"
#include "agent/fdbudget.h"
#include "agent/options.h"
#include "agent/ratelimit.h"
#include "agent/runtime.h"
#include "agent/wakeup.h"
#include "base/closer.h"
#include "base/log.h"
#include "config/config.h"
#include "incident/history.h"
#include "sampling/sampler.h"
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
typedef struct Watch Watch;
/* The private state of each module, owned by it (NULL until it is started). */
typedef struct WatchPools WatchPools;     /* pools.c */
typedef struct AgentOoms AgentOoms;       /* oom.c */
typedef struct OomWatch OomWatch;         /* oomwatch.c */
typedef struct AgentKills AgentKills;     /* killwatch.c */
typedef struct Discovery Discovery;       /* discovery.c */
typedef struct AgentHealth AgentHealth;   /* health.c */
typedef struct Recording Recording;       /* recording.c */
typedef struct AgentPrekill AgentPrekill; /* prekillhook.c */

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

typedef struct SharedPass SharedPass;

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
        OnWhat *onwhat;                 /* lent from the agent's pool while a sample runs */
        CulpritScope *culprit;          /* while a sample runs with a culprit pass (allocated then: 4 KiB) */
        SharedPass *pass;               /* while a sample runs: the node pass it shares; NULL: its own */
        char episode[EPISODE_ID_MAX];   /* the sample's episode */
        char sample_id[HISTORY_ID_MAX]; /* while a sample runs: its incident's id, in the history already */
        WatchTiming timing;
};

/* What a module learns of the watches' lives, without the watch module calling it by name: each
 * hook is optional, called in the order the modules were added. A module that follows the watches
 * (kill windows, oom counters, a recorder) adds one row at its start. */
typedef struct WatchHooks {
        void *userdata;
        /* w is armed and in the agent's list. */
        void (*added)(Watch *w, void *userdata);
        /* w is about to be freed (its sample, if any, is dropped already); also a watch that failed
         * to arm and was never added. */
        void (*removed)(Watch *w, void *userdata);
        /* A wakeup of t that measured real stall growth, whatever the verdict (a sample, or held
         * back by a cooldown, the capacity or the rate limit): the stall goes on. */
        void (*wakeup)(Watch *w, const Trigger *t, WakeupVerdict verdict, void *userdata);
        /* The pressure incident id of w's sample of t was written (its sample has ended). */
        void (*incident)(Watch *w, const Trigger *t, const char *id, void *userdata);
} WatchHooks;
#define CORE_HOOKS_MAX 8

struct Agent {
        struct ev_loop *loop;
        Runtime rt;
        Config *config;
        const AgentOptions *opts;
        ev_signal sig_int, sig_term, sig_hup;
        ev_periodic quiet;     /* never fires: makes libev watch the clock with a timerfd (agent.c) */
        PsiSet *psi;           /* every armed trigger, in one epoll set with its own waiter thread */
        ev_io psi_io;          /* its notify fd */
        bool psi_error_logged; /* the set's failure was said (watch.c) */
        Closer *closer;        /* trigger fds are closed off the loop: each close waits for an RCU grace period */
        Watch **watches;
        size_t n_watches, cap_watches;
        Sink **sinks;
        size_t n_sinks, cap_sinks;
        unsigned armed;
        bool started; /* arming after start-up is news worth an info line */
        /* Where every sample reads its reported processes' identities
         * (process_info_buffer_cap(top_max) entries): one for all, since each incident is built in
         * its sample's done callback, one at a time. */
        ProcessInfoBuffer procs;
        unsigned top_max;
        FdBudget fds; /* descriptors the triggers may still take */
        RateLimit rate;
        LogRateLimit rate_warned;
        History history;   /* recent pressure incidents, for the related ids of oom and kill incidents */
        uint64_t seq;      /* incidents written: report.c alone numbers them */
        Counters counters; /* what the modules add to, and health.c reads */
        WatchHooks hooks[CORE_HOOKS_MAX];
        size_t n_hooks;

        WatchPools *pools;
        AgentOoms *ooms;
        OomWatch *oomwatch;
        AgentKills *kills;
        Discovery *discovery;
        AgentHealth *health;
        Recording *recording;
        AgentPrekill *prekill;
};

/* Adds a module's hooks; every hook later called gets userdata. 0, or -ENOSPC past CORE_HOOKS_MAX
 * (a programming error: the modules are known). */
int core_hooks_add(Agent *a, const WatchHooks *h);
/* Takes out the hooks added with userdata (a module that stops). */
void core_hooks_remove(Agent *a, void *userdata);
void core_hooks_added(Agent *a, Watch *w);
void core_hooks_removed(Agent *a, Watch *w);
void core_hooks_wakeup(Agent *a, Watch *w, const Trigger *t, WakeupVerdict verdict);
void core_hooks_incident(Agent *a, Watch *w, const Trigger *t, const char *id);

/* w's cgroup directory now (-EBADF for a node-wide watch). Between samples a watch holds no
 * descriptor but its triggers'; this one comes out of the reserve (fd_budget_reserve()), not the
 * triggers' budget. 0 or -errno (not logged). */
int core_watch_open_cgroup(const Watch *w, int *ret_fd);

/* The scope of a sample (or a recording) of the cgroup at cgroup_fd (-1 node-wide; path "a/b", NULL
 * node-wide) for res: its processes but the agent's own, ranked on res, the top `detail` measured
 * to their threads, the totals of res of every descendant cgroup walked (the hottest cgroups),
 * identities into the agent's buffer. The caller adds what its sample has beyond that: the fired
 * line, a culprit pass, "on what". */
SampleScope core_sample_scope(Agent *a, int cgroup_fd, const char *path, PsiResource res, unsigned detail);

/* The one scope of w's samples and of its recording for res, on w's cgroup at cgroup_fd (-EBADF
 * node-wide): core_sample_scope() with w's top, the counters of the limit behind res ("on what":
 * its limits_cgroup is w's path) and culprit (NULL: no culprit pass). A sample adds the fired line
 * and its "on what". The recorder and the sampler match on it (recorder_matches()). */
SampleScope core_watch_scope(Watch *w, int cgroup_fd, PsiResource res, CulpritScope *culprit);
/* w's culprit scope for res, opened (culprit_scope_open()): false when there is none (no limits
 * hierarchy, or it could not be opened): the sample or recording goes without culprits. */
bool core_watch_culprit(const Watch *w, PsiResource res, CulpritScope *ret);

/* The sinks' format: the config's output_format (one for every output). */
SinkFormat core_sink_format(const Agent *a);
