/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "agent/core.h"
#include "probes/sysroot.h"

int core_hooks_add(Agent *a, const WatchHooks *h) {
        if (a->n_hooks >= CORE_HOOKS_MAX)
                return -ENOSPC;
        a->hooks[a->n_hooks++] = *h;
        return 0;
}

void core_hooks_remove(Agent *a, void *userdata) {
        size_t k = 0;

        for (size_t i = 0; i < a->n_hooks; i++)
                if (a->hooks[i].userdata != userdata)
                        a->hooks[k++] = a->hooks[i];
        a->n_hooks = k;
}

void core_hooks_added(Agent *a, Watch *w) {
        for (size_t i = 0; i < a->n_hooks; i++)
                if (a->hooks[i].added)
                        a->hooks[i].added(w, a->hooks[i].userdata);
}

void core_hooks_removed(Agent *a, Watch *w) {
        for (size_t i = 0; i < a->n_hooks; i++)
                if (a->hooks[i].removed)
                        a->hooks[i].removed(w, a->hooks[i].userdata);
}

void core_hooks_wakeup(Agent *a, Watch *w, const Trigger *t, WakeupVerdict verdict) {
        for (size_t i = 0; i < a->n_hooks; i++)
                if (a->hooks[i].wakeup)
                        a->hooks[i].wakeup(w, t, verdict, a->hooks[i].userdata);
}

void core_hooks_incident(Agent *a, Watch *w, const Trigger *t, const char *id) {
        for (size_t i = 0; i < a->n_hooks; i++)
                if (a->hooks[i].incident)
                        a->hooks[i].incident(w, t, id, a->hooks[i].userdata);
}

int core_watch_open_cgroup(const Watch *w, int *ret_fd) {
        *ret_fd = -EBADF;
        if (!w->path)
                return 0;
        return sysroot_open_cgroup(w->agent->rt.sysroot, w->path, ret_fd);
}

SampleScope core_sample_scope(Agent *a, int cgroup_fd, const char *path, PsiResource res, unsigned detail) {
        const SampleOwner owner = {
                .sysroot = a->rt.sysroot,
                .taskstats = a->rt.taskstats,
                .identities = &a->procs,
                .containers = a->rt.containers,
        };

        return sample_scope_make(&owner, cgroup_fd, path, (int) res, detail);
}

SampleScope core_watch_scope(Watch *w, int cgroup_fd, PsiResource res, CulpritScope *culprit) {
        SampleScope scope = core_sample_scope(w->agent, cgroup_fd, w->path, res, w->cfg->top);

        scope.culprit = culprit;
        /* "On what": the limit behind the stall, read at both ends (and with every recorded entry). */
        scope.limits = w->agent->rt.limits;
        scope.limits_cgroup = w->path;
        scope.limits_resource = res;
        return scope;
}

bool core_watch_culprit(const Watch *w, PsiResource res, CulpritScope *ret) {
        const LimitsHierarchy *h = w->agent->rt.limits;

        return h && culprit_scope_open(h, w->path, res, ret) >= 0;
}

SinkFormat core_sink_format(const Agent *a) {
        return a->config->output_format == CONFIG_OUTPUT_FORMAT_OTLP ? SINK_FORMAT_OTLP : SINK_FORMAT_INCIDENT;
}
