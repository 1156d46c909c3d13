/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <ev.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
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

typedef struct Trigger {
        Watch *watch;
        const WatchTrigger *cfg;
        PsiTriggerSpec effective;
        int fd;       /* the pressure file with the trigger written to it */
        int epoll_fd; /* its private epoll instance, watched by io (see triggers/psi.h) */
        ev_io io;
        TriggerTotal total;
} Trigger;

struct Watch {
        Agent *agent;
        const WatchConfig *cfg;
        const char *name; /* for logs: the cgroup path, or "node" */
        int cgroup_fd;    /* -1: node-wide */
        bool gone;
        Trigger *triggers;
        size_t n_triggers;
        OutputSink *sink;

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

struct Agent {
        struct ev_loop *loop;
        Runtime rt;
        Config *config;
        ev_signal sig_int, sig_term, sig_hup;
        Watch *watches;
        size_t n_watches;
        OutputSink **sinks;
        size_t n_sinks;
        uint64_t seq;
        unsigned armed;
        unsigned sampling; /* watches with a sample in flight */
        ProcessInfo *procs; /* report scratch shared by all watches (reports are built one at a time) */
        unsigned fd_starved; /* triggers not armed for lack of file descriptors */
        long fd_budget;      /* descriptors triggers may still take (fd_budget()) */
        RateLimit rate;
        usec_t rate_warned_us;

