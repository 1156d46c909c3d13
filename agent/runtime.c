/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "agent/runtime.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "sinks/registry.h"

#define AGENT_NICE (-10)

/* In a cgroup namespace of its own, under a mount of the host's tree, every process's cgroup is
 * resolved to its host path once the namespace's root is found (kernel-facts.md: cgroupns-paths). */
static void runtime_resolve_cgroupns(Runtime *rt) {
        CgroupNamespace ns;
        int r = proc_cgroup_namespace_locate(rt->sysroot, &ns);

        if (r < 0) {
                log_warning_errno(r, "cannot read our own cgroup from /proc/self/cgroup");
                return;
        }
        if (!ns.private_root)
                return;
        if (!ns.resolved) {
                log_warning_errno(ns.error,
                                  "in a cgroup namespace of its own, %u level%s below the cgroup2 mount's root, whose "
                                  "root could not be found there: processes outside it are named only as outside "
                                  "(psidiag check says more)",
                                  ns.up, ns.up == 1 ? "" : "s");
                return;
        }
        proc_cgroup_set_namespace_root(ns.root);
        log_info("in a cgroup namespace of its own, rooted at /%s of the cgroup2 mount: processes' cgroups are "
                 "resolved to host paths",
                 ns.root);
}

static void runtime_exit_check(Runtime *rt);

int runtime_open(Runtime *rt, bool enable_delayacct) {
        uint64_t caps = 0;
        int r;

        *rt = (Runtime) {};
        r = sysroot_open("/", &rt->sysroot);
        if (r < 0)
                return log_error_errno(r, "cannot open /proc");
        if (rt->sysroot->pressure_fd < 0)
                log_warning("/proc/pressure is missing: this kernel has no PSI (CONFIG_PSI, or psi=0 on the "
                            "command line); no trigger can be armed");
        if (rt->sysroot->cgroup2_fd < 0)
                log_warning("no cgroup2 mount found in /proc/self/mountinfo: only node-wide watches work");
        runtime_resolve_cgroupns(rt);
        /* Without it (no memory) incidents name cgroups and container ids, not containers. */
        if (container_cache_new(rt->sysroot->root_fd, rt->sysroot->proc_fd, rt->sysroot->cgroup2_fd,
                                CONTAINER_CACHE_MAX, &rt->containers) < 0)
                rt->containers = NULL;
        /* Which hierarchy has each controller (the sysroot found the mounts): without it, incidents
         * go without "limits" and culprit passes. */
        if (limits_hierarchy_open(rt->sysroot, &rt->limits) < 0)
                rt->limits = NULL;

        if (system_read_cap_eff(rt->sysroot->proc_fd, &caps) >= 0)
                rt->privileged = caps & CAP_BIT(CAP_SYS_RESOURCE);

        r = system_read_delayacct(rt->sysroot->proc_fd);
        if (r == 0 && enable_delayacct) {
                int k = system_write_delayacct(rt->sysroot->proc_fd, true);
                if (k < 0)
                        log_warning_errno(k, "cannot switch on kernel.task_delayacct");
                else
                        log_info("switched on delay accounting (kernel.task_delayacct=1)");
                r = system_read_delayacct(rt->sysroot->proc_fd);
        }
        if (r == 0)
                log_warning("delay accounting is off (kernel.task_delayacct=0): only cpu delays are measured; "
                            "run with --enable-delayacct or set the sysctl for io, memory and irq delays");
        else if (r < 0)
                log_warning_errno(r, "cannot read kernel.task_delayacct");

        r = taskstats_netlink_new(&rt->taskstats);
        if (r >= 0) {
                /* One request for ourselves tells whether the kernel will answer at all: it refuses
                 * (EPERM) without CAP_NET_ADMIN (kernel-facts.md: taskstats-access; in another PID
                 * namespace 6.18 answers, resolving pids in the caller's namespace), and then every
                 * thread of every sample would fail the same way. */
                TaskStats self;

                r = taskstats_get_tid(rt->taskstats, getpid(), &self);
                if (r < 0)
                        rt->taskstats = taskstats_source_free(rt->taskstats);
                else {
                        rt->taskstats_version = self.version;
                        log_debug("taskstats answers with struct version %u", self.version);
                }
        }
        if (r < 0)
                log_warning_errno(r,
                                  "taskstats is unavailable%s: incidents will carry pressure and task states but "
                                  "no per-process delays",
                                  r == -EPERM ? " (the kernel refused it: CAP_NET_ADMIN is needed)" : "");

        host_info_read(rt->sysroot, &rt->host);
        runtime_exit_check(rt);
        return 0;
}

