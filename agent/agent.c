/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/base/fileio.h"
#include "agent/base/log.h"
#include "agent/base/macro.h"
#include "agent/config.h"
#include "agent/metrics.h"
#include "agent/output.h"
#include "agent/history.h"
#include "agent/report.h"
#include "agent/sampler.h"
#include "agent/wakeup.h"
#include "probes/kmsg.h"
#include "probes/memcg.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "triggers/psi.h"

#define CAP_SYS_RESOURCE_BIT 24
#define CAP_IPC_LOCK_BIT 14
#define AGENT_NICE (-10)

int runtime_open(Runtime *rt, bool enable_delayacct) {
        uint64_t caps = 0;
        int r;

        *rt = (Runtime) {};
        r = sysroot_open("/", &rt->sysroot);
        if (r < 0)
                return log_error_errno(r, "cannot open /proc");
        if (rt->sysroot->pressure_fd < 0)
                log_warning("/proc/pressure is missing: this kernel has no PSI (CONFIG_PSI, or psi=0 on the "
                            "command line); no trigger can be armed");
        if (rt->sysroot->cgroup2_fd < 0)
                log_warning("no cgroup2 mount found in /proc/self/mountinfo: only node-wide watches work");

        if (system_read_cap_eff(rt->sysroot->proc_fd, &caps) >= 0)
                rt->privileged = caps & CAP_BIT(CAP_SYS_RESOURCE_BIT);

        r = system_read_delayacct(rt->sysroot->proc_fd);
        if (r == 0 && enable_delayacct) {
                int k = system_write_delayacct(rt->sysroot->proc_fd, true);
                if (k < 0)
                        log_warning_errno(k, "cannot switch on kernel.task_delayacct");
                else
                        log_info("switched on delay accounting (kernel.task_delayacct=1)");
                r = system_read_delayacct(rt->sysroot->proc_fd);
        }
        if (r == 0)
                log_warning("delay accounting is off (kernel.task_delayacct=0): only cpu delays are measured; "
                            "run with --enable-delayacct or set the sysctl for io, memory and irq delays");
        else if (r < 0)
                log_warning_errno(r, "cannot read kernel.task_delayacct");

        r = taskstats_netlink_new(&rt->taskstats);
        if (r >= 0) {
                /* One request for ourselves tells whether the kernel will answer at all: it refuses
                 * (EPERM) without CAP_NET_ADMIN (DESIGN.md says also outside the host's PID
                 * namespace; 6.18 answers there, resolving pids in the caller's namespace), and then
                 * every thread of every sample would fail the same way. */
                TaskStats self;

                r = taskstats_get_tid(rt->taskstats, getpid(), &self);
                if (r < 0)
                        rt->taskstats = taskstats_source_free(rt->taskstats);
                else
                        log_debug("taskstats answers with struct version %u", self.version);
        }
        if (r < 0)
                log_warning_errno(r, "taskstats is unavailable%s: incidents will carry pressure and task states but "
                                     "no per-process delays",
                                  r == -EPERM ? " (the kernel refused it: CAP_NET_ADMIN is needed)" : "");

        host_info_read(rt->sysroot, &rt->host);
        ssize_t n = read_file_at(rt->sysroot->root_fd, "sys/devices/system/cpu/online", rt->cpus_online,
                                 sizeof rt->cpus_online);
        while (n > 0 && (rt->cpus_online[n - 1] == '\n' || rt->cpus_online[n - 1] == ' '))
                rt->cpus_online[--n] = '\0';
        if (n <= 0)
                rt->cpus_online[0] = '\0';
        return 0;
}

TaskstatsExitListener *runtime_exit_listener(const Runtime *rt) {
        TaskstatsExitListener *l = NULL;
        int r;

        if (!rt->taskstats || !rt->cpus_online[0])
                return NULL;
        r = taskstats_exit_listener_new(rt->cpus_online, &l);
        if (r < 0) {
                log_debug_errno(r, "cannot listen for exit records on cpus %s", rt->cpus_online);
                return NULL;
        }
        return l;
}

void runtime_close(Runtime *rt) {
        rt->taskstats = taskstats_source_free(rt->taskstats);
        rt->sysroot = sysroot_free(rt->sysroot);
}

bool runtime_delayacct(const Runtime *rt) {
        return system_read_delayacct(rt->sysroot->proc_fd) == 1;
}

typedef struct Agent Agent;
typedef struct Watch Watch;
typedef struct OomIncident OomIncident;

/* One armed trigger. Heap-allocated one by one: libev keeps a pointer to its ev_io, so a trigger
 * kept across a reload must not move. */
typedef struct Trigger {
        Watch *watch;
        const WatchTrigger *cfg;
        PsiTriggerSpec effective;
        int fd;       /* the pressure file with the trigger written to it */
        int epoll_fd; /* its private epoll instance, watched by io (see triggers/psi.h) */
        ev_io io;
        TriggerTotal total;
} Trigger;

/* One watched cgroup: a config watch applied to one concrete path (a glob config watch has one
 * per matching cgroup, created and removed as cgroups come and go). */
struct Watch {
        Agent *agent;
        const WatchConfig *cfg;
        char *path;       /* relative to the cgroup2 mount ("" the root); NULL node-wide */
        char *name;       /* for logs: the path, "/" or "node" */
        int cgroup_fd;    /* -1: node-wide */
        Trigger **triggers;
        size_t n_triggers;
        OutputSink *sink;
        bool claimed;     /* reload bookkeeping */

        Trigger *fired;
        Sampler sampler;
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
        Watch **watches;
        size_t n_watches, cap_watches;
        bool *missing_warned; /* per config watch: "not there yet" said once */
        OutputSink **sinks;
        size_t n_sinks;
        uint64_t seq;
        unsigned armed;
        bool started;      /* arming after start-up is news worth an info line */
        unsigned sampling; /* watches with a sample in flight */
        ProcessInfo *procs; /* report scratch shared by all watches (reports are built one at a time) */
        unsigned top_max;
        unsigned fd_starved; /* triggers not armed for lack of file descriptors */
        long fd_budget;      /* descriptors triggers may still take (fd_budget()) */
        RateLimit rate;
        usec_t rate_warned_us;
        History history; /* recent pressure incidents, for the related ids of oom incidents */

        /* OOM kills (issue 5): /dev/kmsg, or the memory cgroups' kill counters without it. */
        int kmsg_fd;
        ev_io kmsg_io;
        char *kmsg_buf;      /* KMSG_RECORD_MAX */
        OomKill kmsg_kill;   /* the parser's state: an oom-kill: line waits for its Killed process line */
        OomIncident *ooms;   /* in flight (sampling), freed as they are written */
        unsigned oom_sampling;
        uint64_t oom_kills, kmsg_lost;
        usec_t kmsg_lost_warned_us;
        bool oom_counting;     /* kmsg is closed to us: kills are counted from memory cgroups */
        int oomc_inotify_fd;   /* memory.events changes */
        ev_io oomc_inotify_io;
        ev_timer oomc_recheck; /* a v1 OOM is announced before its kill: look again shortly */
        unsigned oomc_rechecks;

        int inotify_fd;
        ev_io inotify_io;
        WatchedDir *dirs;
        size_t n_dirs;
        bool inotify_full_warned;
        ev_periodic quiet; /* never fires: makes libev watch the clock with a timerfd (below) */

        /* Health counters for the metrics file. */
        uint64_t start_time_s;
        uint64_t wakeups[_WAKEUP_VERDICT_MAX];
        uint64_t samples, sample_thread_errors, cgroups_gone;
        MetricsOutput *metric_outputs;
        size_t cap_metric_outputs;
        usec_t metrics_complaint_us;
};

static void watch_counter_open(Agent *a, Watch *w);
static void watch_counter_close(Agent *a, Watch *w);

static unsigned triggers_configured(const Agent *a) {
        unsigned n = 0;
        for (size_t i = 0; i < a->n_watches; i++)
                n += (unsigned) a->watches[i]->n_triggers;
        return n;
}

/* Rewrites the metrics file after a counter changed (no timer: an idle agent stays idle). */
static void agent_metrics_update(Agent *a) {
        char why[160];
        int r;

        if (!a->config->metrics_file)
                return;
        if (a->n_sinks > a->cap_metric_outputs) {
                MetricsOutput *p = realloc(a->metric_outputs, a->n_sinks * sizeof *p);
                if (!p)
                        return;
                a->metric_outputs = p;
                a->cap_metric_outputs = a->n_sinks;
        }
        for (size_t i = 0; i < a->n_sinks; i++)
                a->metric_outputs[i] = (MetricsOutput) {
                        .path = strcmp(a->sinks[i]->path, "-") == 0 ? "stdout" : a->sinks[i]->path,
                        .written = a->sinks[i]->written,
                        .failed = a->sinks[i]->failed,
                };
        Metrics m = {
                .version = PSIDIAG_VERSION,
                .start_time_s = a->start_time_s,
                .watches = (unsigned) a->n_watches,
                .triggers_configured = triggers_configured(a),
                .triggers_armed = a->armed,
                .samples = a->samples,
                .sample_thread_errors = a->sample_thread_errors,
                .cgroups_gone = a->cgroups_gone,
                .oom_kills = a->oom_kills,
                .kmsg_lost = a->kmsg_lost,
                .outputs = a->metric_outputs,
                .n_outputs = a->n_sinks,
        };
        memcpy(m.wakeups, a->wakeups, sizeof m.wakeups);
        r = metrics_write(a->config->metrics_file, &m, why, sizeof why);
        if (r < 0) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                if (!a->metrics_complaint_us || now - a->metrics_complaint_us >= OUTPUT_COMPLAINT_INTERVAL_US) {
                        log_error_errno(r, "cannot write the metrics file %s: %s", a->config->metrics_file, why);
                        a->metrics_complaint_us = now;
                }
        }
}

