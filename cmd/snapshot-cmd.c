/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ev.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/runtime.h"
#include "base/log.h"
#include "base/macro.h"
#include "cmd/snapshot-cmd.h"
#include "incident/incident.h"
#include "probes/procfs.h"
#include "sampling/sampler.h"
#include "sinks/registry.h"
#include "sinks/sink.h"

/* The sample runs on a loop of its own, as the agent's do: the exit listener is drained as
 * records arrive, so a long window does not overflow its socket. */
typedef struct SnapshotDone {
        bool done;
        int r;
} SnapshotDone;

static void on_sample_done(Sampler *s, int r) {
        SnapshotDone *d = ASSERT_PTR(s->userdata);

        d->done = true;
        d->r = r;
        ev_break(s->loop, EVBREAK_ALL);
}

/* One run of the command: what it opened and lent the sample, released by snapshot_run_free(). */
typedef struct SnapshotRun {
        const SnapshotCmdOptions *opts;
        Runtime rt;
        struct ev_loop *loop;
        Sampler sampler;
        SnapshotDone done;
        ProcessInfoBuffer procs;
        int cgroup_fd;
        const char *cgroup;    /* the cgroup sampled: opts->cgroup, pid_cgroup, or NULL node-wide */
        char pid_cgroup[1024]; /* --pid: the process's own cgroup */
        SampleScope scope;
        CulpritScope culprit;
        bool has_culprit;
        OnWhat onwhat; /* its looks allocated at the first (onwhat_look()) */
} SnapshotRun;

/* The cgroup to sample, opened: 0, or the exit code (logged). */
static int open_target(SnapshotRun *s) {
        const SnapshotCmdOptions *opts = s->opts;
        int r;

        /* --pid: the process's own cgroup gives the pressure (and, with --resource, the cgroups). */
        s->cgroup = opts->cgroup;
        if (opts->pid > 0) {
                r = proc_read_cgroup(s->rt.sysroot->proc_fd, opts->pid, s->pid_cgroup, sizeof s->pid_cgroup);
                if (r == -ESRCH) {
                        log_error("no process %d", (int) opts->pid);
                        return 1;
                }
                s->cgroup = r >= 0 ? s->pid_cgroup : NULL;
        }
        if (s->cgroup) {
                r = sysroot_open_cgroup(s->rt.sysroot, s->cgroup, &s->cgroup_fd);
                if (r < 0 && opts->pid > 0) {
                        s->cgroup = NULL; /* pressure from /proc/pressure instead */
                } else if (r < 0) {
                        log_error_errno(r, "cannot open cgroup %s under %s", opts->cgroup,
                                        s->rt.sysroot->cgroup2_path ? s->rt.sysroot->cgroup2_path
                                                                    : "(no cgroup2 mount)");
                        return r == -EINVAL ? 2 : 1;
                }
        }
        return 0;
}

/* The sample's scope and what it borrows: the identities' buffer, "on what", the culprit scope.
 * 0, or -ENOMEM (logged). */
static int make_scope(SnapshotRun *s) {
        const SnapshotCmdOptions *opts = s->opts;

        s->procs.cap = process_info_buffer_cap(opts->top);
        s->procs.items = calloc(s->procs.cap, sizeof *s->procs.items);
        if (!s->procs.items) {
                log_error("out of memory");
                return -ENOMEM;
        }

        /* With --resource, also the hottest descendant cgroups by that resource's stall. */
        s->scope = sample_scope_make(&(SampleOwner) { .sysroot = s->rt.sysroot,
                                                      .taskstats = s->rt.taskstats,
                                                      .identities = &s->procs,
                                                      .containers = s->rt.containers },
                                     s->cgroup ? s->cgroup_fd : -1, s->cgroup, opts->resource, opts->top);
        s->scope.pid = opts->pid;
        s->scope.stacks_hz = opts->stacks_hz;
        s->scope.stall = opts->resource == PSI_RESOURCE_IRQ ? PSI_STALL_FULL : PSI_STALL_SOME;
        /* With --resource, also who is causing it: the processes and cgroups competing for it; on
         * what, for a cgroup, and node-wide for io (the node's busy disks). */
        if (opts->resource >= 0 && opts->pid <= 0 && (s->cgroup || opts->resource == PSI_RESOURCE_IO)) {
                s->scope.limits = s->rt.limits;
                s->scope.limits_cgroup = s->cgroup;
                s->scope.limits_resource = (PsiResource) opts->resource;
                s->scope.onwhat = &s->onwhat;
        }
        s->has_culprit = opts->resource >= 0 && opts->pid <= 0 && s->rt.limits &&
                         culprit_scope_open(s->rt.limits, s->cgroup, (PsiResource) opts->resource, &s->culprit) >= 0;
        if (s->has_culprit)
                s->scope.culprit = &s->culprit;
        return 0;
}

