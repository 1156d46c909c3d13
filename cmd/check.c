/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "cmd/check.h"
#include "config/model.h"
#include "incident/stacks-report.h"
#include "probes/kmsg.h"
#include "probes/pressure.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "probes/taskstats.h"

const char *check_status_to_string(CheckStatus s) {
        return s == CHECK_OK ? "ok" : s == CHECK_WARN ? "warn" : "fail";
}

/* Where a check writes its lines: at most CHECK_LINES_MAX, in the order written. */
typedef struct CheckOut {
        CheckLine *lines;
        size_t n;
} CheckOut;

_printf_(4, 5) static void emit(CheckOut *out, CheckStatus status, const char *what, const char *format, ...) {
        CheckLine *l = &out->lines[out->n++];
        va_list ap;

        assert(out->n <= CHECK_LINES_MAX);
        *l = (CheckLine) { .status = status, .what = what };
        va_start(ap, format);
        vsnprintf(l->text, sizeof l->text, format, ap);
        va_end(ap);
}

static void check_psi(const CheckFacts *f, CheckOut *out) {
        if (f->pressure_err < 0)
                emit(out, CHECK_FAIL, "psi",
                     "/proc/pressure: %s (the kernel needs CONFIG_PSI, and psi=1 where it "
                     "defaults to off)",
                     strerror(-f->pressure_err));
        else {
                char have[64] = "";
                for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                        if (f->pressure[r]) {
                                strcat(have, have[0] ? " " : "");
                                strcat(have, psi_resource_to_string(r));
                        }
                bool core = f->pressure[PSI_RESOURCE_CPU] && f->pressure[PSI_RESOURCE_MEMORY] &&
                            f->pressure[PSI_RESOURCE_IO];
                emit(out, core ? CHECK_OK : CHECK_FAIL, "psi", "/proc/pressure: %s%s", have[0] ? have : "empty",
                     f->pressure[PSI_RESOURCE_IRQ] ? ""
                                                   : " (no irq pressure on this kernel, which needs "
                                                     "CONFIG_IRQ_TIME_ACCOUNTING: irq triggers cannot be armed)");
                if (f->arm_err < 0 && (f->arm_err == -EACCES || f->arm_err == -EPERM) && f->lsm_err >= 0 &&
                    system_lsm_confines(f->lsm_label))
                        /* The runtimes' default AppArmor profiles (docker-default, containers-default,
                         * cri-containerd.apparmor.d) deny writes to every file under /proc but a
                         * process's own: the cgroups' *.pressure files stay writable. */
                        emit(out, CHECK_FAIL, "psi-trigger",
                             "cannot arm a trigger on /proc/pressure/cpu: %s: psidiag runs confined by the LSM "
                             "profile \"%s\", which refuses writes under /proc (a container runtime's default "
                             "AppArmor profile does): run it unconfined (Kubernetes: securityContext.appArmorProfile "
                             "type Unconfined; docker, podman: --security-opt apparmor=unconfined); node-wide "
                             "triggers cannot be armed, cgroup ones can",
                             strerror(-f->arm_err), f->lsm_label);
                else if (f->arm_err < 0)
                        emit(out, CHECK_FAIL, "psi-trigger", "cannot arm a trigger on /proc/pressure/cpu: %s",
                             strerror(-f->arm_err));
                else
                        emit(out, CHECK_OK, "psi-trigger", "armed and closed a test trigger on /proc/pressure/cpu");
        }
}

static void check_cgroup2(const CheckFacts *f, CheckOut *out) {
        if (!f->cgroup2_path[0])
                emit(out, CHECK_FAIL, "cgroup2",
                     "no cgroup2 mount in /proc/self/mountinfo: only node-wide watches work");
        else if (!f->cgroup2_pressure)
                emit(out, CHECK_FAIL, "cgroup2",
                     "mounted at %s, but without *.pressure files (cgroup.pressure=0 or an old kernel)",
                     f->cgroup2_path);
        else if (f->cgroup2_write_err < 0)
                emit(out, CHECK_WARN, "cgroup2",
                     "mounted at %s, but the root cgroup's pressure files are not writable (%s): "
                     "cgroup watches need root, CAP_DAC_OVERRIDE, or the watched cgroups delegated to the agent's user",
                     f->cgroup2_path, strerror(-f->cgroup2_write_err));
        else
                emit(out, CHECK_OK, "cgroup2", "mounted at %s%s, pressure files writable", f->cgroup2_path,
                     f->v1_controllers[0] ? " (hybrid host)" : "");
}

