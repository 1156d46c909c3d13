/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/discovery.h"
#include "agent/health.h"
#include "agent/options.h"
#include "agent/pools.h"
#include "agent/prekillhook.h"
#include "agent/reload.h"
#include "agent/sample.h"
#include "agent/watchtrigger.h"
#include "agent/watch.h"
#include "base/log.h"
#include "config/target.h"
#include "base/macro.h"

static void reopen_outputs(Agent *a) {
        for (size_t i = 0; i < a->n_sinks; i++) {
                char why[160];
                int r;

                if (!sink_can_reopen(a->sinks[i]))
                        continue;
                r = sink_reopen(a->sinks[i], why, sizeof why);
                if (r < 0)
                        log_error_errno(r, "cannot reopen %s (%s); still writing to the old file", a->sinks[i]->path,
                                        why);
                else
                        log_info("reopened %s", a->sinks[i]->path);
        }
}

const WatchConfig *reload_match_watch(const Config *old, const WatchConfig *ow, const Config *nc) {
        size_t occurrence = 0, seen = 0;

        for (size_t i = 0; i < old->n_watches && &old->watches[i] != ow; i++)
                if (config_target_same(&old->watches[i], ow))
                        occurrence++;
        for (size_t i = 0; i < nc->n_watches; i++) {
                const WatchConfig *nw = &nc->watches[i];
                if (!config_target_same(nw, ow))
                        continue;
                if (seen++ == occurrence)
                        return nw;
        }
        return NULL;
}

/* SIGHUP: reopen the outputs (logrotate), then reload the config file. A bad config is refused
 * and the running one kept. Triggers whose cgroup and text did not change stay armed (same fds: no
 * gap and no spurious first event); others are closed or armed. */
void reload_config(Agent *a) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(config_freep) Config *nc = NULL;
        Config *old = a->config;
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
        if (r >= 0)
                r = runtime_check_outputs(nc, a->opts->config_path, &error);
        if (r < 0) {
                log_error("reload refused, the running config is kept: %s", error ? error : strerror(-r));
                return;
        }
        unsigned top = 1;
        for (size_t i = 0; i < nc->n_watches; i++)
                top = MAX(top, nc->watches[i].top);
        bool *warned = calloc(nc->n_watches ? nc->n_watches : 1, sizeof *warned);
        ProcessInfo *procs = top > a->top_max ? calloc((size_t) top * 2, sizeof *procs) : NULL;
        RateLimit rate = {};
        if (!warned || (top > a->top_max && !procs) ||
            (nc->max_incidents_per_minute != old->max_incidents_per_minute &&
             rate_limit_init(&rate, nc->max_incidents_per_minute) < 0)) {
                log_error("reload refused, the running config is kept: out of memory");
                free(warned);
                free(procs);
                return;
        }

        /* Rebind what stays, close what goes. */
        armed_before = a->armed;
        for (size_t i = 0; i < a->n_watches;) {
                Watch *w = a->watches[i];
                const WatchConfig *nw = reload_match_watch(old, w->cfg, nc);
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
                                        sample_drop(w, "its trigger was removed by a reload");
                                trigger_free(a, t);
                                closed++;
                        }
                }
                free(w->triggers);
                w->triggers = triggers;
                w->n_triggers = keep;
                int cgroup_fd = -EBADF;
                bool opened = false;
                for (size_t k = 0; k < nw->n_triggers; k++) {
                        bool have = false;
                        for (size_t m = 0; m < keep; m++)
                                have = have || triggers[m]->cfg == &nw->triggers[k];
                        if (have)
                                continue;
                        if (!opened) {
                                opened = true;
                                r = core_watch_open_cgroup(w, &cgroup_fd);
                                if (r < 0 && r != -EMFILE && r != -ENFILE && !cgroup_is_gone(r))
                                        log_warning_errno(r, "cannot open cgroup %s", w->name);
                        }
                        if (w->path && cgroup_fd < 0) {
                                /* Gone: the watch goes when its removal is noticed. Out of fds: counted. */
                                (void) fd_budget_starved(&a->fds, r, 1);
                                continue;
                        }
                        Trigger *t = trigger_arm(a, w, cgroup_fd, &nw->triggers[k]);
                        if (t)
                                w->triggers[w->n_triggers++] = t;
                }
                cgroup_fd = safe_close(cgroup_fd);
                i++;
        }
        a->config = TAKE_PTR(nc);
        if (pools_onwhat_reserve(a, a->config->max_concurrent_samples) < 0)
                log_warning("out of memory: some incidents will go without \"limits\" and \"blocked\"");
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_set_format(a->sinks[i], core_sink_format(a));
        a->history.lookback_us =
                (usec_t) a->config->oom_lookback_s * USEC_PER_SEC; /* older entries go at the next add */
        discovery_take_warned(a, warned);
        if (procs) {
                free(a->procs.items);
                a->procs = (ProcessInfoBuffer) { .items = procs, .cap = (size_t) top * 2 };
                a->top_max = top;
        }
        if (a->config->max_incidents_per_minute != old->max_incidents_per_minute) {
                rate_limit_done(&a->rate);
                a->rate = rate;
        }
        /* A socket path changed, or its directory made since: serve it now. A hook that is served
         * at the same path goes on (its measures in flight with it). */
        if (!a->prekill || strcmp(old->prekill_socket, a->config->prekill_socket) != 0) {
                prekill_stop(a);
                prekill_start(a);
        }
        config_free(old);
        discovery_run(a);
        health_update(a);
        /* armed now = armed before - closed + new */
        log_info("reloaded %s: %u triggers armed on %zu watches (%u kept, %u closed, %u new)", a->opts->config_path,
                 a->armed, a->n_watches, kept, closed, a->armed + closed - armed_before);
}