        /* Health counters for the metrics file. */
        unsigned triggers_configured;
        uint64_t start_time_s;
        uint64_t wakeups[_WAKEUP_VERDICT_MAX];
        uint64_t samples, sample_thread_errors, cgroups_gone;
        MetricsOutput *metric_outputs; /* one per sink, allocated once */
        usec_t metrics_complaint_us;
};

/* Rewrites the metrics file after a counter changed (no timer: an idle agent stays idle). */
static void agent_metrics_update(Agent *a) {
        char why[160];
        int r;

        if (!a->config->metrics_file || !a->metric_outputs)
                return;
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
                                  .triggers_configured = a->triggers_configured,
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

static void trigger_close(Agent *a, Trigger *t) {
        /* Stop the watcher before closing the fd it watches. */
        if (t->epoll_fd >= 0) {
                ev_io_stop(a->loop, &t->io);
                a->armed--;
        }
        t->epoll_fd = safe_close(t->epoll_fd);
        t->fd = safe_close(t->fd);
}

static void on_exit_record(const TaskStats *ts, void *userdata) {
        ExitRecords *e = userdata;

        if (exit_records_add(e, ts) < 0)
                e->lost++;
}

static void watch_drain_exits(Watch *w) {
        int r;

        if (!w->exit_listener)
                return;
        r = taskstats_exit_listener_drain(w->exit_listener, on_exit_record, &w->exits, &w->exits.lost);
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

static void watch_finish_sample(Watch *w) {
        Agent *a = w->agent;
        SampleScope scope = watch_scope(w);
        Trigger *t = w->fired;

        scope.walk_cgroups = true;
        scope.cgroups_resource = t->effective.resource;
        _cleanup_free_ char *line = NULL;
        char id[96];
        size_t len;
        int r;

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
                                      .trigger_cgroup = w->cfg->cgroup,
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
                                      .scope_cgroup = w->cfg->cgroup,
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
                /* Never treat ERR as a firing: it stays set, and would loop. */
                trigger_close(a, t);
                if (!w->gone) {
                        log_warning("cgroup %s was removed: its triggers are closed", w->name);
                        a->cgroups_gone++;
                }
                w->gone = true;
                watch_drop_sample(w, "cgroup removed");
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
        }
        else if (verdict == WAKEUP_SAMPLE && !rate_limit_admit(&a->rate, now_usec(CLOCK_MONOTONIC))) {
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

static void on_stop_signal(struct ev_loop *loop, ev_signal *sig, int revents) {
        Agent *a = sig->data;

        log_info("received %s, stopping", strsignal(sig->signum));
        for (size_t i = 0; i < a->n_watches; i++)
                watch_drop_sample(&a->watches[i], "stopping");
        ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *sig, int revents) {
        Agent *a = sig->data;

        for (size_t i = 0; i < a->n_sinks; i++) {
                int r;

                if (strcmp(a->sinks[i]->path, "-") == 0)
                        continue;
                char why[160];

                r = output_reopen(a->sinks[i], why, sizeof why);
                if (r < 0)
                        log_error_errno(r, "cannot reopen %s (%s); still writing to the old file", a->sinks[i]->path, why);
                else
                        log_info("reopened %s", a->sinks[i]->path);
        }
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

static int watch_arm(Agent *a, Watch *w) {
        bool cgroup = w->cfg->cgroup != NULL;
        int dirfd, r;

        if (cgroup) {
                r = fd_take(a, 1);
                if (r >= 0)
                        r = sysroot_open_cgroup(a->rt.sysroot, w->cfg->cgroup, &w->cgroup_fd);
                if (r < 0 && out_of_fds(a, r, w->n_triggers))
                        return 0;
                if (r < 0) {
                        log_warning_errno(r, "cannot open cgroup %s under %s; its watch stays inactive", w->name,
                                          a->rt.sysroot->cgroup2_path ? a->rt.sysroot->cgroup2_path : "(no cgroup2)");
                        return 0;
                }
                dirfd = w->cgroup_fd;
        } else {
                dirfd = a->rt.sysroot->pressure_fd;
                if (dirfd < 0)
                        return 0;
        }

        for (size_t i = 0; i < w->n_triggers; i++) {
                Trigger *t = &w->triggers[i];
                const char *file = pressure_file_name(t->cfg->spec.resource, cgroup);
                PressureStats ps;

                if (psi_trigger_spec_effective(&t->cfg->spec, a->rt.privileged, &t->effective) > 0) {
                        char buf[96];
                        log_warning("trigger \"%s\" on %s: without CAP_SYS_RESOURCE the kernel accepts only windows "
                                    "that are multiples of 2s; armed as \"%s\"",
                                    t->cfg->text, w->name, psi_trigger_spec_format(&t->effective, buf, sizeof buf));
                }
                r = fd_take(a, 2); /* the trigger and its epoll instance */
                if (r >= 0)
                        r = psi_trigger_open(dirfd, file, &t->effective, &t->fd);
                if (r < 0) {
                        t->fd = -EBADF;
                        if (out_of_fds(a, r, 1))
                                continue;
                        if (r == -EOPNOTSUPP)
                                log_error("cannot arm \"%s\" on %s: PSI is disabled for it (psi=0, or "
                                          "cgroup.pressure=0)", t->cfg->text, w->name);
                        else
                                log_error_errno(r, "cannot arm \"%s\" on %s (%s)", t->cfg->text, w->name, file);
                        continue;
                }
                if (pressure_read_fd(t->fd, &ps) >= 0 && ps.has[t->effective.stall])
                        t->total = (TriggerTotal) { .known = true, .total_us = ps.line[t->effective.stall].total_us };
                r = psi_watch_new(t->fd, EPOLLPRI, &t->epoll_fd);
                if (r < 0) {
                        if (!out_of_fds(a, r, 1))
                                log_error_errno(r, "cannot watch the trigger fd of \"%s\" on %s", t->cfg->text, w->name);
                        t->fd = safe_close(t->fd);
                        continue;
                }
                ev_io_init(&t->io, on_trigger_io, t->epoll_fd, EV_READ);
                t->io.data = t;
                ev_io_start(a->loop, &t->io);
                a->armed++;
                log_debug("armed \"%s\" on %s", t->cfg->text, w->name);
        }
        return 0;
}

static void agent_free(Agent *a) {
        for (size_t i = 0; i < a->n_watches; i++) {
                Watch *w = &a->watches[i];

                if (a->loop)
                        ev_timer_stop(a->loop, &w->timer);
                for (size_t j = 0; j < w->n_triggers; j++)
                        trigger_close(a, &w->triggers[j]);
                free(w->triggers);
                safe_close(w->cgroup_fd);
                snapshot_done(&w->a);
                snapshot_done(&w->b);
                ranking_done(&w->ranking);
                hot_cgroups_done(&w->hot);
                watch_stop_exits(w);
                exit_records_done(&w->exits);
        }
        free(a->watches);
        free(a->procs);
        if (a->loop) {
                ev_signal_stop(a->loop, &a->sig_int);
                ev_signal_stop(a->loop, &a->sig_term);
                ev_signal_stop(a->loop, &a->sig_hup);
        }
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
        Agent agent = {}, *a = &agent;
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
        a->watches = calloc(a->config->n_watches, sizeof *a->watches);
        unsigned top = 1;
        for (size_t i = 0; i < a->config->n_watches; i++)
                top = MAX(top, a->config->watches[i].top);
        a->procs = calloc(top, sizeof *a->procs);
        if (!a->watches || !a->procs) {
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

        a->fd_budget = fd_budget();
        for (size_t i = 0; i < a->config->n_watches; i++) {
                Watch *w = &a->watches[i];

                a->n_watches++;
                w->agent = a;
                w->cfg = &a->config->watches[i];
                w->name = w->cfg->cgroup ? (w->cfg->cgroup[0] ? w->cfg->cgroup : "/") : "node";
                w->cgroup_fd = -EBADF;
                w->timing.cooldown_us = w->cfg->cooldown_ms * USEC_PER_MSEC;
                ev_timer_init(&w->timer, on_sample_timer, 0., 0.);
                w->timer.data = w;
                w->triggers = calloc(w->cfg->n_triggers, sizeof *w->triggers);
                if (!w->triggers) {
                        log_error("out of memory");
                        goto finish;
                }
                for (size_t j = 0; j < w->cfg->n_triggers; j++) {
                        w->triggers[j] = (Trigger) {
                                .watch = w,
                                .cfg = &w->cfg->triggers[j],
                                .fd = -EBADF,
                                .epoll_fd = -EBADF,
                        };
                        w->n_triggers++;
                }
                char why[160] = "out of memory";

                r = agent_get_sink(a, w->cfg->output, &w->sink, why, sizeof why);
                if (r < 0) {
                        log_error_errno(r, "cannot open output %s: %s", w->cfg->output, why);
                        goto finish;
                }
                watch_arm(a, w);
                if (w->n_triggers > 0 && (w->cgroup_fd >= 0 || !w->cfg->cgroup))
                        watch_preallocate(w);
        }
        if (a->fd_starved > 0)
                log_error("%u of %u triggers are not armed: out of file descriptors (see above)", a->fd_starved,
                          a->fd_starved + a->armed);
        if (a->armed == 0) {
                log_error("no trigger could be armed; nothing to watch");
                goto finish;
        }
        a->start_time_s = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;
        for (size_t i = 0; i < a->n_watches; i++)
                a->triggers_configured += (unsigned) a->watches[i].n_triggers;
        if (a->config->metrics_file) {
                a->metric_outputs = calloc(a->n_sinks, sizeof *a->metric_outputs);
                if (!a->metric_outputs) {
                        log_error("out of memory");
                        goto finish;
                }
                agent_metrics_update(a);
        }
        log_info("watching: %u trigger%s armed on %zu watch%s", a->armed, a->armed == 1 ? "" : "s", a->n_watches,
                 a->n_watches == 1 ? "" : "es");

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