static SampleScope watch_scope(const Watch *w) {
        return (SampleScope) {
                .sysroot = w->agent->rt.sysroot,
                .taskstats = w->agent->rt.taskstats,
                .cgroup_fd = w->cgroup_fd,
                .exclude_tgid = getpid(),
        };
}

/* A diagnostician the load starves or reclaim pages out reports late, when it is needed most:
 * lock our (small) memory and run ahead of ordinary tasks, when allowed. An operator's own nice
 * value is kept. */
static void protect_self(const Runtime *rt) {
        uint64_t caps = 0;

        /* Only with CAP_IPC_LOCK: under a finite RLIMIT_MEMLOCK, MCL_FUTURE would turn growth past
         * the limit into failed allocations. */
        if (system_read_cap_eff(rt->sysroot->proc_fd, &caps) >= 0 && (caps & CAP_BIT(CAP_IPC_LOCK_BIT))) {
                if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
                        log_debug_errno(-errno, "cannot lock the agent's memory");
        } else
                log_debug("no CAP_IPC_LOCK: the agent's memory is not locked and may be paged out under pressure");

        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && nice == 0 && setpriority(PRIO_PROCESS, 0, AGENT_NICE) < 0)
                log_debug_errno(-errno, "cannot raise the agent's priority to nice %d (CAP_SYS_NICE)", AGENT_NICE);
}

/* Two fds per trigger and one per cgroup: a node watching 1,000 cgroups needs thousands. The soft
 * limit goes up to the hard one (raising the hard limit needs CAP_SYS_RESOURCE). */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(-errno, "cannot raise the open-file limit to %llu", (unsigned long long) rl.rlim_max);
}

/* Descriptors the triggers may still take: the limit, less those open now, less a reserve for
 * what a sample opens (/proc files, the exit listener, output and metrics files). */
#define FD_RESERVE 16

static long fd_budget(void) {
        struct rlimit rl;
        DIR *d = opendir("/proc/self/fd");
        long open_now = 0;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || !d) {
                if (d)
                        closedir(d);
                return LONG_MAX;
        }
        while (readdir(d))
                open_now++;
        closedir(d);
        open_now -= 2; /* "." and ".." */
        return rl.rlim_cur == RLIM_INFINITY ? LONG_MAX : (long) rl.rlim_cur - open_now - FD_RESERVE;
}

/* Takes n descriptors from the budget, or says there are none left (as EMFILE would). */
static int fd_take(Agent *a, long n) {
        if (a->fd_budget < n)
                return -EMFILE;
        a->fd_budget -= n;
        return 0;
}

/* EMFILE/ENFILE while arming: one clear error for all of them, not one per trigger. */
static bool out_of_fds(Agent *a, int r, size_t n_triggers) {
        struct rlimit rl = {};

        if (r != -EMFILE && r != -ENFILE)
                return false;
        if (a->fd_starved == 0) {
                (void) getrlimit(RLIMIT_NOFILE, &rl);
                log_error("out of file descriptors (%s, open-file limit %llu): psidiag needs 2 per trigger and 1 per "
                          "cgroup; raise LimitNOFILE= (ulimit -n) or watch fewer cgroups. Triggers not armed are "
                          "counted below",
                          r == -ENFILE ? "the system's table is full" : "this process's limit",
                          (unsigned long long) rl.rlim_cur);
        }
        a->fd_starved += (unsigned) n_triggers;
        return true;
}

static void trigger_free(Agent *a, Trigger *t) {
        if (!t)
                return;
        /* Stop the watcher before closing the fd it watches. */
        if (t->epoll_fd >= 0) {
                ev_io_stop(a->loop, &t->io);
                a->armed--;
                a->fd_budget += 2;
        }
        safe_close(t->epoll_fd);
        safe_close(t->fd);
        free(t);
}

static void watch_drop_sample(Watch *w, const char *why) {
        if (!w->timing.sampling)
                return;
        sampler_cancel(&w->sampler);
        w->timing.sampling = false;
        w->agent->sampling--;
        log_info("dropped the sample in flight for %s (%s)", w->name, why);
}

/* Disarms and frees a watch, and takes it out of the agent's list. */
static void watch_remove(Agent *a, Watch *w) {
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i] == w) {
                        a->watches[i] = a->watches[--a->n_watches];
                        break;
                }
        watch_drop_sample(w, "its cgroup is no longer watched");
        watch_counter_close(a, w);
        for (size_t j = 0; j < w->n_triggers; j++)
                trigger_free(a, w->triggers[j]);
        free(w->triggers);
        if (w->cgroup_fd >= 0) {
                safe_close(w->cgroup_fd);
                a->fd_budget++;
        }
        sampler_free(&w->sampler);
        free(w->path);
        free(w->name);
        free(w);
}