/* The exit listeners' cpus, and whether the kernel takes a registration for them: once here, so a
 * refusal is said once (at error), and the samples and kill windows do without exit records
 * rather than each hold a listener that hears nothing. */
static void runtime_exit_check(Runtime *rt) {
        TaskstatsExitListener *l = NULL;
        int r;

        r = system_read_cpus_possible(rt->sysroot->root_fd, &rt->cpus);
        if (r < 0) {
                log_warning_errno(r, "cannot read the possible cpus: exits are not heard (processes that end during a "
                                     "sample, kills)");
                return;
        }
        if (!rt->taskstats)
                return;
        r = taskstats_exit_listener_new(rt->cpus, &l);
        if (r < 0) {
                rt->exit_refused = r;
                log_error_errno(r,
                                "the kernel refused an exit listener for cpus %s: exits are not heard (processes that "
                                "end during a sample, kills)",
                                rt->cpus);
                return;
        }
        taskstats_exit_listener_free(l);
        log_debug("exit listeners register for the possible cpus %s", rt->cpus);
}

const char *runtime_exit_cpus(const Runtime *rt) {
        return rt->taskstats && rt->cpus && !rt->exit_refused ? rt->cpus : NULL;
}

void runtime_close(Runtime *rt) {
        rt->cpus = mfree(rt->cpus);
        rt->taskstats = taskstats_source_free(rt->taskstats);
        rt->limits = limits_hierarchy_free(rt->limits);
        rt->containers = container_cache_free(rt->containers);
        rt->sysroot = sysroot_free(rt->sysroot);
}

bool runtime_delayacct(const Runtime *rt) {
        return system_read_delayacct(rt->sysroot->proc_fd) == 1;
}

/* A diagnostician the load starves or reclaim pages out reports late, when it is needed most:
 * lock our (small) memory and run ahead of ordinary tasks, when allowed. An operator's own nice
 * value is kept. */
void runtime_protect_self(const Runtime *rt) {
        uint64_t caps = 0;

        /* Only with CAP_IPC_LOCK: under a finite RLIMIT_MEMLOCK, MCL_FUTURE would turn growth past
         * the limit into failed allocations. */
        if (system_read_cap_eff(rt->sysroot->proc_fd, &caps) >= 0 && (caps & CAP_BIT(CAP_IPC_LOCK))) {
                if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
                        log_debug_errno(-errno, "cannot lock the agent's memory");
        } else
                log_debug("no CAP_IPC_LOCK: the agent's memory is not locked and may be paged out under pressure");

        errno = 0;
        int nice = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && nice == 0 && setpriority(PRIO_PROCESS, 0, AGENT_NICE) < 0)
                log_debug_errno(-errno, "cannot raise the agent's priority to nice %d (CAP_SYS_NICE)", AGENT_NICE);
}

/* One fd per trigger: a node watching 1,000 cgroups needs thousands. The soft limit goes up to the
 * hard one (raising the hard limit needs CAP_SYS_RESOURCE). */
void runtime_raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(-errno, "cannot raise the open-file limit to %llu", (unsigned long long) rl.rlim_max);
}

int runtime_check_outputs(const Config *c, const char *path, char **ret_error) {
        for (size_t i = 0; i < c->n_watches; i++) {
                char why[160];
                int r = sink_path_available(c->watches[i].output, why, sizeof why);

                if (r < 0) {
                        if (asprintf(ret_error, "%s: output \"%s\": %s", path ? path : "the default config",
                                     c->watches[i].output, why) < 0)
                                return -ENOMEM;
                        return r;
                }
        }
        return 0;
}
