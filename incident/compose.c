/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "base/macro.h"
#include "incident/compose.h"
#include "probes/cgmeta.h"
#include "probes/procfs.h"
#include "probes/system.h"

void process_info_read(int proc_fd, pid_t pid, const char *fallback_comm, ProcessInfo *ret) {
        ssize_t n;
        uid_t uid;

        n = proc_read_comm(proc_fd, pid, ret->comm, sizeof ret->comm);
        if (n >= 0)
                ret->comm_len = (size_t) n;
        else {
                snprintf(ret->comm, sizeof ret->comm, "%s", fallback_comm);
                ret->comm_len = strlen(ret->comm);
        }
        ret->cmdline_len = proc_read_cmdline(proc_fd, pid, ret->cmdline, sizeof ret->cmdline);
        if (ret->cmdline_len < 0)
                ret->cmdline_len = -1;
        ret->uid = proc_read_uid(proc_fd, pid, &uid) >= 0 ? (int64_t) uid : -1;
        ret->has_cgroup = proc_read_cgroup(proc_fd, pid, ret->cgroup, sizeof ret->cgroup) >= 0;
}

static const char *leader_comm(const Ranking *rk, const ProcessDelta *p) {
        if (p->comm[0])
                return p->comm;
        for (size_t i = 0; i < p->n; i++)
                if (rk->threads[p->first + i].tid == p->tgid)
                        return rk->threads[p->first + i].comm;
        return p->n > 0 ? rk->threads[p->first].comm : "";
}

/* What is known of a process that ended during the sample: its exit record, and the cgroup of
 * its parent for one placed by it. Its pid may already be another process's: /proc is not read
 * for it. */
static void ended_info(int proc_fd, const char *comm, int64_t uid, pid_t placed_by, ProcessInfo *ret) {
        snprintf(ret->comm, sizeof ret->comm, "%s", comm);
        ret->comm_len = strlen(ret->comm);
        ret->cmdline_len = -1;
        ret->uid = uid;
        ret->has_cgroup = placed_by > 0 && proc_read_cgroup(proc_fd, placed_by, ret->cgroup, sizeof ret->cgroup) >= 0;
}

static void ended_process_info(int proc_fd, const ProcessDelta *p, ProcessInfo *ret) {
        ended_info(proc_fd, p->comm, p->uid, p->origin == PROCESS_SHORT ? p->ppid : 0, ret);
}

static bool pressure_total(const Snapshot *s, PsiResource res, PsiStall stall, uint64_t *ret) {
        if (res < 0 || (size_t) res >= SAMPLE_PRESSURE_RESOURCES || !s->has_pressure[res] ||
            !s->pressure[res].has[stall])
                return false;
        *ret = s->pressure[res].line[stall].total_us;
        return true;
}