static void watch_finish_sample(Sampler *s, int r) {
        Watch *w = s->userdata;
        Agent *a = w->agent;
        Trigger *t = w->fired;
        _cleanup_free_ char *line = NULL;
        char id[HISTORY_ID_MAX];
        size_t len;

        bool lifetime = s->sample_ms == 0;
        w->timing.sampling = false;
        a->sampling--;
        if (r == -ENOENT || r == -ENODEV) {
                log_info("cgroup %s disappeared during its sample; no incident", w->name);
                return;
        }
        if (r == -ENOMEM)
                log_warning("out of memory: the exits of this sample of %s are not counted", w->name);
        else if (r < 0) {
                log_error_errno(r, "cannot take the second snapshot of %s", w->name);
                return;
        }
        if (s->a.errors + s->b.errors > 0)
                log_debug_errno(s->a.errors ? s->a.first_error : s->b.first_error,
                                "%u threads of %s could not be measured", s->a.errors + s->b.errors, w->name);

        incident_format_id(&a->rt.host, s->wakeup_real_us, getpid(), ++a->seq, id, sizeof id);
        r = report_build_line(&(Report) {
                                      .sysroot = a->rt.sysroot,
                                      .host = &a->rt.host,
                                      .type = "pressure",
                                      .id = id,
                                      .wakeup_real_us = s->wakeup_real_us,
                                      .delayacct = runtime_delayacct(&a->rt),
                                      .has_trigger = true,
                                      .trigger_cgroup = w->path,
                                      .trigger = t->effective,
                                      .trigger_spec = t->cfg->text,
                                      .resource = t->effective.resource,
                                      .has_stall = true,
                                      .stall = t->effective.stall,
                                      .top = w->cfg->top,
                                      .a = lifetime ? NULL : &s->a,
                                      .b = lifetime ? &s->a : &s->b,
                                      .ranking = &s->ranking,
                                      .hot = &s->hot,
                                      .scope_cgroup = w->path,
                                      .procs = a->procs,
                                      .has_suppressed = true,
                                      .suppressed = a->rate.suppressed_since_incident,
                              },
                              &line, &len);
        if (r < 0) {
                log_error_errno(r, "cannot build the incident for %s", w->name);
                return;
        }
        (void) output_write(w->sink, line, len); /* counts and reports failures itself */
        if (history_add(&a->history, w->path, id, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("out of memory: incident %s will not be linked to a later oom kill", id);
        a->rate.suppressed_since_incident = 0;
        a->samples++;
        a->sample_thread_errors += lifetime ? s->a.errors : s->a.errors + s->b.errors;
        agent_metrics_update(a);
        usec_t done = now_usec(CLOCK_MONOTONIC);
        /* The agent's own time for this incident, the sample window left out (benchmarks read it). */
        log_debug("incident %s for %s: %u threads, agent time %llu us (snapshot A %llu, B %llu, report and write %llu)",
                  id, w->name, s->a.listed,
                  (unsigned long long) (s->a_cost_us + done - s->b_start_us), (unsigned long long) s->a_cost_us,
                  (unsigned long long) (s->b_end_us - s->b_start_us), (unsigned long long) (done - s->b_end_us));
        w->timing.has_incident = true;
        w->timing.last_incident_mono_us = now_usec(CLOCK_MONOTONIC);
}

static void watch_start_sample(Watch *w, Trigger *t) {
        SampleScope scope = watch_scope(w);
        int r;

        /* The fired resource's totals of every descendant cgroup, for the hottest cgroups. */
        scope.walk_cgroups = true;
        scope.cgroups_resource = t->effective.resource;
        w->fired = t;
        w->timing.sampling = true;
        w->agent->sampling++;
        r = sampler_start(&w->sampler, &scope, w->cfg->sample_ms);
        if (r < 0) {
                w->timing.sampling = false;
                w->agent->sampling--;
                if (r == -ENOENT || r == -ENODEV)
                        log_info("cgroup %s disappeared as its trigger fired; no incident", w->name);
                else
                        log_error_errno(r, "cannot take a snapshot of %s", w->name);
                return;
        }
        if (w->timing.sampling)
                log_debug("trigger \"%s\" on %s fired: sampling %u threads for %llu ms", t->cfg->text, w->name,
                          (unsigned) w->sampler.a.n, (unsigned long long) w->cfg->sample_ms);
}

static void on_trigger_io(struct ev_loop *loop, ev_io *io, int revents) {
        Trigger *t = io->data;
        Watch *w = t->watch;
        Agent *a = w->agent;
        PressureStats ps;
        WakeupVerdict verdict;
        uint64_t total;
        int r;

        r = psi_watch_check(t->epoll_fd);
        if (r < 0) {
                log_error_errno(r, "epoll_wait on the trigger \"%s\" of %s failed", t->cfg->text, w->name);
                return;
        }
        if (r == PSI_WATCH_GONE) {
                /* Never treat ERR as a firing: it stays set, and would loop. The cgroup is gone:
                 * disarm the whole watch; if the cgroup comes back, discovery arms it again. */
                log_info("cgroup %s was removed: its triggers are closed", w->name);
                a->cgroups_gone++;
                watch_remove(a, w);
                if (a->armed == 0)
                        log_warning("no trigger is armed any more; psidiag keeps running until stopped");
                agent_metrics_update(a);
                return;
        }

        /* The spurious first event of an unprivileged trigger, and any wakeup without new stall
         * time, shows no growth of the fired line's total=. */
        r = pressure_read_fd(t->fd, &ps);
        if (r < 0 || !ps.has[t->effective.stall]) {
                log_debug_errno(r, "cannot read %s pressure of %s", psi_resource_to_string(t->effective.resource),
                                w->name);
                return;
        }
        total = ps.line[t->effective.stall].total_us;
        verdict = wakeup_decide(&t->total, &w->timing, total, now_usec(CLOCK_MONOTONIC));
        /* The global limits come after the watch's own: a wakeup its cooldown ignores is not an
         * incident the rate limit has to count. */
        if (verdict == WAKEUP_SAMPLE && a->sampling >= a->config->max_concurrent_samples) {
                verdict = WAKEUP_CAPACITY;
                a->rate.suppressed_since_incident++;
        } else if (verdict == WAKEUP_SAMPLE && !rate_limit_admit(&a->rate, now_usec(CLOCK_MONOTONIC))) {
                usec_t now = now_usec(CLOCK_MONOTONIC);
                verdict = WAKEUP_RATE_LIMIT;
                /* Once a minute at most: the metrics and the next incident carry the counts. */
                if (!a->rate_warned_us || now - a->rate_warned_us >= 60 * USEC_PER_SEC) {
                        a->rate_warned_us = now;
                        log_warning("more than %u incidents in a minute (max_incidents_per_minute): dropping and "
                                    "counting the next ones", a->config->max_incidents_per_minute);
                }
        }
        a->wakeups[verdict]++;
        if (verdict != WAKEUP_SAMPLE) {
                agent_metrics_update(a);
                log_debug("trigger \"%s\" on %s %s; ignored", t->cfg->text, w->name, wakeup_verdict_to_string(verdict));
                return;
        }
        watch_start_sample(w, t);
}

/* ---- OOM kills ----------------------------------------------------------------------------- */

/* At most this many oom incidents measure their cgroup at once; kills beyond it (an OOM storm) are
 * still written, at once, with the cgroup's pressure and no task measurements (sample.basis
 * "none"). */
#define OOM_SAMPLING_MAX 4
#define OOM_RELATED_MAX 64

/* One oom incident: the kill, where it is written, and the sample of its cgroup taken after it. */
struct OomIncident {
        Agent *agent;
        OomIncident *next;
        Sampler sampler;
        OomKill kill;
        bool has_kill;      /* false: counted from a kill counter, the victim unknown */
        const char *source; /* "kmsg", "memory.events" or "memory.oom_control" */
        uint64_t kills;
        char *victim_cgroup; /* "a/b" as our watches name it; NULL unknown */
        char *cgroup;        /* the cgroup measured; NULL node-wide */
        int cgroup_fd;
        unsigned top;
        OutputSink **sinks; /* distinct outputs of the watches that cover the kill (of a->n_sinks) */
        size_t n_sinks;
        char related[OOM_RELATED_MAX][HISTORY_ID_MAX];
        size_t n_related;
        bool has_victim_delay;
        uint64_t victim_delay_ns[_TASK_DELAY_MAX];
        uint32_t victim_present;
        const char *victim_delay_source;
};

static void oom_incident_free(OomIncident *o) {
        Agent *a;

        if (!o)
                return;
        a = o->agent;
        for (OomIncident **p = &a->ooms; *p; p = &(*p)->next)
                if (*p == o) {
                        *p = o->next;
                        break;
                }
        if (o->sampler.running)
                a->oom_sampling--;
        sampler_free(&o->sampler);
        if (o->cgroup_fd >= 0) {
                safe_close(o->cgroup_fd);
                a->fd_budget++;
        }
        free(o->sinks);
        free(o->victim_cgroup);
        free(o->cgroup);
        free(o);
}

/* The watches that cover a kill in cgroup (NULL: unknown, only node-wide and root watches). */
static bool watch_covers(const Watch *w, const char *cgroup) {
        return history_covers(w->path, cgroup);
}

/* Where the kill's final delays come from: an exit record any running or just finished sample
 * heard (the best: the victim's last counters), else what taskstats said right after the kill. */
static void oom_victim_delays(OomIncident *o) {
        Agent *a = o->agent;
        pid_t pid = o->kill.pid;
        bool heard;

        if (!o->has_kill || pid <= 0)
                return;
        /* sampler_exit_delays writes only when it heard the exit: the first that did wins. */
        heard = sampler_exit_delays(&o->sampler, pid, o->victim_delay_ns, &o->victim_present);
        for (size_t i = 0; !heard && i < a->n_watches; i++)
                heard = sampler_exit_delays(&a->watches[i]->sampler, pid, o->victim_delay_ns, &o->victim_present);
        for (OomIncident *p = a->ooms; !heard && p; p = p->next)
                heard = p != o && sampler_exit_delays(&p->sampler, pid, o->victim_delay_ns, &o->victim_present);
        if (heard) {
                o->has_victim_delay = true;
                o->victim_delay_source = "exit_record";
        }
}

typedef enum OomBasis {
        OOM_BASIS_DELTA,    /* A and B around the window */
        OOM_BASIS_LIFETIME, /* A alone (a window of 0, or B failed) */
        OOM_BASIS_NONE,     /* pressure only */
} OomBasis;

static void oom_write(OomIncident *o, OomBasis basis) {
        Agent *a = o->agent;
        Sampler *s = &o->sampler;
        _cleanup_free_ char *line = NULL;
        const char *related[OOM_RELATED_MAX];
        char id[HISTORY_ID_MAX];
        size_t len;
        int r;

        bool lifetime = basis != OOM_BASIS_DELTA;
        /* An exit record heard since the kill beats the taskstats reading taken at it, which is
         * kept otherwise. */
        if (!o->has_victim_delay || strcmp(o->victim_delay_source, "exit_record") != 0)
                oom_victim_delays(o);
        for (size_t i = 0; i < o->n_related; i++)
                related[i] = o->related[i];
        OomReport rep = {
                .source = o->source,
                .kill = o->has_kill ? &o->kill : NULL,
                .kills = o->kills,
                .cgroup = o->cgroup,
                .victim_cgroup = o->victim_cgroup,
                .has_victim_delay = o->has_victim_delay,
                .victim_present = o->victim_present,
                .victim_delay_source = o->victim_delay_source,
                .related = related,
                .n_related = o->n_related,
        };
        memcpy(rep.victim_delay_ns, o->victim_delay_ns, sizeof rep.victim_delay_ns);

        incident_format_id(&a->rt.host, s->wakeup_real_us, getpid(), ++a->seq, id, sizeof id);
        r = report_build_line(&(Report) {
                                      .sysroot = a->rt.sysroot,
                                      .host = &a->rt.host,
                                      .type = "oom",
                                      .id = id,
                                      .wakeup_real_us = s->wakeup_real_us,
                                      .delayacct = runtime_delayacct(&a->rt),
                                      .resource = PSI_RESOURCE_MEMORY,
                                      .has_stall = true,
                                      .stall = PSI_STALL_SOME,
                                      .top = o->top,
                                      .a = lifetime ? NULL : &s->a,
                                      .b = lifetime ? &s->a : &s->b,
                                      .unmeasured = basis == OOM_BASIS_NONE,
                                      .ranking = &s->ranking,
                                      .hot = basis == OOM_BASIS_NONE ? NULL : &s->hot,
                                      .scope_cgroup = o->cgroup,
                                      .procs = a->procs,
                                      .oom = &rep,
                              },
                              &line, &len);
        if (r < 0) {
                log_error_errno(r, "cannot build the oom incident of pid %d", (int) o->kill.pid);
                return;
        }
        for (size_t i = 0; i < o->n_sinks; i++)
                (void) output_write(o->sinks[i], line, len);
        a->oom_kills += o->kills;
        agent_metrics_update(a);
        if (o->has_kill)
                log_info("oom kill of pid %d (%.*s) in /%s: incident %s, %zu related", (int) o->kill.pid,
                         (int) o->kill.comm_len, o->kill.comm, o->victim_cgroup ? o->victim_cgroup : "?", id, o->n_related);
        else
                log_info("%llu oom kill%s counted in /%s (%s): incident %s, %zu related", (unsigned long long) o->kills,
                         o->kills == 1 ? "" : "s", o->victim_cgroup ? o->victim_cgroup : "?", o->source, id, o->n_related);
}

static void oom_sample_done(Sampler *s, int r) {
        OomIncident *o = s->userdata;

        o->agent->oom_sampling--;
        if (r < 0 && r != -ENOMEM)
                log_debug_errno(r, "the cgroup of an oom kill could not be measured after its window; "
                                   "reporting the first snapshot");
        oom_write(o, (r >= 0 || r == -ENOMEM) && s->sample_ms > 0 ? OOM_BASIS_DELTA : OOM_BASIS_LIFETIME);
        oom_incident_free(o);
}

/* The victim's delays right after the kill: an exit record some sample already heard, else
 * what taskstats says now (the victim is dying or a zombie; gone: nothing). */
static void oom_query_victim(OomIncident *o) {
        TaskStats ts;

        if (!o->has_kill)
                return;
        oom_victim_delays(o);
        if (o->has_victim_delay || !o->agent->rt.taskstats)
                return;
        if (taskstats_get_tid(o->agent->rt.taskstats, o->kill.pid, &ts) >= 0 && ts.pid == o->kill.pid) {
                o->has_victim_delay = true;
                o->victim_delay_source = "taskstats";
                o->victim_present = ts.present;
                memcpy(o->victim_delay_ns, ts.delay_ns, sizeof o->victim_delay_ns);
        }
}

/* Opens the cgroup to measure: the victim's own, or the nearest ancestor there is, up to (and
 * including) the deepest watch that covers it. */
static int oom_open_cgroup(OomIncident *o, const Watch *deepest) {
        Agent *a = o->agent;
        _cleanup_free_ char *p = NULL;
        size_t floor = deepest->path ? strlen(deepest->path) : 0;
        int r;

        if (!o->victim_cgroup)
                return deepest->path ? -ENOENT : 0;
        p = strdup(o->victim_cgroup);
        if (!p)
                return -ENOMEM;
        for (;;) {
                size_t n = strlen(p);
                if (n < floor || (n == 0 && !deepest->path))
                        return deepest->path ? -ENOENT : 0; /* node-wide */
                if (fd_take(a, 1) < 0)
                        return -EMFILE;
                r = sysroot_open_cgroup(a->rt.sysroot, p, &o->cgroup_fd);
                if (r >= 0) {
                        o->cgroup = TAKE_PTR(p);
                        return 0;
                }
                a->fd_budget++;
                if (n == 0)
                        return r;
                char *slash = strrchr(p, '/');
                if (slash)
                        *slash = '\0';
                else
                        p[0] = '\0';
        }
}

/* A kill (from kmsg, or counted: kill NULL) in victim_cgroup ("a/b"; NULL unknown). */
static void agent_oom(Agent *a, const OomKill *kill, const char *victim_cgroup, const char *source, uint64_t kills) {
        OomIncident *o;
        const Watch *deepest = NULL;
        const char *related[OOM_RELATED_MAX];
        int r;

        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *w = a->watches[i];
                if (!watch_covers(w, victim_cgroup))
                        continue;
                if (!deepest || (w->path && (!deepest->path || strlen(w->path) > strlen(deepest->path))))
                        deepest = w;
        }
        if (!deepest) {
                log_debug("an oom kill in %s%s: not watched", victim_cgroup ? "/" : "", victim_cgroup ? victim_cgroup : "an unknown cgroup");
                return;
        }
        o = calloc(1, sizeof *o);
        if (!o) {
                log_error("out of memory: an oom kill is not reported");
                return;
        }
        o->agent = a;
        o->cgroup_fd = -EBADF;
        o->source = source;
        o->kills = kills;
        o->top = deepest->cfg->top;
        o->has_kill = kill != NULL;
        if (kill)
                o->kill = *kill;
        o->sinks = calloc(MAX(a->n_sinks, (size_t) 1), sizeof *o->sinks);
        if (!o->sinks || (victim_cgroup && !(o->victim_cgroup = strdup(victim_cgroup)))) {
                log_error("out of memory: an oom kill is not reported");
                free(o->sinks);
                free(o);
                return;
        }
        o->next = a->ooms;
        a->ooms = o;
        sampler_init(&o->sampler, a->loop, &a->rt, oom_sample_done, o);

        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *w = a->watches[i];
                bool have = false;
                if (!watch_covers(w, victim_cgroup))
                        continue;
                for (size_t k = 0; k < o->n_sinks; k++)
                        have = have || o->sinks[k] == w->sink;
                if (!have)
                        o->sinks[o->n_sinks++] = w->sink; /* one of a->sinks: room for all */
        }
        o->n_related = history_related(&a->history, victim_cgroup, now_usec(CLOCK_MONOTONIC), related, OOM_RELATED_MAX);
        for (size_t i = 0; i < o->n_related; i++)
                snprintf(o->related[i], sizeof o->related[i], "%s", related[i]);

        r = oom_open_cgroup(o, deepest);
        SampleScope scope = {
                .sysroot = a->rt.sysroot,
                .taskstats = a->rt.taskstats,
                .cgroup_fd = o->cgroup_fd,
                .exclude_tgid = getpid(),
                .walk_cgroups = true,
                .cgroups_resource = PSI_RESOURCE_MEMORY,
        };
        if (r >= 0 && a->oom_sampling < OOM_SAMPLING_MAX) {
                uint64_t ms = deepest->cfg->sample_ms;
                /* With no window, o is written and freed inside sampler_start: ask now. */
                if (ms == 0)
                        oom_query_victim(o);
                a->oom_sampling++;
                r = sampler_start(&o->sampler, &scope, ms);
                if (r >= 0) {
                        if (ms > 0) {
                                /* After the sample's exit listener is registered: if the victim
                                 * exits from here on, its exit record is heard and preferred. */
                                oom_query_victim(o);
                                log_debug("sampling /%s after an oom kill for %llu ms", o->cgroup ? o->cgroup : "(node)",
                                          (unsigned long long) ms);
                        }
                        return; /* oom_sample_done writes it (and frees o) */
                }
                a->oom_sampling--;
        }
        if (r < 0 && r != -ENOENT && r != -ENODEV)
                log_debug_errno(r, "cannot measure the cgroup of an oom kill");
        oom_query_victim(o);
        /* Not measured: the pressure of what could be opened, written now. */
        o->sampler.wakeup_real_us = now_usec(CLOCK_REALTIME);
        o->sampler.a.mono_us = now_usec(CLOCK_MONOTONIC);
        o->sampler.a.real_us = o->sampler.wakeup_real_us;
        snapshot_read_pressure(&o->sampler.a, &scope);
        oom_write(o, OOM_BASIS_NONE);
        oom_incident_free(o);
}

