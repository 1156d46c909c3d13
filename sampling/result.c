/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "containers/cgmeta.h"
#include "probes/procfs.h"
#include "sampling/result.h"

/* The name of a process /proc did not give (error n): the caller's, else taskstats' ac_comm, else
 * "?", with why in ret->unreadable. */
static void comm_fallback(TaskstatsSource *ts, pid_t pid, ssize_t n, const char *fallback, ProcessInfo *ret) {
        TaskStats st;
        int r = -ENOSYS;

        if (n == -ENOENT || n == -ESRCH)
                snprintf(ret->unreadable, sizeof ret->unreadable, "it ended before its name was read");
        else
                snprintf(ret->unreadable, sizeof ret->unreadable, "/proc/%d is not readable: %s", (int) pid,
                         strerror((int) -n));
        if (fallback && fallback[0])
                snprintf(ret->comm, sizeof ret->comm, "%s", fallback);
        /* A per-pid reply carries ac_comm (a TGID one does not: kernel-facts.md: tgid-totals). */
        else if (ts && (r = taskstats_get_tid(ts, pid, &st)) >= 0 && st.comm[0])
                snprintf(ret->comm, sizeof ret->comm, "%s", st.comm);
        else
                snprintf(ret->comm, sizeof ret->comm, "?");
        ret->comm_len = strlen(ret->comm);
}

void process_info_read(int proc_fd, TaskstatsSource *ts, pid_t pid, const char *fallback_comm, ProcessInfo *ret) {
        ssize_t n;
        uid_t uid;
        int r;

        ret->unreadable[0] = '\0';
        n = proc_read_comm(proc_fd, pid, ret->comm, sizeof ret->comm);
        if (n >= 0)
                ret->comm_len = (size_t) n;
        else
                comm_fallback(ts, pid, n, fallback_comm, ret);
        ret->cmdline_len = proc_read_cmdline(proc_fd, pid, ret->cmdline, sizeof ret->cmdline);
        if (ret->cmdline_len < 0)
                ret->cmdline_len = -1;
        ret->uid = proc_read_uid(proc_fd, pid, &uid) >= 0 ? (int64_t) uid : -1;
        r = proc_read_cgroup(proc_fd, pid, ret->cgroup, sizeof ret->cgroup);
        ret->has_cgroup = r >= 0;
        /* Named, then gone before its cgroup was read (runc's short-lived children on a busy
         * node): a null cgroup says why. */
        if (r < 0 && !ret->unreadable[0])
                snprintf(ret->unreadable, sizeof ret->unreadable, "%s",
                         r == -ENOENT || r == -ESRCH ? "it ended before its cgroup was read"
                                                     : "its /proc cgroup file is not readable");
        ret->placed_by = 0;
        ret->has_container = false;
}

void sample_result_unmeasured(const SampleScope *scope, Snapshot *snap, SampleResult *ret) {
        static const Ranking no_ranking;

        snap->real_us = now_usec(CLOCK_REALTIME);
        snap->mono_us = now_usec(CLOCK_MONOTONIC);
        snapshot_read_pressure(snap, scope);
        *ret = (SampleResult) {
                .basis = SAMPLE_BASIS_NONE,
                .wakeup_real_us = snap->real_us,
                .b = snap,
                .ranking = &no_ranking,
                .resource = scope->resource,
                .has_stall = scope->resource >= 0,
                .stall = scope->stall,
        };
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
        ret->unreadable[0] = '\0';
        snprintf(ret->comm, sizeof ret->comm, "%s", comm[0] ? comm : "?");
        ret->comm_len = strlen(ret->comm);
        ret->cmdline_len = -1;
        ret->uid = uid;
        ret->has_cgroup = placed_by > 0 && proc_read_cgroup(proc_fd, placed_by, ret->cgroup, sizeof ret->cgroup) >= 0;
        ret->placed_by = ret->has_cgroup ? placed_by : 0;
        ret->has_container = false;
}