int report_build(const Report *rep, json_t **ret) {
        /* Without a, one snapshot (b) stands for the whole sample and delays are lifetime totals. */
        const Snapshot *first = rep->a ? rep->a : rep->b;
        IncidentInput in = {
                .type = rep->type,
                .id = rep->id,
                .time_real_us = rep->wakeup_real_us,
                .host = rep->host,
                .agent_version = PSIDIAG_VERSION,
                .delayacct = rep->delayacct,
                .taskstats_version = rep->b->taskstats_version  ? rep->b->taskstats_version
                                     : first->taskstats_version ? first->taskstats_version
                                                                : -1,
                .has_trigger = rep->has_trigger,
                .trigger_cgroup = rep->trigger_cgroup,
                .trigger = rep->trigger,
                .trigger_spec = rep->trigger_spec,
                .pressure_from = first,
                .sample_start_real_us = first->real_us,
                .sample_duration_ms = (rep->b->mono_us - first->mono_us + USEC_PER_MSEC / 2) / USEC_PER_MSEC,
                .lifetime = !rep->a,
                .unmeasured = rep->unmeasured,
                .threads_per_process = rep->threads_per_process,
                .has_suppressed = rep->has_suppressed,
                .suppressed = rep->suppressed,
                .tasks = first->listed,
                .processes = first->processes,
                .errors = rep->a ? rep->a->errors + rep->b->errors : rep->b->errors,
                .states = first->has_states ? &first->states : NULL,
                .ranking = rep->ranking,
                .procs = rep->procs,
                .oom = rep->oom,
        };
        json_t *j;
        uint64_t before, after;
        int r;

        /* Processes listed but gone before taskstats answered, the subtree's threads whose exit
         * records were heard, and processes that ended unheard. */
        in.exited = first->exited + (rep->a ? rep->b->exit_records + rep->b->ended_unheard : 0);
        in.has_exit_listener = rep->a && rep->b->has_exit_listener;
        in.exit_records = rep->b->exit_records;
        in.lost_exit_records = rep->b->lost_exit_records;
        in.unattributed = rep->b->unattributed;
        memcpy(in.unattributed_ns, rep->b->unattributed_ns, sizeof in.unattributed_ns);
        in.unattributed_present = rep->b->unattributed_present | rep->ranking->present;
        if (rep->threads_base && rep->b->threads_mono_us >= rep->threads_base->threads_mono_us) {
                in.has_threads_ms = true;
                in.threads_ms = (rep->b->threads_mono_us - rep->threads_base->threads_mono_us + USEC_PER_MSEC / 2) /
                                USEC_PER_MSEC;
        }

        if (rep->a && rep->has_stall && pressure_total(rep->a, (PsiResource) rep->resource, rep->stall, &before) &&
            pressure_total(rep->b, (PsiResource) rep->resource, rep->stall, &after)) {
                in.has_stall = true;
                in.stall_us = after >= before ? after - before : 0;
        }

        if (rep->hot && first->has_cgroups && rep->b->has_cgroups) {
                r = hot_cgroups_build(rep->hot, rep->a ? &rep->a->cgroups : NULL, &rep->b->cgroups,
                                      rep->has_stall ? rep->stall : PSI_STALL_SOME, HOT_CGROUPS_MAX);
                if (r < 0)
                        return r;
                in.has_hot = true;
                in.hot = rep->hot->items;
                in.n_hot = rep->hot->n;
                in.hot_prefix = rep->scope_cgroup;
        }

        in.n_procs = MIN((size_t) rep->top, rep->ranking->n_procs);
        for (size_t i = 0; i < in.n_procs; i++) {
                const ProcessDelta *p = &rep->ranking->procs[i];
                if (p->origin != PROCESS_MEASURED)
                        ended_process_info(rep->sysroot->proc_fd, p, &rep->procs[i]);
                else
                        process_info_read(rep->sysroot->proc_fd, p->tgid, leader_comm(rep->ranking, p), &rep->procs[i]);
        }

        if (rep->culprits && rep->culprit_scope) {
                ProcessInfo *infos = rep->procs + rep->top;
                for (size_t i = 0; i < rep->culprits->n_procs && i < rep->top; i++) {
                        const CulpritProcess *p = &rep->culprits->procs[i];
                        if (p->tgid > 0 && p->origin == PROCESS_MEASURED)
                                process_info_read(rep->sysroot->proc_fd, p->tgid, p->comm, &infos[i]);
                        else
                                ended_info(rep->sysroot->proc_fd, p->comm, p->uid,
                                           p->origin == PROCESS_SHORT && !p->cgroup ? p->ppid : 0, &infos[i]);
                        if (p->tgid == 0 && p->cgroup) { /* an aggregate: its live ancestor's cgroup */
                                size_t n = cgroup_display_path(rep->culprit_scope->node ? "" : rep->culprit_scope->path,
                                                               p->cgroup, infos[i].cgroup, sizeof infos[i].cgroup);
                                infos[i].has_cgroup = n < sizeof infos[i].cgroup;
                        }
                }
                in.culprits = rep->culprits;
                in.culprit_scope = rep->culprit_scope;
                in.culprit_procs = infos;
                in.n_culprit_procs = MIN(rep->culprits->n_procs, (size_t) rep->top);
        }
        in.onwhat = rep->onwhat;

        j = incident_build(&in);
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

int report_build_line(const Report *rep, char **ret, size_t *ret_len) {
        json_t *j = NULL;
        int r = report_build(rep, &j);

        if (r < 0)
                return r;
        r = incident_dump_line(j, ret, ret_len);
        json_decref(j);
        return r;
}

int report_compose(Report *rep, uint64_t seq, char *id, size_t id_size, json_t **ret) {
        incident_format_id(rep->host, rep->wakeup_real_us, getpid(), seq, id, id_size);
        rep->id = id;
        return report_build(rep, ret);
}