/* The victim's cgroup as our watches name it ("a/b"): from /proc/<pid>/cgroup while the dying
 * process is still there (on a hybrid host that is the cgroup2 path; the kernel's task_memcg is the
 * cgroup-v1 memcg's), else the kernel's task_memcg. NULL when neither says. */
static char *oom_victim_cgroup(Agent *a, const OomKill *k) {
        char buf[OOM_CGROUP_MAX];
        const char *p = NULL;

        if (k->pid > 0 && proc_read_cgroup(a->rt.sysroot->proc_fd, k->pid, buf, sizeof buf) >= 0)
                p = buf;
        else if (k->has_header && k->task_memcg[0])
                p = k->task_memcg;
        if (!p)
                return NULL;
        while (*p == '/')
                p++;
        return strdup(p);
}

/* ---- Counting kills without kmsg ------------------------------------------------------------ */

#define OOMC_RECHECK_S 0.1
#define OOMC_RECHECKS_MAX 10

static void watch_counter_close(Agent *a, Watch *w) {
        if (!w->has_oomc)
                return;
        if (w->oomc_event_fd >= 0) {
                ev_io_stop(a->loop, &w->oomc_io);
                w->oomc_event_fd = safe_close(w->oomc_event_fd);
                a->fd_budget++;
        }
        if (w->oomc_wd >= 0 && a->oomc_inotify_fd >= 0)
                (void) inotify_rm_watch(a->oomc_inotify_fd, w->oomc_wd);
        w->oomc_fd = safe_close(w->oomc_fd);
        a->fd_budget++;
        w->has_oomc = false;
}

static void oom_counters_scan(Agent *a, bool announced);

static void on_oomc_event(struct ev_loop *loop, ev_io *io, int revents) {
        Watch *w = io->data;
        uint64_t v;

        (void) read(w->oomc_event_fd, &v, sizeof v);
        oom_counters_scan(w->agent, true);
}

