/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "probes/procfs.h"
#include "agent/base/log.h"
#include "agent/base/macro.h"
#include "agent/output.h"
#include "agent/report.h"

static void sleep_ms(uint64_t ms) {
        struct timespec ts = { .tv_sec = (time_t) (ms / 1000), .tv_nsec = (long) (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int snapshot_run(const SnapshotOptions *opts) {
        Runtime rt;
        Snapshot a = {}, b = {};
        Ranking ranking = {};
        HotCgroups hot = {};
        TaskstatsExitListener *listener = NULL;
        ExitRecords exits = {};
        bool listened = false;
        _cleanup_free_ ProcessInfo *procs = NULL;
        _cleanup_free_ char *line = NULL;
        _cleanup_close_ int cgroup_fd = -EBADF;
        SampleScope scope;
        char id[96];
        size_t len;
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
        procs = calloc(opts->top, sizeof *procs);
        if (!procs) {
                log_error("out of memory");
                goto finish;
        }

        scope = (SampleScope) {
                .sysroot = rt.sysroot,
                .taskstats = rt.taskstats,
                .cgroup_fd = cgroup ? cgroup_fd : -1,
                .pid = opts->pid,
                .exclude_tgid = getpid(),
                /* With --resource, also the hottest descendant cgroups by that resource's stall. */
                .walk_cgroups = opts->resource >= 0,
                .cgroups_resource = opts->resource >= 0 ? (PsiResource) opts->resource : PSI_RESOURCE_CPU,
        };
        /* Exits during the sample keep their delay: listen from before A until B. */
        if (opts->sample_ms > 0)
                listener = runtime_exit_listener(&rt);
        usec_t wakeup = now_usec(CLOCK_REALTIME);
        r = snapshot_take(&a, &scope, true);
        if (r < 0) {
                log_error_errno(r, "cannot list the threads of %s", opts->pid > 0 ? "the process" : opts->cgroup ? opts->cgroup : "the host");
                goto finish;
        }
        /* --sample-ms 0: one snapshot, lifetime totals (no second pass, no window). */
        if (opts->sample_ms > 0) {
                sleep_ms(opts->sample_ms);
                if (listener) {
                        r = taskstats_exit_listener_drain(listener, exit_records_collect, &exits, &exits.lost);
                        if (r < 0)
                                log_debug_errno(r, "the exit listener failed; exits are not followed");
                        listener = taskstats_exit_listener_free(listener);
                        listened = r >= 0;
                }
                r = snapshot_take(&b, &scope, false);
                if (r < 0) {
                        log_error_errno(r, "cannot list the threads of %s", opts->pid > 0 ? "the process" : opts->cgroup ? opts->cgroup : "the host");
                        goto finish;
                }
                if (listened && snapshot_merge_exits(&b, &a, &exits) < 0) {
                        log_error("out of memory");
                        goto finish;
                }
        }
        if (a.errors + b.errors > 0)
                log_warning_errno(a.errors ? a.first_error : b.first_error, "%u threads could not be measured",
                                  a.errors + b.errors);

        incident_format_id(&rt.host, wakeup, getpid(), 1, id, sizeof id);
        r = report_build_line(&(Report) {
                                      .sysroot = rt.sysroot,
                                      .host = &rt.host,
                                      .type = "snapshot",
                                      .id = id,
                                      .wakeup_real_us = wakeup,
                                      .delayacct = runtime_delayacct(&rt),
                                      .resource = opts->resource,
                                      .has_stall = opts->resource >= 0,
                                      .stall = opts->resource == PSI_RESOURCE_IRQ ? PSI_STALL_FULL : PSI_STALL_SOME,
                                      .top = opts->top,
                                      .a = opts->sample_ms > 0 ? &a : NULL,
                                      .b = opts->sample_ms > 0 ? &b : &a,
                                      .ranking = &ranking,
                                      .hot = &hot,
                                      .scope_cgroup = cgroup,
                                      /* --pid: every delayed thread, as getdelays -t would list them */
                                      .threads_per_process = opts->pid > 0 ? 100000 : 0,
                                      .procs = procs,
                              },
                              &line, &len);
        if (r < 0) {
                log_error_errno(r, "cannot build the incident");
                goto finish;
        }
        {
                OutputSink *out = NULL;
                char why[160];

                /* output_write says on stderr why a line could not be written. */
                r = output_open("-", &out, why, sizeof why);
                if (r >= 0)
                        r = output_write(out, line, len);
                output_free(out);
                if (r < 0)
                        goto finish;
        }
        exit_code = 0;
finish:
        snapshot_done(&a);
        snapshot_done(&b);
        ranking_done(&ranking);
        hot_cgroups_done(&hot);
        taskstats_exit_listener_free(listener);
        exit_records_done(&exits);
        runtime_close(&rt);
        return exit_code;
}