/* Whether pid is a process of r's sample alive at its end (measured in b): /proc says its cgroup. */
static bool alive_in_sample(const SampleResult *r, pid_t pid) {
        const ProcessDelays *p = r->b ? snapshot_find_process(r->b, pid) : NULL;

        return p && p->origin == PROCESS_MEASURED;
}

/* A most delayed process /proc could not place (it ended during the sample, or after the end
 * snapshot and before this read: a dd of a shell loop on 7.2 under TCG) takes the cgroup the
 * culprit pass's walks found it in, the end walk's else the start walk's. */
static void locate_by_walks(SampleResult *r, ProcessInfo *infos) {
        for (size_t i = 0; i < r->n_procs; i++) {
                const char *cg =
                        infos[i].has_cgroup ? NULL : culprits_victim_cgroup(r->culprits, r->ranking->procs[i].tgid);

                if (cg)
                        infos[i].has_cgroup =
                                cgroup_display_path(r->culprit_scope->node ? "" : r->culprit_scope->path, cg,
                                                    infos[i].cgroup, sizeof infos[i].cgroup) < sizeof infos[i].cgroup;
        }
}

/* A most delayed process that ended during the sample and that the culprits' start walk did not
 * name (no culprit pass, or it ended between the sample's snapshot A and that walk, which
 * follows it: seen on 7.2 under TCG, where a walk of the node takes tens of ms) takes the cgroup
 * of its parent, as a short-lived one does, when the parent is a process of the sample still
 * alive at its end. */
static void place_ended_by_parent(SampleResult *r, int proc_fd, ProcessInfo *infos) {
        for (size_t i = 0; i < r->n_procs; i++) {
                const ProcessDelta *p = &r->ranking->procs[i];
                ProcessInfo *v = &infos[i];

                if (p->origin != PROCESS_ENDED || v->has_cgroup || p->ppid <= 0 || !alive_in_sample(r, p->ppid))
                        continue;
                v->has_cgroup = proc_read_cgroup(proc_fd, p->ppid, v->cgroup, sizeof v->cgroup) >= 0;
                v->placed_by = v->has_cgroup ? p->ppid : 0;
        }
}

void sample_result_identify(SampleResult *r, int proc_fd, TaskstatsSource *ts, ProcessInfoBuffer *buf, size_t top) {
        ProcessInfo *infos;

        r->procs = r->culprit_procs = NULL;
        r->n_procs = r->n_culprit_procs = 0;
        if (!buf || !buf->items)
                return;
        top = MIN(top, buf->cap / PROCESS_INFO_PER_TOP);
        infos = buf->items;
        r->n_procs = r->ranking ? MIN(top, r->ranking->n_procs) : 0;
        for (size_t i = 0; i < r->n_procs; i++) {
                const ProcessDelta *p = &r->ranking->procs[i];
                if (p->origin != PROCESS_MEASURED)
                        ended_info(proc_fd, p->comm, p->uid, p->origin == PROCESS_SHORT ? p->ppid : 0, &infos[i]);
                else
                        process_info_read(proc_fd, ts, p->tgid, leader_comm(r->ranking, p), &infos[i]);
        }
        r->procs = infos;

        if (!r->culprits || !r->culprit_scope) {
                place_ended_by_parent(r, proc_fd, buf->items);
                return;
        }
        infos = buf->items + top;
        r->n_culprit_procs = MIN(r->culprits->n_procs, top);
        for (size_t i = 0; i < r->n_culprit_procs; i++) {
                const CulpritProcess *p = &r->culprits->procs[i];
                if (p->tgid > 0 && p->origin == PROCESS_MEASURED)
                        process_info_read(proc_fd, ts, p->tgid, p->comm, &infos[i]);
                else
                        ended_info(proc_fd, p->comm, p->uid, p->origin == PROCESS_SHORT && !p->cgroup ? p->ppid : 0,
                                   &infos[i]);
                /* An aggregate: its live ancestor's cgroup; one that ended: its cgroup at the start. */
                if ((p->tgid == 0 || p->origin != PROCESS_MEASURED) && p->cgroup) {
                        size_t n = cgroup_display_path(r->culprit_scope->node ? "" : r->culprit_scope->path, p->cgroup,
                                                       infos[i].cgroup, sizeof infos[i].cgroup);
                        infos[i].has_cgroup = n < sizeof infos[i].cgroup;
                }
        }
        r->culprit_procs = infos;

        /* A most delayed process that ended during the sample: /proc no longer says its cgroup, but
         * the culprit pass's start walk had it (the same process among the culprits). */
        for (size_t i = 0; i < r->n_procs; i++) {
                ProcessInfo *v = &buf->items[i];
                if (r->ranking->procs[i].origin != PROCESS_ENDED || v->has_cgroup)
                        continue;
                for (size_t j = 0; j < r->n_culprit_procs; j++)
                        if (r->culprits->procs[j].tgid == r->ranking->procs[i].tgid &&
                            r->culprits->procs[j].origin == PROCESS_ENDED && infos[j].has_cgroup) {
                                memcpy(v->cgroup, infos[j].cgroup, sizeof v->cgroup);
                                v->has_cgroup = true;
                                break;
                        }
        }
        locate_by_walks(r, buf->items);
        place_ended_by_parent(r, proc_fd, buf->items);
}