/* Opens the kill counter of a cgroup watch (once per cgroup), when kmsg is closed to us. */
static void watch_counter_open(Agent *a, Watch *w) {
        char proc_path[64];
        int r;

        w->oomc_fd = w->oomc_event_fd = w->oomc_wd = -EBADF;
        if (!a->oom_counting || !w->path)
                return;
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i] != w && a->watches[i]->has_oomc && strcmp(a->watches[i]->path, w->path) == 0)
                        return; /* another config watch of the same cgroup counts it */
        r = fd_take(a, 2);
        if (r < 0)
                return;
        r = memcg_open_oom_counter(a->rt.sysroot, w->path, &w->oomc_kind, &w->oomc_fd, &w->oomc_event_fd);
        if (r < 0) {
                a->fd_budget += 2;
                log_debug_errno(r, "no oom_kill counter for %s", w->name);
                return;
        }
        w->has_oomc = true;
        if (w->oomc_event_fd < 0)
                a->fd_budget++;
        if (memcg_read_oom_kill(w->oomc_fd, &w->oomc_count) < 0)
                w->oomc_count = 0;
        if (w->oomc_kind == MEMCG_COUNTER_EVENTS) {
                snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", w->oomc_fd);
                w->oomc_wd = a->oomc_inotify_fd >= 0 ? inotify_add_watch(a->oomc_inotify_fd, proc_path, IN_MODIFY) : -1;
                if (w->oomc_wd < 0) {
                        log_warning_errno(-errno, "cannot follow the oom_kill counter of %s", w->name);
                        watch_counter_close(a, w);
                        return;
                }
        } else {
                ev_io_init(&w->oomc_io, on_oomc_event, w->oomc_event_fd, EV_READ);
                w->oomc_io.data = w;
                ev_io_start(a->loop, &w->oomc_io);
        }
        log_debug("counting oom kills of %s from %s (now %llu)", w->name, memcg_counter_kind_to_string(w->oomc_kind),
                  (unsigned long long) w->oomc_count);
}

/* The counted watch nearest above w whose counter includes w's kills (cgroup2 counts a kill in
 * every ancestor; v1 memcgs count their own only). NULL when none. */
static const Watch *counter_parent(const Agent *a, const Watch *w) {
        const Watch *best = NULL;

        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *p = a->watches[i];
                if (p == w || !p->has_oomc || p->oomc_kind != MEMCG_COUNTER_EVENTS || w->oomc_kind != MEMCG_COUNTER_EVENTS ||
                    strcmp(p->path, w->path) == 0 || !history_covers(p->path, w->path))
                        continue;
                if (!best || strlen(p->path) > strlen(best->path))
                        best = p;
        }
        return best;
}

/* Reads every counter; each kill is reported once, in the deepest counted cgroup that saw it.
 * announced: a v1 eventfd said an OOM began, and its kill may not be counted yet. */
static void oom_counters_scan(Agent *a, bool announced) {
        _cleanup_free_ uint64_t *growth = calloc(a->n_watches ? a->n_watches : 1, sizeof *growth);
        _cleanup_free_ uint64_t *own = calloc(a->n_watches ? a->n_watches : 1, sizeof *own);
        bool any = false;

        if (!growth || !own) {
                log_error("out of memory: oom kill counters not read");
                return;
        }
        for (size_t i = 0; i < a->n_watches; i++) {
                Watch *w = a->watches[i];
                uint64_t v;
                if (!w->has_oomc || memcg_read_oom_kill(w->oomc_fd, &v) < 0)
                        continue;
                if (v > w->oomc_count) {
                        growth[i] = own[i] = v - w->oomc_count;
                        any = true;
                }
                w->oomc_count = v;
        }
        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *p;
                if (growth[i] == 0 || !(p = counter_parent(a, a->watches[i])))
                        continue;
                for (size_t k = 0; k < a->n_watches; k++)
                        if (a->watches[k] == p)
                                own[k] -= MIN(own[k], growth[i]);
        }
        for (size_t i = 0; i < a->n_watches; i++)
                if (own[i] > 0)
                        agent_oom(a, NULL, a->watches[i]->path, memcg_counter_kind_to_string(a->watches[i]->oomc_kind),
                                  own[i]);

        if (any)
                a->oomc_rechecks = 0;
        else if (announced || a->oomc_rechecks > 0) {
                if (a->oomc_rechecks++ < OOMC_RECHECKS_MAX) {
                        ev_timer_set(&a->oomc_recheck, OOMC_RECHECK_S, 0.);
                        ev_timer_start(a->loop, &a->oomc_recheck);
                } else
                        a->oomc_rechecks = 0;
        }
}

static void on_oomc_recheck(struct ev_loop *loop, ev_timer *t, int revents) {
        oom_counters_scan(t->data, false);
}

static void on_oomc_inotify(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = io->data;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

        while (read(a->oomc_inotify_fd, buf, sizeof buf) > 0)
                ;
        oom_counters_scan(a, false);
}

/* kmsg is closed to us: count kills from the watched cgroups' memory counters instead. */
static void oom_counting_start(Agent *a) {
        unsigned n = 0;

        a->oom_counting = true;
        a->oomc_inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (a->oomc_inotify_fd >= 0) {
                ev_io_init(&a->oomc_inotify_io, on_oomc_inotify, a->oomc_inotify_fd, EV_READ);
                a->oomc_inotify_io.data = a;
                ev_io_start(a->loop, &a->oomc_inotify_io);
        }
        ev_timer_init(&a->oomc_recheck, on_oomc_recheck, 0., 0.);
        a->oomc_recheck.data = a;
        for (size_t i = 0; i < a->n_watches; i++) {
                watch_counter_open(a, a->watches[i]);
                n += a->watches[i]->has_oomc;
        }
        if (n > 0)
                log_info("counting oom kills from the memory cgroups of %u watch%s instead (no victim details; "
                         "node-wide watches are not covered)", n, n == 1 ? "" : "es");
}

static void on_kmsg_io(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = io->data;

        /* Bounded per wakeup, so a flood of kernel messages cannot starve the triggers. */
        for (unsigned i = 0; i < 256; i++) {
                KmsgRecord rec;
                ssize_t n = kmsg_read_record(a->kmsg_fd, a->kmsg_buf, KMSG_RECORD_MAX);

                if (n == -EAGAIN)
                        return;
                if (n == -EPIPE) {
                        /* The ring overwrote records we had not read: an oom-kill: line may be
                         * among them, so the next Killed process line stands alone. */
                        usec_t now = now_usec(CLOCK_MONOTONIC);
                        a->kmsg_lost++;
                        a->kmsg_kill.has_header = false;
                        agent_metrics_update(a);
                        /* Once a minute at most; psidiag_kmsg_lost_total counts them all. */
                        if (!a->kmsg_lost_warned_us || now - a->kmsg_lost_warned_us >= 60 * USEC_PER_SEC) {
                                a->kmsg_lost_warned_us = now;
                                log_warning("kernel messages were overwritten before psidiag read them; an oom kill "
                                            "among them is not reported");
                        }
                        continue;
                }
                if (n < 0) {
                        log_error_errno((int) n, "cannot read /dev/kmsg; oom kills are no longer reported");
                        ev_io_stop(a->loop, &a->kmsg_io);
                        a->kmsg_fd = safe_close(a->kmsg_fd);
                        return;
                }
                if (kmsg_parse_record(a->kmsg_buf, (size_t) n, &rec) < 0)
                        continue;
                if (oom_parse_message(rec.message, rec.message_len, &a->kmsg_kill) != OOM_LINE_KILLED)
                        continue;
                /* Both clocks count from boot (suspend aside): how late the kill is read. */
                log_debug("oom kill of pid %d read %lld us after the kernel logged it", (int) a->kmsg_kill.pid,
                          (long long) now_usec(CLOCK_MONOTONIC) - (long long) rec.timestamp_us);
                _cleanup_free_ char *cg = oom_victim_cgroup(a, &a->kmsg_kill);
                agent_oom(a, &a->kmsg_kill, cg, "kmsg", 1);
                a->kmsg_kill = (OomKill) {};
        }
}

static void oom_watch_start(Agent *a) {
        int fd = kmsg_open_end("/dev/kmsg");

        if (fd < 0) {
                log_warning_errno(fd, "cannot read /dev/kmsg%s: oom kills are not read from the kernel log",
                                  fd == -EPERM ? " (kernel.dmesg_restrict is set and CAP_SYSLOG is missing)" : "");
                oom_counting_start(a);
                return;
        }
        a->kmsg_buf = malloc(KMSG_RECORD_MAX);
        if (!a->kmsg_buf) {
                log_error("out of memory: oom kills are not reported");
                safe_close(fd);
                return;
        }
        a->kmsg_fd = fd;
        ev_io_init(&a->kmsg_io, on_kmsg_io, fd, EV_READ);
        a->kmsg_io.data = a;
        ev_io_start(a->loop, &a->kmsg_io);
}