/* The sample, on a loop of its own until it is done. 0, or -errno (logged). */
static int run_sample(SnapshotRun *s) {
        const SnapshotCmdOptions *opts = s->opts;
        int r;

        s->loop = ev_loop_new(EVFLAG_AUTO);
        if (!s->loop) {
                log_error("cannot create an event loop");
                return -ENOMEM;
        }
        /* Exits during the sample keep their delay (the sampler listens from before A until B);
         * --sample-ms 0: one snapshot, lifetime totals, done before sampler_start() returns. */
        sampler_init(&s->sampler, s->loop, runtime_exit_cpus(&s->rt), on_sample_done, &s->done);
        r = sampler_start(&s->sampler, &s->scope, opts->sample_ms);
        if (r >= 0 && !s->done.done)
                ev_run(s->loop, 0);
        if (r >= 0)
                r = s->done.r;
        if (r == -ENOMEM || (r >= 0 && s->sampler.partial)) {
                log_error("out of memory");
                return -ENOMEM;
        }
        if (r < 0) {
                log_error_errno(r, "cannot list the threads of %s",
                                opts->pid > 0  ? "the process"
                                : opts->cgroup ? opts->cgroup
                                               : "the host");
                return r;
        }
        const Snapshot *a = &s->sampler.a, *b = &s->sampler.b;
        if (a->errors + b->errors > 0)
                log_warning_errno(a->errors ? a->first_error : b->first_error, "%u processes could not be measured",
                                  a->errors + b->errors);
        return 0;
}

/* The sample's incident, of type "snapshot", as a line on stdout. 0, or -errno (logged). */
static int write_incident(SnapshotRun *s) {
        json_auto_t *incident = NULL;
        Sink *out = NULL;
        char id[96], why[160];
        int r;

        incident_format_id(&s->rt.host, s->sampler.result.wakeup_real_us, getpid(), 1, id, sizeof id);
        r = incident_build(&s->sampler.result,
                           &(IncidentContext) {
                                   .type = "snapshot",
                                   .id = id,
                                   .host = &s->rt.host,
                                   .delayacct = runtime_delayacct(&s->rt),
                                   /* --pid: every delayed thread, as getdelays -t would list them */
                                   .threads_per_process = s->opts->pid > 0 ? 100000 : 0,
                           },
                           &incident);
        if (r < 0) {
                log_error_errno(r, "cannot build the incident");
                return r;
        }
        /* sink_write says on stderr why a line could not be written. */
        r = sink_open("-", SINK_FORMAT_INCIDENT, &out, why, sizeof why);
        if (r >= 0)
                r = sink_write(out, incident);
        sink_free(out);
        return r;
}

static void snapshot_run_free(SnapshotRun *s) {
        sampler_free(&s->sampler);
        free(s->procs.items);
        onwhat_done(&s->onwhat);
        if (s->has_culprit)
                culprit_scope_close(&s->culprit);
        if (s->loop)
                ev_loop_destroy(s->loop);
        runtime_close(&s->rt);
        s->cgroup_fd = safe_close(s->cgroup_fd);
}

int snapshot_cmd_run(const SnapshotCmdOptions *opts) {
        SnapshotRun s = {
                .opts = opts,
                .cgroup_fd = -EBADF,
                .culprit = { .cgroup_fd = -EBADF, .v1_fd = -EBADF },
        };
        int exit_code;

        if (runtime_open(&s.rt, opts->enable_delayacct) < 0)
                return 1;
        exit_code = open_target(&s);
        if (exit_code == 0)
                exit_code = make_scope(&s) < 0 || run_sample(&s) < 0 || write_incident(&s) < 0 ? 1 : 0;
        snapshot_run_free(&s);
        return exit_code;
}