static void check_cgroup_v1(const CheckFacts *f, CheckOut *out) {
        if (f->v1_controllers[0])
                emit(out, CHECK_OK, "cgroup-v1", "controllers on cgroup v1: %s%s%s", f->v1_controllers,
                     f->memory_v1_path[0] ? "; memory limits come from memory.limit_in_bytes under " : "",
                     f->memory_v1_path);
        else
                emit(out, CHECK_OK, "cgroup-v1", "none mounted: a pure cgroup2 host (memory limits from memory.max)");
}

static void check_taskstats(const CheckFacts *f, CheckOut *out) {
        if (f->taskstats_err < 0)
                emit(out, CHECK_FAIL, "taskstats", "%s: incidents will name no processes",
                     f->taskstats_err == -EPERM             ? "the kernel refused the request (CAP_NET_ADMIN is needed)"
                     : f->taskstats_err == -EPROTONOSUPPORT ? "no TASKSTATS netlink family (CONFIG_TASKSTATS is off)"
                                                            : strerror(-f->taskstats_err));
        else
                emit(out, CHECK_OK, "taskstats", "answers with struct version %u%s", f->taskstats_version,
                     f->taskstats_version > TASKSTATS_VERSION_KNOWN
                             ? " (newer than psidiag knows; known fields are read)"
                             : "");
}

/* kernel/taskstats.c add_del_listener(): a listener outside the initial user and pid
 * namespaces is refused with EINVAL (a container with its own, as systemd-nspawn's) */
static void check_exit_listener(const CheckFacts *f, CheckOut *out) {
        if (f->exit_err == -EINVAL && f->taskstats_err >= 0)
                emit(out, CHECK_WARN, "exit-listener",
                     "the kernel refused the registration for cpus %s: the agent is in a pid or user "
                     "namespace of its own (the kernel takes exit listeners only from the initial ones): "
                     "exits are not heard (processes that end during a sample, kill incidents); run it "
                     "in the host's (hostPID in Kubernetes)",
                     f->exit_cpus[0] ? f->exit_cpus : "(unreadable)");
        else if (f->exit_err < 0 && f->taskstats_err >= 0)
                emit(out, CHECK_FAIL, "exit-listener",
                     "the kernel refused the registration for cpus %s: %s: exits are not "
                     "heard (processes that end during a sample, kill incidents)",
                     f->exit_cpus[0] ? f->exit_cpus : "(unreadable)", strerror(-f->exit_err));
        else if (f->exit_err >= 0)
                emit(out, CHECK_OK, "exit-listener", "registered for the possible cpus %s (acknowledged)",
                     f->exit_cpus);
}

static void check_delayacct(const CheckFacts *f, CheckOut *out) {
        if (f->delayacct == 1)
                emit(out, CHECK_OK, "delayacct", "kernel.task_delayacct=1");
        else if (f->delayacct == 0)
                emit(out, CHECK_WARN, "delayacct", "kernel.task_delayacct=0: only cpu delays are measured; %s",
                     f->delayacct_switchable ? "run the agent with --enable-delayacct, or set the sysctl"
                                             : "set the sysctl at boot (switching it needs root with CAP_SYS_ADMIN)");
        else
                emit(out, CHECK_WARN, "delayacct", "cannot read kernel.task_delayacct: %s", strerror(-f->delayacct));
}