static void oom_watch_stop(Agent *a) {
        /* A kill is never dropped at exit: one still in its sample is written with what snapshot A
         * saw (lifetime totals, labelled so). */
        while (a->ooms) {
                OomIncident *o = a->ooms;
                if (o->sampler.running) {
                        sampler_cancel(&o->sampler);
                        a->oom_sampling--;
                        oom_write(o, OOM_BASIS_LIFETIME);
                }
                oom_incident_free(o);
        }
        for (size_t i = 0; i < a->n_watches; i++)
                watch_counter_close(a, a->watches[i]);
        if (a->oom_counting) {
                ev_timer_stop(a->loop, &a->oomc_recheck);
                if (a->oomc_inotify_fd >= 0)
                        ev_io_stop(a->loop, &a->oomc_inotify_io);
                a->oomc_inotify_fd = safe_close(a->oomc_inotify_fd);
        }
        if (a->kmsg_fd >= 0) {
                ev_io_stop(a->loop, &a->kmsg_io);
                a->kmsg_fd = safe_close(a->kmsg_fd);
        }
        free(a->kmsg_buf);
        a->kmsg_buf = NULL;
}

static int agent_get_sink(Agent *a, const char *path, OutputSink **ret, char *why, size_t why_size) {
        OutputSink **p;
        int r;

        for (size_t i = 0; i < a->n_sinks; i++)
                if (strcmp(a->sinks[i]->path, path) == 0) {
                        *ret = a->sinks[i];
                        return 0;
                }
        p = realloc(a->sinks, (a->n_sinks + 1) * sizeof *p);
        if (!p)
                return -ENOMEM;
        a->sinks = p;
        r = output_open(path, &a->sinks[a->n_sinks], why, why_size);
        if (r < 0)
                return r;
        *ret = a->sinks[a->n_sinks++];
        return 0;
}

/* Arms one trigger of w. Returns the trigger, or NULL when it could not be armed (logged). */
static Trigger *trigger_arm(Agent *a, Watch *w, const WatchTrigger *cfg) {
        bool cgroup = w->path != NULL;
        int dirfd = cgroup ? w->cgroup_fd : a->rt.sysroot->pressure_fd;
        const char *file = pressure_file_name(cfg->spec.resource, cgroup);
        Trigger *t;
        PressureStats ps;
        int r;

        if (dirfd < 0)
                return NULL;
        t = calloc(1, sizeof *t);
        if (!t) {
                log_error("out of memory");
                return NULL;
        }
        *t = (Trigger) { .watch = w, .cfg = cfg, .fd = -EBADF, .epoll_fd = -EBADF };
        if (psi_trigger_spec_effective(&cfg->spec, a->rt.privileged, &t->effective) > 0 && !a->started) {
                char buf[96];
                log_warning("trigger \"%s\" on %s: without CAP_SYS_RESOURCE the kernel accepts only windows "
                            "that are multiples of 2s; armed as \"%s\"",
                            cfg->text, w->name, psi_trigger_spec_format(&t->effective, buf, sizeof buf));
        }
        r = fd_take(a, 2); /* the trigger and its epoll instance */
        if (r >= 0) {
                r = psi_trigger_open(dirfd, file, &t->effective, &t->fd);
                if (r < 0)
                        a->fd_budget += 2;
        }
        if (r < 0) {
                if (!out_of_fds(a, r, 1)) {
                        if (r == -EOPNOTSUPP)
                                log_error("cannot arm \"%s\" on %s: PSI is disabled for it (psi=0, or "
                                          "cgroup.pressure=0)", cfg->text, w->name);
                        else if (r == -ENOENT || r == -ENODEV)
                                log_debug("cannot arm \"%s\" on %s: the cgroup is going away", cfg->text, w->name);
                        else
                                log_error_errno(r, "cannot arm \"%s\" on %s (%s)", cfg->text, w->name, file);
                }
                free(t);
                return NULL;
        }
        if (pressure_read_fd(t->fd, &ps) >= 0 && ps.has[t->effective.stall])
                t->total = (TriggerTotal) { .known = true, .total_us = ps.line[t->effective.stall].total_us };
        r = psi_watch_new(t->fd, EPOLLPRI, &t->epoll_fd);
        if (r < 0) {
                if (!out_of_fds(a, r, 1))
                        log_error_errno(r, "cannot watch the trigger fd of \"%s\" on %s", cfg->text, w->name);
                safe_close(t->fd);
                a->fd_budget += 2;
                free(t);
                return NULL;
        }
        ev_io_init(&t->io, on_trigger_io, t->epoll_fd, EV_READ);
        t->io.data = t;
        ev_io_start(a->loop, &t->io);
        a->armed++;
        log_debug("armed \"%s\" on %s", cfg->text, w->name);
        return t;
}

static int watch_set_config(Agent *a, Watch *w, const WatchConfig *cfg) {
        char why[160] = "out of memory";
        OutputSink *sink;
        int r = agent_get_sink(a, cfg->output, &sink, why, sizeof why);

        if (r < 0) {
                log_error_errno(r, "cannot open output %s: %s", cfg->output, why);
                return r;
        }
        w->cfg = cfg;
        w->sink = sink;
        w->timing.cooldown_us = cfg->cooldown_ms * USEC_PER_MSEC;
        return 0;
}

/* A watch of cfg on path (NULL: node-wide), armed. NULL when the cgroup could not be opened or no
 * trigger could be armed (logged). */
static Watch *watch_new(Agent *a, const WatchConfig *cfg, const char *path) {
        Watch *w = calloc(1, sizeof *w);
        unsigned armed_before = a->armed;
        int r;

        if (w && a->n_watches == a->cap_watches) {
                size_t cap = MAX((size_t) 16, a->cap_watches * 2);
                Watch **p = reallocarray(a->watches, cap, sizeof *p);
                if (!p) {
                        free(w);
                        w = NULL;
                } else {
                        a->watches = p;
                        a->cap_watches = cap;
                }
        }
        if (!w) {
                log_error("out of memory");
                return NULL;
        }
        w->agent = a;
        w->cgroup_fd = -EBADF;
        w->oomc_fd = w->oomc_event_fd = w->oomc_wd = -EBADF;
        w->path = path ? strdup(path) : NULL;
        if (asprintf(&w->name, "%s", path ? (path[0] ? path : "/") : "node") < 0)
                w->name = NULL;
        w->triggers = calloc(cfg->n_triggers, sizeof *w->triggers);
        sampler_init(&w->sampler, a->loop, &a->rt, watch_finish_sample, w);
        a->watches[a->n_watches++] = w;
        if ((path && !w->path) || !w->name || !w->triggers) {
                log_error("out of memory");
                watch_remove(a, w);
                return NULL;
        }
        if (watch_set_config(a, w, cfg) < 0) {
                watch_remove(a, w);
                return NULL;
        }
        if (path) {
                r = fd_take(a, 1);
                if (r >= 0) {
                        r = sysroot_open_cgroup(a->rt.sysroot, path, &w->cgroup_fd);
                        if (r < 0)
                                a->fd_budget++;
                }
                if (r < 0) {
                        if (!out_of_fds(a, r, cfg->n_triggers) && r != -ENOENT && r != -ENODEV)
                                log_warning_errno(r, "cannot open cgroup %s under %s", w->name,
                                                  a->rt.sysroot->cgroup2_path ? a->rt.sysroot->cgroup2_path : "(no cgroup2)");
                        watch_remove(a, w);
                        return NULL;
                }
        }
        for (size_t i = 0; i < cfg->n_triggers; i++) {
                Trigger *t = trigger_arm(a, w, &cfg->triggers[i]);
                if (t)
                        w->triggers[w->n_triggers++] = t;
        }
        if (w->n_triggers == 0) {
                watch_remove(a, w);
                return NULL;
        }
        SampleScope scope = watch_scope(w);
        size_t n;
        if (sampler_preallocate(&w->sampler, &scope, &n) < 0)
                log_warning("cannot allocate sample buffers for %s ahead of time (%zu threads)", w->name, n);
        watch_counter_open(a, w);
        if (a->started)
                log_info("armed %u trigger%s on %s", a->armed - armed_before, a->armed - armed_before == 1 ? "" : "s",
                         w->name);
        return w;
}

static Watch *watch_find(Agent *a, const WatchConfig *cfg, const char *path) {
        for (size_t i = 0; i < a->n_watches; i++) {
                Watch *w = a->watches[i];
                if (w->cfg == cfg && (path ? w->path && strcmp(w->path, path) == 0 : !w->path))
                        return w;
        }
        return NULL;
}

/* inotify on a directory of the cgroup2 tree (relative path), once. */
static void dir_watch(Agent *a, const char *path) {
        _cleanup_free_ char *abs = NULL;
        WatchedDir *p;
        int wd;

        if (a->inotify_fd < 0 || asprintf(&abs, "%s/%s", a->rt.sysroot->cgroup2_path, path) < 0)
                return;
        wd = inotify_add_watch(a->inotify_fd, abs, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_ONLYDIR |
                                                           IN_DONT_FOLLOW);
        if (wd < 0) {
                if (errno == ENOSPC && !a->inotify_full_warned) {
                        log_warning("out of inotify watches (fs.inotify.max_user_watches): new cgroups under %s are "
                                    "not noticed until the next reload", abs);
                        a->inotify_full_warned = true;
                }
                return;
        }
        for (size_t i = 0; i < a->n_dirs; i++)
                if (a->dirs[i].wd == wd)
                        return;
        p = realloc(a->dirs, (a->n_dirs + 1) * sizeof *p);
        if (!p)
                return;
        a->dirs = p;
        a->dirs[a->n_dirs] = (WatchedDir) { .wd = wd, .path = strdup(path) };
        if (a->dirs[a->n_dirs].path)
                a->n_dirs++;
}

