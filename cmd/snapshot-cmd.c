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

int snapshot_cmd_run(const SnapshotCmdOptions *opts) {
        Runtime rt;
        struct ev_loop *loop = NULL;
        Sampler sampler = {};
        SnapshotDone done = {};
        ProcessInfoBuffer procs = {};
        json_auto_t *incident = NULL;
        _cleanup_close_ int cgroup_fd = -EBADF;
        SampleScope scope;
        CulpritScope culprit = { .cgroup_fd = -EBADF, .v1_fd = -EBADF };
        OnWhat onwhat = {}; /* its looks allocated at the first (onwhat_look()) */
        bool has_culprit = false;
        char id[96];
        int r, exit_code = 1;

        if (runtime_open(&rt, opts->enable_delayacct) < 0)
                return 1;

        /* --pid: the process's own cgroup gives the pressure (and, with --resource, the cgroups). */
        char pid_cgroup[1024];
        const char *cgroup = opts->cgroup;
        if (opts->pid > 0) {
                r = proc_read_cgroup(rt.sysroot->proc_fd, opts->pid, pid_cgroup, sizeof pid_cgroup);
                if (r == -ESRCH) {
                        log_error("no process %d", (int) opts->pid);
                        goto finish;
                }
                cgroup = r >= 0 ? pid_cgroup : NULL;
        }
        if (cgroup) {
                r = sysroot_open_cgroup(rt.sysroot, cgroup, &cgroup_fd);
                if (r < 0 && opts->pid > 0) {
                        cgroup = NULL; /* pressure from /proc/pressure instead */
                        r = 0;
                } else if (r < 0) {
                        log_error_errno(r, "cannot open cgroup %s under %s", opts->cgroup,
                                        rt.sysroot->cgroup2_path ? rt.sysroot->cgroup2_path : "(no cgroup2 mount)");
                        exit_code = r == -EINVAL ? 2 : 1;
                        goto finish;
                }
        }
        procs.cap = process_info_buffer_cap(opts->top);
        procs.items = calloc(procs.cap, sizeof *procs.items);
        if (!procs.items) {
                log_error("out of memory");
                goto finish;
        }

        /* With --resource, also the hottest descendant cgroups by that resource's stall. */
        scope = sample_scope_make(&(SampleOwner) { .sysroot = rt.sysroot,
                                                   .taskstats = rt.taskstats,
                                                   .identities = &procs,
                                                   .containers = rt.containers },
                                  cgroup ? cgroup_fd : -1, cgroup, opts->resource, opts->top);
        scope.pid = opts->pid;
        scope.stall = opts->resource == PSI_RESOURCE_IRQ ? PSI_STALL_FULL : PSI_STALL_SOME;
        /* With --resource, also who is causing it: the processes and cgroups competing for it; on
         * what, for a cgroup, and node-wide for io (the node's busy disks). */
        if (opts->resource >= 0 && opts->pid <= 0 && (cgroup || opts->resource == PSI_RESOURCE_IO)) {
                scope.limits = rt.limits;
                scope.limits_cgroup = cgroup;
                scope.limits_resource = (PsiResource) opts->resource;
                scope.onwhat = &onwhat;
        }
        has_culprit = opts->resource >= 0 && opts->pid <= 0 && rt.limits &&
                      culprit_scope_open(rt.limits, cgroup, (PsiResource) opts->resource, &culprit) >= 0;
        if (has_culprit)
                scope.culprit = &culprit;
        loop = ev_loop_new(EVFLAG_AUTO);
        if (!loop) {
                log_error("cannot create an event loop");
                goto finish;
        }
        /* Exits during the sample keep their delay (the sampler listens from before A until B);
         * --sample-ms 0: one snapshot, lifetime totals, done before sampler_start() returns. */
        sampler_init(&sampler, loop, runtime_exit_cpus(&rt), on_sample_done, &done);
        r = sampler_start(&sampler, &scope, opts->sample_ms);
        if (r >= 0 && !done.done)
                ev_run(loop, 0);
        if (r >= 0)
                r = done.r;
        if (r == -ENOMEM || (r >= 0 && sampler.partial)) {
                log_error("out of memory");
                goto finish;
        }
        if (r < 0) {
                log_error_errno(r, "cannot list the threads of %s",
                                opts->pid > 0  ? "the process"
                                : opts->cgroup ? opts->cgroup
                                               : "the host");
                goto finish;
        }
        const Snapshot *a = &sampler.a, *b = &sampler.b;
        if (a->errors + b->errors > 0)
                log_warning_errno(a->errors ? a->first_error : b->first_error, "%u processes could not be measured",
                                  a->errors + b->errors);

        incident_format_id(&rt.host, sampler.result.wakeup_real_us, getpid(), 1, id, sizeof id);
        r = incident_build(&sampler.result,
                           &(IncidentContext) {
                                   .type = "snapshot",
                                   .id = id,
                                   .host = &rt.host,
                                   .delayacct = runtime_delayacct(&rt),
                                   /* --pid: every delayed thread, as getdelays -t would list them */
                                   .threads_per_process = opts->pid > 0 ? 100000 : 0,
                           },
                           &incident);
        if (r < 0) {
                log_error_errno(r, "cannot build the incident");
                goto finish;
        }
        {
                Sink *out = NULL;
                char why[160];

                /* sink_write says on stderr why a line could not be written. */
                r = sink_open("-", SINK_FORMAT_INCIDENT, &out, why, sizeof why);
                if (r >= 0)
                        r = sink_write(out, incident);
                sink_free(out);
                if (r < 0)
                        goto finish;
        }
        exit_code = 0;
finish:
        sampler_free(&sampler);
        free(procs.items);
        onwhat_done(&onwhat);
        if (has_culprit)
                culprit_scope_close(&culprit);
        if (loop)
                ev_loop_destroy(loop);
        runtime_close(&rt);
        return exit_code;
}
