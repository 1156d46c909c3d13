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
#include "agent/report.h"
#include "agent/wakeup.h"
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
        ev_timer timer;
        usec_t a_cost_us; /* how long snapshot A took */
        usec_t wakeup_real_us;
        Snapshot a, b;
        Ranking ranking;
        HotCgroups hot;
        TaskstatsExitListener *exit_listener; /* registered only while a sample runs */
        ev_io exit_io;
        ExitRecords exits;
        WatchTiming timing;
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

/* Sizes a watch's sample buffers to its cgroup's threads now, so the wakeup does not have to
 * allocate while the node may be short of memory (they grow later only if the cgroup does). */
static void watch_preallocate(Watch *w) {
        SampleScope scope = watch_scope(w);
        TidList *l = &w->a.tids;
        size_t n;
        int r;

        tid_list_clear(l);
        r = scope.cgroup_fd >= 0 ? cgroup_list_threads(scope.cgroup_fd, l) : proc_list_threads(scope.sysroot->proc_fd, l);
        n = MAX(r >= 0 ? l->n : 0, (size_t) 16);
        tid_list_clear(l);
        if (snapshot_reserve(&w->a, n) < 0 || snapshot_reserve(&w->b, n) < 0 || ranking_reserve(&w->ranking, n) < 0)
                log_warning("cannot allocate sample buffers for %s ahead of time (%zu threads)", w->name, n);
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

static void watch_drain_exits(Watch *w) {
        int r;

        if (!w->exit_listener)
                return;
        r = taskstats_exit_listener_drain(w->exit_listener, exit_records_collect, &w->exits, &w->exits.lost);
        if (r < 0) {
                log_debug_errno(r, "the exit listener of %s failed; exits are not followed in this sample", w->name);
                ev_io_stop(w->agent->loop, &w->exit_io);
                w->exit_listener = taskstats_exit_listener_free(w->exit_listener);
        }
}

static void on_exit_io(struct ev_loop *loop, ev_io *io, int revents) {
        watch_drain_exits(io->data);
}

static void watch_stop_exits(Watch *w) {
        if (!w->exit_listener)
                return;
        ev_io_stop(w->agent->loop, &w->exit_io);
        w->exit_listener = taskstats_exit_listener_free(w->exit_listener);
}

static void watch_drop_sample(Watch *w, const char *why) {
        if (!w->timing.sampling)
                return;
        ev_timer_stop(w->agent->loop, &w->timer);
        watch_stop_exits(w);
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
        if (a->loop)
                ev_timer_stop(a->loop, &w->timer);
        for (size_t j = 0; j < w->n_triggers; j++)
                trigger_free(a, w->triggers[j]);
        free(w->triggers);
        if (w->cgroup_fd >= 0) {
                safe_close(w->cgroup_fd);
                a->fd_budget++;
        }
        snapshot_done(&w->a);
        snapshot_done(&w->b);
        ranking_done(&w->ranking);
        hot_cgroups_done(&w->hot);
        watch_stop_exits(w);
        exit_records_done(&w->exits);
        free(w->path);
        free(w->name);
        free(w);
}

static void watch_finish_sample(Watch *w) {
        Agent *a = w->agent;
        SampleScope scope = watch_scope(w);
        Trigger *t = w->fired;
        _cleanup_free_ char *line = NULL;
        char id[96];
        size_t len;
        int r;

        scope.walk_cgroups = true;
        scope.cgroups_resource = t->effective.resource;
        bool lifetime = w->cfg->sample_ms == 0;
        usec_t start = now_usec(CLOCK_MONOTONIC), took_b;

        w->timing.sampling = false;
        a->sampling--;
        if (!lifetime) {
                /* Exit records up to now; threads that exit after B are in B anyway. */
                watch_drain_exits(w);
                bool listened = w->exit_listener != NULL;
                watch_stop_exits(w);
                r = snapshot_take(&w->b, &scope, false);
                if (r == -ENOENT || r == -ENODEV) {
                        log_info("cgroup %s disappeared during its sample; no incident", w->name);
                        return;
                }
                if (r < 0) {
                        log_error_errno(r, "cannot take the second snapshot of %s", w->name);
                        return;
                }
                if (listened && snapshot_merge_exits(&w->b, &w->a, &w->exits) < 0)
                        log_warning("out of memory: the exits of this sample of %s are not counted", w->name);
        }
        took_b = now_usec(CLOCK_MONOTONIC);
        if (w->a.errors + w->b.errors > 0)
                log_debug_errno(w->a.errors ? w->a.first_error : w->b.first_error,
                                "%u threads of %s could not be measured", w->a.errors + w->b.errors, w->name);

        incident_format_id(&a->rt.host, w->wakeup_real_us, getpid(), ++a->seq, id, sizeof id);
        r = report_build_line(&(Report) {
                                      .sysroot = a->rt.sysroot,
                                      .host = &a->rt.host,
                                      .type = "pressure",
                                      .id = id,
                                      .wakeup_real_us = w->wakeup_real_us,
                                      .delayacct = runtime_delayacct(&a->rt),
                                      .has_trigger = true,
                                      .trigger_cgroup = w->path,
                                      .trigger = t->effective,
                                      .trigger_spec = t->cfg->text,
                                      .resource = t->effective.resource,
                                      .has_stall = true,
                                      .stall = t->effective.stall,
                                      .top = w->cfg->top,
                                      .a = lifetime ? NULL : &w->a,
                                      .b = lifetime ? &w->a : &w->b,
                                      .ranking = &w->ranking,
                                      .hot = &w->hot,
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
        a->rate.suppressed_since_incident = 0;
        a->samples++;
        a->sample_thread_errors += lifetime ? w->a.errors : w->a.errors + w->b.errors;
        agent_metrics_update(a);
        usec_t done = now_usec(CLOCK_MONOTONIC);
        /* The agent's own time for this incident, the sample window left out (benchmarks read it). */
        log_debug("incident %s for %s: %u threads, agent time %llu us (snapshot A %llu, B %llu, report and write %llu)",
                  id, w->name, w->a.listed,
                  (unsigned long long) (w->a_cost_us + done - start), (unsigned long long) w->a_cost_us,
                  (unsigned long long) (took_b - start), (unsigned long long) (done - took_b));
        w->timing.has_incident = true;
        w->timing.last_incident_mono_us = now_usec(CLOCK_MONOTONIC);
}

static void on_sample_timer(struct ev_loop *loop, ev_timer *timer, int revents) {
        watch_finish_sample(timer->data);
}

static void watch_start_sample(Watch *w, Trigger *t) {
        SampleScope scope = watch_scope(w);
        int r;

        /* The fired resource's totals of every descendant cgroup, for the hottest cgroups. */
        scope.walk_cgroups = true;
        scope.cgroups_resource = t->effective.resource;

        usec_t start = now_usec(CLOCK_MONOTONIC);

        /* Listen for exits from before A, so a thread A reads and that exits at once is caught. */
        exit_records_clear(&w->exits);
        if (w->cfg->sample_ms > 0) {
                w->exit_listener = runtime_exit_listener(&w->agent->rt);
                if (w->exit_listener) {
                        ev_io_init(&w->exit_io, on_exit_io, taskstats_exit_listener_fd(w->exit_listener), EV_READ);
                        w->exit_io.data = w;
                        ev_io_start(w->agent->loop, &w->exit_io);
                }
        }
        w->wakeup_real_us = now_usec(CLOCK_REALTIME);
        r = snapshot_take(&w->a, &scope, true);
        w->a_cost_us = now_usec(CLOCK_MONOTONIC) - start;
        if (r == -ENOENT || r == -ENODEV) {
                log_info("cgroup %s disappeared as its trigger fired; no incident", w->name);
                watch_stop_exits(w);
                return;
        }
        if (r < 0) {
                log_error_errno(r, "cannot take a snapshot of %s", w->name);
                watch_stop_exits(w);
                return;
        }
        log_debug("trigger \"%s\" on %s fired: sampling %u threads for %llu ms", t->cfg->text, w->name,
                  (unsigned) w->a.n, (unsigned long long) w->cfg->sample_ms);
        w->fired = t;
        w->timing.sampling = true;
        w->agent->sampling++;
        if (w->cfg->sample_ms == 0) {
                watch_finish_sample(w); /* no window: the incident is written now */
                return;
        }
        ev_timer_set(&w->timer, (double) w->cfg->sample_ms / 1000.0, 0.);
        ev_timer_start(w->agent->loop, &w->timer);
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
        w->path = path ? strdup(path) : NULL;
        if (asprintf(&w->name, "%s", path ? (path[0] ? path : "/") : "node") < 0)
                w->name = NULL;
        w->triggers = calloc(cfg->n_triggers, sizeof *w->triggers);
        ev_timer_init(&w->timer, on_sample_timer, 0., 0.);
        w->timer.data = w;
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
        watch_preallocate(w);
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
        runtime_close(&a->rt);
        if (a->loop)
                ev_loop_destroy(a->loop);
}

int agent_run(const AgentOptions *opts) {
        Agent agent = { .opts = opts, .inotify_fd = -EBADF }, *a = &agent;
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
        if (rate_limit_init(&a->rate, a->config->max_incidents_per_minute) < 0) {
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