static void name_process(ProcessInfo *info, ContainerCache *c) {
        const ContainerInfo *ci = info->has_cgroup ? container_cache_lookup(c, info->cgroup) : NULL;

        info->has_container = ci != NULL;
        if (ci)
                info->container = *ci;
}

void sample_result_name_containers(SampleResult *r, ProcessInfoBuffer *buf, ContainerCache *c) {
        char path[4096];

        r->containers = c;
        if (!c || !buf || !buf->items)
                return;
        for (size_t i = 0; i < r->n_procs; i++)
                name_process(&buf->items[i], c);
        if (r->culprit_procs)
                for (size_t i = 0; i < r->n_culprit_procs; i++)
                        name_process(&buf->items[(size_t) (r->culprit_procs - buf->items) + i], c);
        for (size_t i = 0; r->culprits && r->culprit_scope && i < r->culprits->n_cgroups; i++)
                if (cgroup_display_path(r->culprit_scope->path, r->culprits->cgroups[i].path, path, sizeof path) <
                    sizeof path)
                        (void) container_cache_lookup(c, path);
        for (size_t i = 0; r->hot && i < r->hot->n; i++)
                if (cgroup_display_path(r->hot_prefix, r->hot->items[i].path, path, sizeof path) < sizeof path)
                        (void) container_cache_lookup(c, path);
        container_cache_done(c);
}

bool sample_result_stall_us(const SampleResult *res, uint64_t *ret) {
        uint64_t before, after;

        if (!res->a || !res->has_stall || !snapshot_pressure_total(res->a, res->resource, res->stall, &before) ||
            !snapshot_pressure_total(res->b, res->resource, res->stall, &after))
                return false;
        *ret = after >= before ? after - before : 0;
        return true;
}

uint64_t sample_result_blocked_us(const SampleResult *res, PsiResource resource) {
        uint64_t ns = 0;

        /* A D sleep is no wait for cpu or irq (ranking_add_blocked() only notes it there). */
        if (!res->ranking || (resource != PSI_RESOURCE_IO && resource != PSI_RESOURCE_MEMORY) ||
            res->resource != (int) resource)
                return 0;
        for (size_t i = 0; i < res->ranking->n_procs; i++)
                if (res->ranking->procs[i].blocked_tid > 0)
                        ns = MAX(ns, res->ranking->procs[i].blocked_ns);
        return ns / NSEC_PER_USEC;
}

FiredCoverage sample_result_fired(const SampleResult *res, const PsiTriggerSpec *trigger) {
        uint64_t stall_us = 0;
        bool has_stall = sample_result_stall_us(res, &stall_us);
        uint64_t duration_us = res->basis == SAMPLE_BASIS_DELTA && res->a && res->b->mono_us >= res->a->mono_us
                                       ? res->b->mono_us - res->a->mono_us
                                       : 0;

        return fired_coverage_blocked(fired_coverage(trigger, duration_us, has_stall, stall_us),
                                      sample_result_blocked_us(res, trigger->resource));
}