static void check_capabilities(const CheckFacts *f, CheckOut *out) {
        if (f->caps_err < 0)
                emit(out, CHECK_WARN, "capabilities", "cannot read CapEff: %s", strerror(-f->caps_err));
        else {
                bool net = f->cap_eff & CAP_BIT(CAP_NET_ADMIN), res = f->cap_eff & CAP_BIT(CAP_SYS_RESOURCE);
                emit(out, net ? CHECK_OK : CHECK_FAIL, "cap-net-admin", "%s",
                     net ? "present (taskstats)" : "missing: taskstats will refuse every request");
                emit(out, res ? CHECK_OK : CHECK_WARN, "cap-sys-resource", "%s",
                     res ? "present: any PSI window from 500ms to 10s can be armed"
                         : "missing: unprivileged triggers: windows rounded up to multiples of 2s and checked only "
                           "every 2s, so a wakeup comes up to 2s late and a shorter spike can be over before the "
                           "sample");
        }
}

static void check_procfs(const CheckFacts *f, CheckOut *out) {
        if (f->procfs_err < 0)
                emit(out, CHECK_FAIL, "procfs", "cannot read another task's /proc entries: %s (hidepid, or no /proc)",
                     strerror(-f->procfs_err));
        else
                emit(out, CHECK_OK, "procfs", "other tasks' stat and cmdline are readable");
}

static void check_kmsg(const CheckFacts *f, CheckOut *out) {
        int syslog = f->caps_err < 0 ? -1 : !!(f->cap_eff & CAP_BIT(CAP_SYSLOG));

        if (f->kmsg_err < 0)
                emit(out, CHECK_WARN, "kmsg",
                     "cannot read /dev/kmsg: %s%s; oom kills are counted from cgroup watches' memory "
                     "counters, without the victim",
                     strerror(-f->kmsg_err), kmsg_open_why(f->kmsg_err, syslog));
        else
                emit(out, CHECK_OK, "kmsg", "/dev/kmsg is readable (the kernel's OOM kill records)");
}

/* systemd-oomd 260+ calls the hooks of this directory before it kills (docs/killers.md). */
static void check_prekill_hook(const CheckFacts *f, CheckOut *out) {
        if (f->prekill_dir_err < 0)
                emit(out, CHECK_OK, "prekill-hook",
                     "%s: %s: no systemd-oomd that calls prekill hooks (systemd 260 and later); the agent serves "
                     "none, at no cost",
                     CONFIG_PREKILL_SYSTEMD_DIR, strerror(-f->prekill_dir_err));
        else
                emit(out, CHECK_OK, "prekill-hook",
                     "%s is there: with prekill_socket in it, the agent measures a cgroup before systemd-oomd kills "
                     "it (once PrekillHookTimeoutSec= is set in oomd.conf)",
                     CONFIG_PREKILL_SYSTEMD_DIR);
}

/* How long a blocked thread has been blocked: /proc/<tid>/sched against the clock of its
 * cpu, read there (kernel-facts.md: blocked-since). */
static void check_blocked_since(const CheckFacts *f, CheckOut *out) {
        if (f->sched_err < 0)
                emit(out, CHECK_WARN, "blocked-since",
                     "cannot read a cpu's clock where it runs: %s; blocked threads are named without how long they "
                     "have been blocked",
                     f->sched_err == -ENOENT ? "no /proc/thread-self/sched (a kernel without CONFIG_SCHED_DEBUG)"
                     : f->sched_err == -EPERM
                             ? "sched_setaffinity() refused (a system call filter: systemd's @resources, or a "
                               "container runtime's seccomp profile; the shipped unit allows it)"
                             : strerror(-f->sched_err));
        else if (f->cpus_allowed > 0 && f->cpus_online > f->cpus_allowed)
                emit(out, CHECK_WARN, "blocked-since",
                     "the agent may run on %d of %d cpus (its cpuset): a thread blocked after running on another "
                     "cpu is named without how long (blocked_ms null)",
                     f->cpus_allowed, f->cpus_online);
        else
                emit(out, CHECK_OK, "blocked-since",
                     "how long blocked threads have been blocked, from /proc/<tid>/sched on each cpu (no capability "
                     "or sysctl needed)");
}

/* stacks_hz's needs (docs/stacks.md): a warning says what a capture would lack; stacks are off
 * unless asked, so nothing here fails. */
