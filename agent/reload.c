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

/* The config file again, with --output, its cgroups resolved and outputs checked: refused (logged)
 * when any of that fails. */
static int reload_load(Agent *a, Config **ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = config_load_file(a->opts->config_path, ret, &error);
        if (r >= 0 && a->opts->output)
                r = config_override_output(*ret, a->opts->output);
        if (r >= 0)
                r = config_resolve_cgroups(*ret, a->rt.sysroot, &error);
        if (r >= 0)
                r = runtime_check_outputs(*ret, a->opts->config_path, &error);
        if (r < 0)
                log_error("reload refused, the running config is kept: %s", error ? error : strerror(-r));
        return r;
}

/* The memory a reload needs, taken before anything changes so that nothing fails halfway. */
typedef struct ReloadSpare {
        bool *warned;
        ProcessInfo *procs; /* NULL unless the new config's largest top outgrows a->procs */
        unsigned top;
        RateLimit rate; /* set up when max_incidents_per_minute changes */
} ReloadSpare;

/* What nc needs memory for into *ret; refused (logged) without it. */
static int reload_reserve(Agent *a, const Config *nc, ReloadSpare *ret) {
        const Config *old = a->config;
        ReloadSpare s = { .top = 1 };

        for (size_t i = 0; i < nc->n_watches; i++)
                s.top = MAX(s.top, nc->watches[i].top);
        s.warned = calloc(nc->n_watches ? nc->n_watches : 1, sizeof *s.warned);
        s.procs = s.top > a->top_max ? calloc(process_info_buffer_cap(s.top), sizeof *s.procs) : NULL;
        if (!s.warned || (s.top > a->top_max && !s.procs) ||
            (nc->max_incidents_per_minute != old->max_incidents_per_minute &&
             rate_limit_init(&s.rate, nc->max_incidents_per_minute) < 0)) {
                log_error("reload refused, the running config is kept: out of memory");
                free(s.warned);
                free(s.procs);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

typedef struct ReloadCounts {
        unsigned kept, closed;
} ReloadCounts;

/* nt is the config of one of triggers[0..n). */
static bool reload_trigger_taken(Trigger *const *triggers, size_t n, const WatchTrigger *nt) {
        for (size_t m = 0; m < n; m++)
                if (triggers[m]->cfg == nt)
                        return true;
        return false;
}

/* w's triggers whose text nw still has into triggers, rebound to nw's (each of nw's taken once);
 * the others closed. Returns how many stay. */
static size_t reload_keep_triggers(Agent *a, Watch *w, const WatchConfig *nw, Trigger **triggers,
                                   ReloadCounts *counts) {
        size_t keep = 0;

        for (size_t j = 0; j < w->n_triggers; j++) {
                Trigger *t = w->triggers[j];
                const WatchTrigger *nt = NULL;

                for (size_t k = 0; k < nw->n_triggers && !nt; k++)
                        if (!reload_trigger_taken(triggers, keep, &nw->triggers[k]) &&
                            strcmp(nw->triggers[k].text, t->cfg->text) == 0)
                                nt = &nw->triggers[k];
                if (nt) {
                        t->cfg = nt;
                        triggers[keep++] = t;
                        counts->kept++;
                } else {
                        if (w->timing.sampling && w->fired == t)
                                sample_drop(w, "its trigger was removed by a reload");
                        trigger_free(a, t);
                        counts->closed++;
                }
        }
        return keep;
}

/* Arms nw's triggers that w's kept ones are not, after them in w->triggers (sized for all of nw's),
 * on the cgroup opened once. */
static void reload_arm_new(Agent *a, Watch *w, const WatchConfig *nw) {
        size_t keep = w->n_triggers;
        int cgroup_fd = -EBADF, r = 0;
        bool opened = false;

        for (size_t k = 0; k < nw->n_triggers; k++) {
                if (reload_trigger_taken(w->triggers, keep, &nw->triggers[k]))
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
}

/* w onto nw (NULL: w is gone from the new config): its unchanged triggers kept, the others closed,
 * the new ones armed. False when w was removed instead (gone, or out of memory). */
static bool reload_rebind_watch(Agent *a, Watch *w, const WatchConfig *nw, ReloadCounts *counts) {
        Trigger **triggers = NULL;

        if (nw && watch_set_config(a, w, nw) >= 0)
                triggers = calloc(nw->n_triggers, sizeof *triggers);
        if (!triggers) {
                counts->closed += (unsigned) w->n_triggers;
                watch_remove(a, w);
                return false;
        }
        size_t keep = reload_keep_triggers(a, w, nw, triggers, counts);
        free(w->triggers);
        w->triggers = triggers;
        w->n_triggers = keep;
        reload_arm_new(a, w, nw);
        return true;
}

/* Rebind what stays, close what goes. */
static void reload_rebind(Agent *a, const Config *nc, ReloadCounts *counts) {
        for (size_t i = 0; i < a->n_watches;) {
                Watch *w = a->watches[i];

                if (reload_rebind_watch(a, w, reload_match_watch(a->config, w->cfg, nc), counts))
                        i++;
        }
}

/* nc in place of the running config, with what reload_reserve() took for it; the old one freed and
 * the cgroups it did not follow looked for. */
static void reload_adopt(Agent *a, Config *nc, ReloadSpare *spare) {
        Config *old = a->config;

        a->config = nc;
        if (pools_onwhat_reserve(a, a->config->max_concurrent_samples) < 0)
                log_warning("out of memory: some incidents will go without \"limits\" and \"blocked\"");
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_set_format(a->sinks[i], core_sink_format(a));
        a->history.lookback_us =
                (usec_t) a->config->oom_lookback_s * USEC_PER_SEC; /* older entries go at the next add */
        discovery_take_warned(a, spare->warned);
        if (spare->procs) {
                free(a->procs.items);
                a->procs = (ProcessInfoBuffer) { .items = spare->procs, .cap = process_info_buffer_cap(spare->top) };
                a->top_max = spare->top;
        }
        if (a->config->max_incidents_per_minute != old->max_incidents_per_minute) {
                rate_limit_done(&a->rate);
                a->rate = spare->rate;
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
}

/* SIGHUP: reopen the outputs (logrotate), then reload the config file. A bad config is refused
 * and the running one kept. Triggers whose cgroup and text did not change stay armed (same fds: no
 * gap and no spurious first event); others are closed or armed. */
void reload_config(Agent *a) {
        _cleanup_(config_freep) Config *nc = NULL;
        ReloadSpare spare = {};
        ReloadCounts counts = {};
        unsigned armed_before;

        reopen_outputs(a);
        if (!a->opts->config_path) {
                log_info("no config file to reload (the embedded default is in use)");
                return;
        }
        if (reload_load(a, &nc) < 0 || reload_reserve(a, nc, &spare) < 0)
                return;
        armed_before = a->armed;
        reload_rebind(a, nc, &counts);
        reload_adopt(a, TAKE_PTR(nc), &spare);
        /* armed now = armed before - closed + new */
        log_info("reloaded %s: %u triggers armed on %zu watches (%u kept, %u closed, %u new)", a->opts->config_path,
                 a->armed, a->n_watches, counts.kept, counts.closed, a->armed + counts.closed - armed_before);
}
