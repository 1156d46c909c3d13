/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/core.h"
#include "agent/discovery.h"
#include "agent/health.h"
#include "agent/killwatch.h"
#include "agent/pools.h"
#include "agent/recording.h"
#include "agent/sample.h"
#include "agent/stall.h"
#include "agent/oom.h"
#include "agent/oomwatch.h"
#include "agent/prekillhook.h"
#include "agent/reload.h"
#include "agent/watch.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/fileio.h"
#include "config/target.h"

static void on_stop_signal(struct ev_loop *loop, ev_signal *sig, int revents) {
        Agent *a = ASSERT_PTR(sig->data);

        log_info("received %s, stopping", strsignal(sig->signum));
        for (size_t i = 0; i < a->n_watches; i++)
                sample_drop(a->watches[i], "stopping");
        ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *sig, int revents) {
        reload_config(ASSERT_PTR(sig->data));
}

static void on_quiet(struct ev_loop *loop, ev_periodic *p, int revents) {
}

static void agent_free(Agent *a) {
        size_t closing = a->armed;
        usec_t start = now_usec(CLOCK_MONOTONIC);

        prekill_stop(a);
        oom_stop(a);
        oomwatch_stop(a);
        kills_stop(a);
        recording_stop(a);
        while (a->n_watches > 0)
                watch_remove(a, a->watches[a->n_watches - 1]);
        pools_stop(a);
        /* The kernel would close what is left one by one at exit, a grace period each: close the
         * triggers here, all at once, and wait for them. */
        if (a->loop && a->psi)
                ev_io_stop(a->loop, &a->psi_io);
        a->psi = psi_set_free(a->psi);
        a->closer = closer_free(a->closer);
        if (closing > 0)
                log_debug("closed %zu triggers in %llu ms", closing,
                          (unsigned long long) ((now_usec(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC));
        free(a->watches);
        free(a->procs.items);
        if (a->loop) {
                ev_signal_stop(a->loop, &a->sig_int);
                ev_signal_stop(a->loop, &a->sig_term);
                ev_signal_stop(a->loop, &a->sig_hup);
                ev_periodic_stop(a->loop, &a->quiet);
        }
        discovery_stop(a);
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_free(a->sinks[i]);
        free(a->sinks);
        health_stop(a);
        counters_done(&a->counters);
        config_free(a->config);
        rate_limit_done(&a->rate);
        history_done(&a->history);
        runtime_close(&a->rt);
        if (a->loop)
                ev_loop_destroy(a->loop);
}

/* The config file, or the embedded default. Logs why it cannot be had. */
static int agent_load_config(const AgentOptions *opts, Config **ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        if (opts->config_path)
                r = config_load_file(opts->config_path, ret, &error);
        else
                r = config_load_default(ret);
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "cannot load the config");
        }
        return r;
}

/* --output in place of the config's outputs. */
static int agent_override_output(Agent *a) {
        if (a->opts->output && config_override_output(a->config, a->opts->output) < 0)
                return log_oom();
        return 0;
}

/* The config's cgroups resolved and its outputs checked on this host: -EINVAL or -EOPNOTSUPP when
 * the host refuses the config. Logged. */
static int agent_resolve_config(Agent *a) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = config_resolve_cgroups(a->config, a->rt.sysroot, &error);
        if (r >= 0)
                r = runtime_check_outputs(a->config, a->opts->config_path, &error);
        if (r < 0)
                log_error("%s", error ? error : "out of memory");
        return r;
}

/* What the incidents are counted and related with: the rate limit and the history. */
static int agent_init_state(Agent *a) {
        runtime_protect_self(&a->rt);
        runtime_raise_fd_limit();
        if (rate_limit_init(&a->rate, a->config->max_incidents_per_minute) < 0 ||
            history_init(&a->history, (usec_t) a->config->oom_lookback_s * USEC_PER_SEC) < 0)
                return log_oom();
        return 0;
}

/* The event loop, the trigger set on it, the modules the triggers need. */
static int agent_open_loop(Agent *a) {
        int r;

        /* A closed pipe or a file size limit on the output must be an error we count (EPIPE, EFBIG),
         * not a signal that kills us. */
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);

        a->loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
        if (!a->loop) {
                log_error("cannot create the event loop");
                return -ENOMEM;
        }
        r = closer_new(CLOSER_THREADS_MAX, NULL, &a->closer);
        if (r >= 0)
                r = psi_set_new(&a->psi);
        if (r < 0)
                return log_error_errno(r, "cannot set up the trigger set");
        if (health_start(a) < 0 || pools_start(a) < 0 || oom_start(a) < 0)
                return log_oom();
        ev_io_init(&a->psi_io, watch_on_trigger_set, psi_set_notify_fd(a->psi), EV_READ);
        a->psi_io.data = a;
        ev_io_start(a->loop, &a->psi_io);
        return 0;
}

/* The buffer a sample's most delayed and culprits go in, as long as the largest "top" needs. */
static int agent_alloc_procs(Agent *a) {
        a->top_max = 1;
        for (size_t i = 0; i < a->config->n_watches; i++)
                a->top_max = MAX(a->top_max, a->config->watches[i].top);
        a->procs.cap = process_info_buffer_cap(a->top_max); /* most delayed, culprits */
        a->procs.items = calloc(a->procs.cap, sizeof *a->procs.items);
        if (!a->procs.items)
                return log_oom();
        return 0;
}