static void check_stacks(const CheckFacts *f, CheckOut *out) {
        char why[256], paranoid[64] = "";
        bool ptrace = f->caps_err >= 0 && (f->cap_eff & CAP_BIT(CAP_SYS_PTRACE));

        if (f->perf_paranoid_err >= 0)
                snprintf(paranoid, sizeof paranoid, " (kernel.perf_event_paranoid is %d)", f->perf_paranoid);
        /* kernel-facts.md: perf-paranoid-debian */
        if (f->perf_err == -EACCES && f->perf_paranoid_err >= 0 && f->perf_paranoid >= 3)
                emit(out, CHECK_WARN, "stacks",
                     "stacks_hz would take no stacks: kernel.perf_event_paranoid is %d (Debian's default), where "
                     "Debian's kernels let only CAP_SYS_ADMIN open perf events; at 2, CAP_PERFMON is enough",
                     f->perf_paranoid);
        else if (f->perf_err < 0)
                emit(out, CHECK_WARN, "stacks", "stacks_hz would take no stacks: %s%s",
                     f->perf_err == -EPERM ? "perf_event_open refused (a system call filter: systemd's @debug "
                                             "group, which the shipped unit leaves out; or no CAP_PERFMON)"
                                           : stacks_report_error(f->perf_err, why, sizeof why),
                     paranoid);
        else if (!f->unwinder)
                emit(out, CHECK_WARN, "stacks",
                     "perf sampling allowed, but no libdw.so.1 (Debian's libdw1, libdw1t64 from Debian 13 on): "
                     "a stack's user part is its sampled pc alone");
        else if (!f->perf_kernel)
                emit(out, CHECK_WARN, "stacks", "perf sampling allowed for user frames only%s", paranoid);
        else if (f->kallsyms_err < 0)
                emit(out, CHECK_WARN, "stacks", "kernel frames would be unnamed: %s",
                     stacks_report_kernel_names(f->kallsyms_err, why, sizeof why));
        else if (!ptrace)
                emit(out, CHECK_WARN, "stacks",
                     "perf sampling allowed with kernel and user frames, but without CAP_SYS_PTRACE the user stacks "
                     "of other users' processes are not unwound (their maps are refused)");
        else
                emit(out, CHECK_OK, "stacks",
                     "stacks_hz can take stacks: perf sampling allowed, kernel frames named, user stacks unwound "
                     "by libdw");
}

/* In a cgroup namespace of its own (a container started without --cgroupns=host), it reads
 * every cgroup outside that namespace as "/../..". Under a mount of the host's tree the
 * namespace's root is found there and every path resolved (kernel-facts.md:
 * cgroupns-paths); under the namespace's own mount such paths name nothing, so incidents
 * can say only that a process is outside. */
static void check_cgroupns(const CheckFacts *f, CheckOut *out) {
        const ProcCgroupNamespace *ns = &f->cgroupns;

        if (f->cgroupns_err >= 0 && f->cgns_err >= 0 && f->cgns.private_root && f->cgns.resolved)
                emit(out, CHECK_OK, "cgroupns",
                     "a cgroup namespace of its own, rooted at /%.300s of the host's cgroup2 mount (found where "
                     "its own pid is, %u level%s down; no privilege needed): every process's cgroup is resolved "
                     "to its host path",
                     f->cgns.root, f->cgns.up, f->cgns.up == 1 ? "" : "s");
        else if (f->cgroupns_err >= 0 && f->cgns_err >= 0 && f->cgns.private_root)
                emit(out, CHECK_WARN, "cgroupns",
                     "a cgroup namespace of its own whose root could not be found under the cgroup2 mount (%s): "
                     "incidents name processes outside it only as \"" PROC_CGROUP_OUTSIDE_NAMESPACE "\"",
                     strerror(-f->cgns.error));
        else if (f->cgroupns_err == -ENOENT)
                emit(out, CHECK_OK, "cgroupns", "no cgroup namespaces in this kernel: cgroup paths are the host's");
        else if (f->cgroupns_err < 0)
                emit(out, CHECK_WARN, "cgroupns", "cannot tell which cgroup namespace the agent is in: %s",
                     strerror(-f->cgroupns_err));
        else if (ns->differs_from_init || ns->outside > 0) {
                char example[96] = "";

                if (ns->outside > 0)
                        snprintf(example, sizeof example, "; %u of %u processes (pid %d, ...) read as \"/..\"",
                                 ns->outside, ns->scanned, (int) ns->outside_pid);
                emit(out, CHECK_WARN, "cgroupns",
                     "the agent must run in the host's cgroup namespace or see the host's cgroup tree: it is in "
                     "one of its own%s with the namespace's own cgroup2 mount, so incidents name processes "
                     "outside it only as \"" PROC_CGROUP_OUTSIDE_NAMESPACE "\" (mount the host's "
                     "/sys/fs/cgroup, as the DaemonSet does; or docker and podman: --cgroupns=host)",
                     example);
        } else
                emit(out, CHECK_OK, "cgroupns", "the host's cgroup namespace (%u processes' cgroups read)",
                     ns->scanned);
}