static bool has_glob(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] == '*' || s[i] == '?' || s[i] == '[')
                        return true;
        return false;
}

/* Walks the pattern's segments from dirfd (at path, depth segments in): arms a watch on every
 * match, and puts inotify on every directory where a match may appear later. Returns how many
 * cgroups match. */
static unsigned discover_walk(Agent *a, const WatchConfig *cfg, const char *rest, int dirfd, const char *path) {
        const char *seg, *slash;
        size_t seg_len;
        unsigned n = 0;

        while (*rest == '/')
                rest++;
        if (!*rest) {
                if (!watch_find(a, cfg, path))
                        (void) watch_new(a, cfg, path);
                return 1;
        }
        dir_watch(a, path);
        seg = rest;
        slash = strchrnul(seg, '/');
        seg_len = (size_t) (slash - seg);
        char pattern[256];
        if (seg_len >= sizeof pattern)
                return 0;
        memcpy(pattern, seg, seg_len);
        pattern[seg_len] = '\0';

        if (!has_glob(pattern, seg_len)) {
                _cleanup_free_ char *child_path = NULL;
                int child = openat(dirfd, pattern, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        return 0;
                if (asprintf(&child_path, "%s%s%s", path, path[0] ? "/" : "", pattern) >= 0)
                        n = discover_walk(a, cfg, slash, child, child_path);
                safe_close(child);
                return n;
        }
        int dup = openat(dirfd, ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
        struct dirent *de;

        if (!d) {
                safe_close(dup);
                return 0;
        }
        while ((de = readdir(d))) {
                _cleanup_free_ char *child_path = NULL;
                int child;

                if (de->d_type != DT_DIR || de->d_name[0] == '.' || fnmatch(pattern, de->d_name, FNM_PERIOD) != 0)
                        continue;
                child = openat(dirfd, de->d_name, O_DIRECTORY | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0)
                        continue;
                if (asprintf(&child_path, "%s%s%s", path, path[0] ? "/" : "", de->d_name) >= 0)
                        n += discover_walk(a, cfg, slash, child, child_path);
                safe_close(child);
        }
        closedir(d);
        return n;
}

/* Arms whatever the config asks for and is not armed yet: node-wide watches, concrete cgroups that
 * now exist, and every current match of a glob. */
static void discover(Agent *a) {
        for (size_t i = 0; i < a->config->n_watches; i++) {
                const WatchConfig *cfg = &a->config->watches[i];
                unsigned n;

                if (!cfg->cgroup) {
                        if (!watch_find(a, cfg, NULL))
                                (void) watch_new(a, cfg, NULL);
                        continue;
                }
                if (a->rt.sysroot->cgroup2_fd < 0)
                        continue;
                n = discover_walk(a, cfg, cfg->cgroup, a->rt.sysroot->cgroup2_fd, "");
                if (n == 0 && !a->missing_warned[i]) {
                        if (has_glob(cfg->cgroup, strlen(cfg->cgroup)))
                                log_info("no cgroup matches %s yet; matches are armed as they appear", cfg->cgroup);
                        else
                                log_warning("cgroup %s does not exist (yet); it is armed when it appears", cfg->cgroup);
                        a->missing_warned[i] = true;
                } else if (n > 0)
                        a->missing_warned[i] = false;
        }
}

static void on_inotify(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = io->data;
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool rediscover = false, changed = false;
        ssize_t k;

        while ((k = read(a->inotify_fd, buf, sizeof buf)) > 0) {
                for (char *p = buf; p < buf + k;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        const WatchedDir *dir = NULL;

                        p += sizeof *e + e->len;
                        if (e->mask & IN_Q_OVERFLOW) {
                                rediscover = true;
                                continue;
                        }
                        for (size_t i = 0; i < a->n_dirs; i++)
                                if (a->dirs[i].wd == e->wd)
                                        dir = &a->dirs[i];
                        if (!dir)
                                continue;
                        if (e->mask & IN_IGNORED) { /* the directory itself is gone */
                                size_t i = (size_t) (dir - a->dirs);
                                free(a->dirs[i].path);
                                a->dirs[i] = a->dirs[--a->n_dirs];
                                continue;
                        }
                        if (!(e->mask & IN_ISDIR) || e->len == 0)
                                continue;
                        if (e->mask & (IN_CREATE | IN_MOVED_TO))
                                rediscover = true;
                        if (e->mask & (IN_DELETE | IN_MOVED_FROM)) {
                                _cleanup_free_ char *gone = NULL;
                                if (asprintf(&gone, "%s%s%s", dir->path, dir->path[0] ? "/" : "", e->name) < 0)
                                        continue;
                                for (size_t i = 0; i < a->n_watches;) {
                                        Watch *w = a->watches[i];
                                        if (w->path && strcmp(w->path, gone) == 0) {
                                                log_info("cgroup %s was removed: its triggers are closed", w->name);
                                                a->cgroups_gone++;
                                                watch_remove(a, w); /* swaps the last watch into i */
                                                changed = true;
                                        } else
                                                i++;
                                }
                        }
                }
        }
        if (rediscover)
                discover(a);
        if (rediscover || changed)
                agent_metrics_update(a);
}

static void reopen_outputs(Agent *a) {
        for (size_t i = 0; i < a->n_sinks; i++) {
                char why[160];
                int r;

                if (strcmp(a->sinks[i]->path, "-") == 0 || strcmp(a->sinks[i]->path, OUTPUT_JOURNAL) == 0)
                        continue;
                r = output_reopen(a->sinks[i], why, sizeof why);
                if (r < 0)
                        log_error_errno(r, "cannot reopen %s (%s); still writing to the old file", a->sinks[i]->path, why);
                else
                        log_info("reopened %s", a->sinks[i]->path);
        }
}

/* Two config watches are the same watch across a reload when their cgroup (pattern) is the same
 * text and it is the same occurrence of that text in the list. */
static const WatchConfig *reload_match(const Config *old, const WatchConfig *ow, const Config *nc) {
        size_t occurrence = 0, seen = 0;

        for (size_t i = 0; i < old->n_watches && &old->watches[i] != ow; i++)
                if (!old->watches[i].cgroup == !ow->cgroup &&
                    (!ow->cgroup || strcmp(old->watches[i].cgroup, ow->cgroup) == 0))
                        occurrence++;
        for (size_t i = 0; i < nc->n_watches; i++) {
                const WatchConfig *nw = &nc->watches[i];
                if (!nw->cgroup != !ow->cgroup || (ow->cgroup && strcmp(nw->cgroup, ow->cgroup) != 0))
                        continue;
                if (seen++ == occurrence)
                        return nw;
        }
        return NULL;
}

/* SIGHUP: reopen the outputs (logrotate), then reload the config file. A bad config is refused
 * and the running one kept. Triggers whose cgroup and text did not change stay armed (same fds: no
 * gap and no spurious first event); others are closed or armed. */
static void reload(Agent *a) {
        _cleanup_free_ char *error = NULL;
        Config *nc = NULL, *old = a->config;
        unsigned kept = 0, closed = 0, armed_before;
        int r;

        reopen_outputs(a);
        if (!a->opts->config_path) {
                log_info("no config file to reload (the embedded default is in use)");
                return;
        }
        r = config_load_file(a->opts->config_path, &nc, &error);
        if (r >= 0 && a->opts->output)
                r = config_override_output(nc, a->opts->output);
        if (r >= 0)
                r = config_resolve_cgroups(nc, a->rt.sysroot, &error);
        if (r < 0) {
                log_error("reload refused, the running config is kept: %s", error ? error : strerror(-r));
                config_free(nc);
                return;
        }
        unsigned top = 1;
        for (size_t i = 0; i < nc->n_watches; i++)
                top = MAX(top, nc->watches[i].top);
        bool *warned = calloc(nc->n_watches ? nc->n_watches : 1, sizeof *warned);
        ProcessInfo *procs = top > a->top_max ? calloc(top, sizeof *procs) : NULL;
        RateLimit rate = {};
        if (!warned || (top > a->top_max && !procs) ||
            (nc->max_incidents_per_minute != old->max_incidents_per_minute &&
             rate_limit_init(&rate, nc->max_incidents_per_minute) < 0)) {
                log_error("reload refused, the running config is kept: out of memory");
                free(warned);
                free(procs);
                config_free(nc);
                return;
        }

        /* Rebind what stays, close what goes. */
        armed_before = a->armed;
        for (size_t i = 0; i < a->n_watches;) {
                Watch *w = a->watches[i];
                const WatchConfig *nw = reload_match(old, w->cfg, nc);
                size_t keep = 0;

                if (!nw || watch_set_config(a, w, nw) < 0) {
                        closed += (unsigned) w->n_triggers;
                        watch_remove(a, w);
                        continue;
                }
                Trigger **triggers = calloc(nw->n_triggers, sizeof *triggers);
                if (!triggers) {
                        closed += (unsigned) w->n_triggers;
                        watch_remove(a, w);
                        continue;
                }
                for (size_t j = 0; j < w->n_triggers; j++) {
                        Trigger *t = w->triggers[j];
                        const WatchTrigger *nt = NULL;

                        for (size_t k = 0; k < nw->n_triggers && !nt; k++) {
                                bool taken = false;
                                for (size_t m = 0; m < keep; m++)
                                        taken = taken || triggers[m]->cfg == &nw->triggers[k];
                                if (!taken && strcmp(nw->triggers[k].text, t->cfg->text) == 0)
                                        nt = &nw->triggers[k];
                        }
                        if (nt) {
                                t->cfg = nt;
                                triggers[keep++] = t;
                                kept++;
                        } else {
                                if (w->timing.sampling && w->fired == t)
                                        watch_drop_sample(w, "its trigger was removed by a reload");
                                trigger_free(a, t);
                                closed++;
                        }
                }
                free(w->triggers);
                w->triggers = triggers;
                w->n_triggers = keep;
                for (size_t k = 0; k < nw->n_triggers; k++) {
                        bool have = false;
                        for (size_t m = 0; m < keep; m++)
                                have = have || triggers[m]->cfg == &nw->triggers[k];
                        if (!have) {
                                Trigger *t = trigger_arm(a, w, &nw->triggers[k]);
                                if (t)
                                        w->triggers[w->n_triggers++] = t;
                        }
                }
                w->claimed = true;
                i++;
        }
        a->config = nc;
        a->history.lookback_us = (usec_t) nc->oom_lookback_s * USEC_PER_SEC; /* older entries go at the next add */
        free(a->missing_warned);
        a->missing_warned = warned;
        if (procs) {
                free(a->procs);
                a->procs = procs;
                a->top_max = top;
        }
        if (nc->max_incidents_per_minute != old->max_incidents_per_minute) {
                rate_limit_done(&a->rate);
                a->rate = rate;
        }
        config_free(old);
        discover(a);
        agent_metrics_update(a);
        /* armed now = armed before - closed + new */
        log_info("reloaded %s: %u triggers armed on %zu watches (%u kept, %u closed, %u new)", a->opts->config_path,
                 a->armed, a->n_watches, kept, closed, a->armed + closed - armed_before);
}

static void on_stop_signal(struct ev_loop *loop, ev_signal *sig, int revents) {
        Agent *a = sig->data;

        log_info("received %s, stopping", strsignal(sig->signum));
        for (size_t i = 0; i < a->n_watches; i++)
                watch_drop_sample(a->watches[i], "stopping");
        ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *sig, int revents) {
        reload(sig->data);
}

static void on_quiet(struct ev_loop *loop, ev_periodic *p, int revents) {
}

static void agent_free(Agent *a) {
        if (a->loop)
                oom_watch_stop(a);
        while (a->n_watches > 0)
                watch_remove(a, a->watches[a->n_watches - 1]);
        free(a->watches);
        free(a->procs);
        free(a->missing_warned);
        if (a->loop) {
                ev_signal_stop(a->loop, &a->sig_int);
                ev_signal_stop(a->loop, &a->sig_term);
                ev_signal_stop(a->loop, &a->sig_hup);
                ev_periodic_stop(a->loop, &a->quiet);
                if (a->inotify_fd >= 0)
                        ev_io_stop(a->loop, &a->inotify_io);
        }
        safe_close(a->inotify_fd);
        for (size_t i = 0; i < a->n_dirs; i++)
                free(a->dirs[i].path);
        free(a->dirs);
        for (size_t i = 0; i < a->n_sinks; i++)
                output_free(a->sinks[i]);
        free(a->sinks);
        free(a->metric_outputs);
        config_free(a->config);
        rate_limit_done(&a->rate);
        history_done(&a->history);
        runtime_close(&a->rt);
        if (a->loop)
                ev_loop_destroy(a->loop);
}

int agent_run(const AgentOptions *opts) {
        Agent agent = { .opts = opts, .inotify_fd = -EBADF, .kmsg_fd = -EBADF, .oomc_inotify_fd = -EBADF }, *a = &agent;
        _cleanup_free_ char *error = NULL;
        int r, exit_code = 1;

        if (opts->config_path)
                r = config_load_file(opts->config_path, &a->config, &error);
        else
                r = config_load_default(&a->config);
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "cannot load the config");
                return r == -ENOMEM ? 1 : 2;
        }
        if (opts->output && config_override_output(a->config, opts->output) < 0) {
                log_error("out of memory");
                goto finish;
        }

        if (runtime_open(&a->rt, opts->enable_delayacct) < 0)
                goto finish;
        r = config_resolve_cgroups(a->config, a->rt.sysroot, &error);
        if (r < 0) {
                log_error("%s", error ? error : "out of memory");
                exit_code = r == -EINVAL ? 2 : 1;
                goto finish;
        }

        protect_self(&a->rt);
        raise_fd_limit();
        if (rate_limit_init(&a->rate, a->config->max_incidents_per_minute) < 0 ||
            history_init(&a->history, (usec_t) a->config->oom_lookback_s * USEC_PER_SEC) < 0) {
                log_error("out of memory");
                goto finish;
        }

        /* A closed pipe or a file size limit on the output must be an error we count (EPIPE, EFBIG),
         * not a signal that kills us. */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);

        a->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
        if (!a->loop) {
                log_error("cannot create the event loop");
                goto finish;
        }
        a->top_max = 1;
        for (size_t i = 0; i < a->config->n_watches; i++)
                a->top_max = MAX(a->top_max, a->config->watches[i].top);
        a->procs = calloc(a->top_max, sizeof *a->procs);
        a->missing_warned = calloc(a->config->n_watches ? a->config->n_watches : 1, sizeof *a->missing_warned);
        if (!a->procs || !a->missing_warned) {
                log_error("out of memory");
                goto finish;
        }
        /* Signals first: libev opens its own descriptors for them, which must not be the ones the
         * triggers used up. */
        ev_signal_init(&a->sig_int, on_stop_signal, SIGINT);
        ev_signal_init(&a->sig_term, on_stop_signal, SIGTERM);
        ev_signal_init(&a->sig_hup, on_sighup, SIGHUP);
        a->sig_int.data = a->sig_term.data = a->sig_hup.data = a;
        ev_signal_start(a->loop, &a->sig_int);
        ev_signal_start(a->loop, &a->sig_term);
        ev_signal_start(a->loop, &a->sig_hup);
        /* Cgroups that appear later (a glob's new match, a configured path created after start, one
         * removed and created again) are noticed by inotify on their parent directories. */
        if (a->rt.sysroot->cgroup2_fd >= 0) {
                a->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
                if (a->inotify_fd < 0)
                        log_warning_errno(-errno, "cannot watch for new cgroups (inotify); only those present now are "
                                                  "armed");
                else {
                        ev_io_init(&a->inotify_io, on_inotify, a->inotify_fd, EV_READ);
                        a->inotify_io.data = a;
                        ev_io_start(a->loop, &a->inotify_io);
                }
        }

        /* libev caps every wait at MAX_BLOCKTIME (59.743 s) to notice clock jumps, unless it watches
         * the clock with a timerfd, which it starts doing once a periodic watcher exists. This one
         * is due in ten years and never fires; with it an idle agent's epoll_wait blocks for up to
         * 1,500,001 s instead of waking every minute for nothing (seen with strace). */
        ev_periodic_init(&a->quiet, on_quiet, ev_now(a->loop) + 10.0 * 365 * 86400, 0., 0);
        ev_periodic_start(a->loop, &a->quiet);

        a->fd_budget = fd_budget();
        discover(a);
        if (a->fd_starved > 0)
                log_error("%u of %u triggers are not armed: out of file descriptors (see above)", a->fd_starved,
                          a->fd_starved + a->armed);
        bool waiting = false;
        for (size_t i = 0; i < a->config->n_watches; i++)
                waiting = waiting || (a->config->watches[i].cgroup && a->inotify_fd >= 0);
        if (a->armed == 0 && !waiting) {
                log_error("no trigger could be armed; nothing to watch");
                goto finish;
        }
        oom_watch_start(a);
        a->start_time_s = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;
        agent_metrics_update(a);
        log_info("watching: %u trigger%s armed on %zu watch%s", a->armed, a->armed == 1 ? "" : "s", a->n_watches,
                 a->n_watches == 1 ? "" : "es");
        a->started = true;

        ev_run(a->loop, 0);
        agent_metrics_update(a);
        for (size_t i = 0; i < a->n_sinks; i++) {
                OutputSink *o = a->sinks[i];
                log_info("%s: %llu incident%s written, %llu lost", strcmp(o->path, "-") == 0 ? "stdout" : o->path,
                         (unsigned long long) o->written, o->written == 1 ? "" : "s", (unsigned long long) o->failed);
        }
        exit_code = 0;
finish:
        agent_free(a);
        return exit_code;
}