static void agent_start_signals(Agent *a) {
        /* Signals first: libev opens its own descriptors for them, which must not be the ones the
         * triggers used up. */
        ev_signal_init(&a->sig_int, on_stop_signal, SIGINT);
        ev_signal_init(&a->sig_term, on_stop_signal, SIGTERM);
        ev_signal_init(&a->sig_hup, on_sighup, SIGHUP);
        a->sig_int.data = a->sig_term.data = a->sig_hup.data = a;
        ev_signal_start(a->loop, &a->sig_int);
        ev_signal_start(a->loop, &a->sig_term);
        ev_signal_start(a->loop, &a->sig_hup);
}

/* Some watch follows cgroups that are yet to appear: an agent with nothing armed still has work. */
static bool agent_waits_for_cgroups(Agent *a) {
        bool waiting = false;

        for (size_t i = 0; i < a->config->n_watches; i++)
                waiting =
                        waiting || (!config_target_is_node(&a->config->watches[i]) && discovery_follows_new_cgroups(a));
        return waiting;
}

/* Finds the watched cgroups and arms their triggers: -ENOENT (logged) when nothing can be watched. */
static int agent_arm(Agent *a) {
        if (discovery_start(a) < 0)
                return log_oom();

        /* libev caps every wait at MAX_BLOCKTIME (59.743 s) to notice clock jumps, unless it watches
         * the clock with a timerfd, which it starts doing once a periodic watcher exists. This one
         * is due in ten years and never fires; with it an idle agent's epoll_wait blocks for up to
         * 1,500,001 s instead of waking every minute for nothing (seen with strace). */
        ev_periodic_init(&a->quiet, on_quiet, ev_now(a->loop) + 10.0 * 365 * 86400, 0., 0);
        ev_periodic_start(a->loop, &a->quiet);

        /* recording_admit() lets as many watches record at once as samples may run. */
        fd_budget_init(&a->fds,
                       fd_budget_reserve(a->config->max_concurrent_samples + OOM_SAMPLING_MAX,
                                         a->config->record_s > 0 ? a->config->max_concurrent_samples : 0),
                       a->closer);
        if (pools_onwhat_reserve(a, a->config->max_concurrent_samples) < 0)
                log_warning("out of memory: some incidents will go without \"limits\" and \"blocked\"");
        discovery_run(a);
        if (a->fds.starved > 0)
                log_error("%u of %u triggers are not armed: out of file descriptors (see above)", a->fds.starved,
                          a->fds.starved + a->armed);
        if (a->armed == 0 && !agent_waits_for_cgroups(a)) {
                log_error("no trigger could be armed; nothing to watch");
                return -ENOENT;
        }
        return 0;
}

/* The modules that follow what the triggers report: ooms, kills, recordings, the prekill hook. */
static void agent_start_followers(Agent *a) {
        oomwatch_start(a);
        if (kills_start(a) < 0)
                log_warning("out of memory: kill incidents are not reported");
        if (recording_start(a, stall_trigger_fired) < 0)
                log_warning("out of memory: watches are not recorded; incidents cover the second after the wakeup");
        prekill_start(a);
        a->counters.start_time_s = now_usec(CLOCK_REALTIME) / USEC_PER_SEC;
        health_update(a);
        log_info("watching: %u trigger%s armed on %zu watch%s", a->armed, a->armed == 1 ? "" : "s", a->n_watches,
                 a->n_watches == 1 ? "" : "es");
        a->started = true;
}

/* Brings a up to its loop. Returns 0, or the exit code of the failure (logged): 2 for a config this
 * host refuses, else 1. */
static int agent_start(Agent *a) {
        int r;

        if (agent_override_output(a) < 0 || runtime_open(&a->rt, a->opts->enable_delayacct) < 0)
                return 1;
        r = agent_resolve_config(a);
        if (r < 0)
                return r == -EINVAL || r == -EOPNOTSUPP ? 2 : 1;
        if (agent_init_state(a) < 0 || agent_open_loop(a) < 0 || agent_alloc_procs(a) < 0)
                return 1;
        agent_start_signals(a);
        if (agent_arm(a) < 0)
                return 1;
        agent_start_followers(a);
        return 0;
}

/* Runs the loop until a stop signal, then says what each output took. */
static void agent_loop(Agent *a) {
        ev_run(a->loop, 0);
        health_update(a);
        for (size_t i = 0; i < a->n_sinks; i++) {
                Sink *o = a->sinks[i];
                log_info("%s: %llu incident%s written, %llu lost", o->name, (unsigned long long) o->written,
                         o->written == 1 ? "" : "s", (unsigned long long) o->failed);
        }
}

int agent_run(const AgentOptions *opts) {
        _cleanup_(config_freep) Config *config = NULL;
        int r, exit_code;

        r = agent_load_config(opts, &config);
        if (r < 0)
                return r == -ENOMEM ? 1 : 2;

        _cleanup_(agent_free) Agent agent = {
                .opts = opts,
                .config = TAKE_PTR(config),
                .rate_warned.interval_us = 60 * USEC_PER_SEC,
        };
        exit_code = agent_start(&agent);
        if (exit_code == 0)
                agent_loop(&agent);
        return exit_code;
}