/* Container names: each container of the tree looked up in its runtime's files, as an
 * incident names it (docs/incident.md: container names). */
static void check_container_names(const CheckFacts *f, CheckOut *out) {
        char spoofs[256] = "";

        if (f->unverified) /* containers/ctrverify.h: a user's cgroup that claims a container's id */
                snprintf(spoofs, sizeof spoofs,
                         "; %u cgroup%s claiming a container's id not its runtime's, named nothing: %s", f->unverified,
                         f->unverified == 1 ? "" : "s", f->unverified_why);
        if (f->containers_err < 0)
                emit(out, CHECK_WARN, "container-names", "cannot walk the cgroup tree for containers: %s",
                     strerror(-f->containers_err));
        else if (f->n_runtimes == 0)
                emit(out, CHECK_OK, "container-names", "no container in the cgroup tree%s", spoofs);
        else {
                char all[256] = "", *p = all;
                const CheckRuntime *worst = NULL;

                for (size_t i = 0; i < f->n_runtimes && p < all + sizeof all - 1; i++) {
                        const CheckRuntime *rt = &f->runtimes[i];
                        p += snprintf(p, sizeof all - (size_t) (p - all), "%s%s %u of %u", i ? ", " : "", rt->runtime,
                                      rt->named, rt->seen);
                        if (rt->named < rt->seen && (!worst || rt->seen - rt->named > worst->seen - worst->named))
                                worst = rt;
                }
                if (!worst)
                        emit(out, CHECK_OK, "container-names", "containers named from their runtimes' files: %s%s", all,
                             spoofs);
                else
                        emit(out, CHECK_WARN, "container-names",
                             "containers named from their runtimes' files: %s; %s's not: %s: incidents give their ids "
                             "(in a container, mount the runtimes' directories read-only: docs/deploy.md)%s",
                             all, worst->runtime, worst->unnamed, spoofs);
        }
}

/* Discovery's inotify watches: what the tree asks for against what the agent may hold, and what
 * root's processes (systemd's among them) hold of what the kernel allows them. */
static void check_dir_watches(const CheckFacts *f, CheckOut *out) {
        uint64_t limit = f->dir_watch_default;
        char root[224] = "", user[192] = "";

        if (f->inotify_err >= 0 && f->inotify_max / 4 < limit)
                limit = MAX(f->inotify_max / 4, (uint64_t) 1);
        if (f->inotify_err >= 0 && f->inotify_use_err >= 0)
                snprintf(root, sizeof root,
                         "; root's processes hold %" PRIu64 " of the %" PRIu64
                         " inotify watches fs.inotify.max_user_watches allows them (running psidiag agents: %" PRIu64
                         ")%s",
                         f->inotify_use.watches, f->inotify_max, f->inotify_use.comm_watches,
                         f->inotify_use.truncated ? ", counted in the first processes only" : "");
        if (f->dirs_user_most > 0)
                snprintf(user, sizeof user, "; users own %u of them, uid %u the most (%u)", f->dirs_users,
                         (unsigned) f->dirs_user_uid, f->dirs_user_most);
        if (f->containers_err < 0)
                emit(out, CHECK_WARN, "dir-watches", "cannot walk the cgroup tree: %s", strerror(-f->containers_err));
        else if (f->dirs > limit)
                emit(out, CHECK_WARN, "dir-watches",
                     "container watches would watch %u cgroup director%s, more than the limit of %" PRIu64
                     " (max_dir_watches, default %u, at most a quarter of fs.inotify.max_user_watches): cgroups made "
                     "in the others are noticed only at the next walk%s%s",
                     f->dirs, f->dirs == 1 ? "y" : "ies", limit, f->dir_watch_default, user, root);
        else if (f->dirs_user_most > MAX(limit / CONFIG_DIR_WATCHES_USER_SHARE, (uint64_t) 1))
                emit(out, CHECK_WARN, "dir-watches",
                     "container watches would watch %u cgroup director%s, under the limit of %" PRIu64
                     "; but uid %u owns %u of them, beyond a user's share (%" PRIu64
                     "): cgroups made in the others are not noticed%s",
                     f->dirs, f->dirs == 1 ? "y" : "ies", limit, (unsigned) f->dirs_user_uid, f->dirs_user_most,
                     MAX(limit / CONFIG_DIR_WATCHES_USER_SHARE, (uint64_t) 1), root);
        else if (f->inotify_err >= 0 && f->inotify_use_err >= 0 && f->inotify_use.watches + limit > f->inotify_max)
                emit(out, CHECK_WARN, "dir-watches",
                     "container watches would watch %u cgroup director%s (limit %" PRIu64
                     "), but root's processes may run out of inotify watches first%s%s",
                     f->dirs, f->dirs == 1 ? "y" : "ies", limit, user, root);
        else
                emit(out, CHECK_OK, "dir-watches",
                     "container watches would watch %u cgroup director%s, of at most %" PRIu64
                     " (max_dir_watches, default %u, at most a quarter of fs.inotify.max_user_watches)%s%s",
                     f->dirs, f->dirs == 1 ? "y" : "ies", limit, f->dir_watch_default, user, root);
}

/* The checks, in the order `psidiag check` prints their lines. Most write one line of their name;
 * "psi" adds "psi-trigger" once /proc/pressure opened, "capabilities" writes "cap-net-admin" and
 * "cap-sys-resource" (its own when CapEff is unreadable), "exit-listener" none if taskstats failed. */
static const struct {
        const char *name;
        void (*evaluate)(const CheckFacts *f, CheckOut *out);
} checks[] = {
        { "psi", check_psi },
        { "cgroup2", check_cgroup2 },
        { "cgroup-v1", check_cgroup_v1 },
        { "taskstats", check_taskstats },
        { "exit-listener", check_exit_listener },
        { "delayacct", check_delayacct },
        { "capabilities", check_capabilities },
        { "procfs", check_procfs },
        { "kmsg", check_kmsg },
        { "prekill-hook", check_prekill_hook },
        { "blocked-since", check_blocked_since },
        { "cgroupns", check_cgroupns },
        { "container-names", check_container_names },
        { "dir-watches", check_dir_watches },
        { "stacks", check_stacks }, /* psidiag 0.13: last, so the older lines keep their places */
};

size_t check_evaluate(const CheckFacts *f, CheckLine *lines) {
        CheckOut out = { .lines = lines };

        for (size_t i = 0; i < ELEMENTSOF(checks); i++)
                checks[i].evaluate(f, &out);
        return out.n;
}

int check_run(void) {
        CheckFacts f;
        CheckLine lines[CHECK_LINES_MAX];
        size_t n;
        bool failed = false;

        check_gather(&f);
        n = check_evaluate(&f, lines);
        for (size_t i = 0; i < n; i++) {
                printf("%-4s  %-16s  %s\n", check_status_to_string(lines[i].status), lines[i].what, lines[i].text);
                failed = failed || lines[i].status == CHECK_FAIL;
        }
        return failed ? 1 : 0;
}
