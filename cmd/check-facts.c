/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "cmd/check-facts.h"
#include "config/keys.h"
#include "config/model.h"
#include "containers/containers.h"
#include "containers/ctrselect.h"
#include "probes/kallsyms.h"
#include "probes/perfring.h"
#include "probes/pressure.h"
#include "probes/procfs.h"
#include "probes/schedclock.h"
#include "probes/sysroot.h"
#include "probes/system.h"
#include "probes/taskstats.h"
#include "probes/unwind.h"
#include "triggers/psi.h"

typedef struct DirOwner {
        uint32_t uid;
        unsigned n;
} DirOwner;

typedef struct Tally {
        CheckFacts *f;
        ContainerCache *cache;
        int cgroup2_fd;
        DirOwner owners[CHECK_DIR_OWNERS_MAX];
        size_t n_owners;
} Tally;

/* A directory discovery would watch, counted under its owner (root's or a user's). */
static void tally_dir(Tally *t, const char *path) {
        struct stat st;
        DirOwner *o = NULL;

        if (fstatat(t->cgroup2_fd, path, &st, AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) < 0)
                return; /* gone */
        t->f->dirs++;
        if (st.st_uid == 0 || st.st_uid == geteuid())
                return;
        t->f->dirs_users++;
        for (size_t i = 0; i < t->n_owners && !o; i++)
                if (t->owners[i].uid == st.st_uid)
                        o = &t->owners[i];
        if (!o && t->n_owners < CHECK_DIR_OWNERS_MAX) {
                o = &t->owners[t->n_owners++];
                *o = (DirOwner) { .uid = st.st_uid };
        }
        if (o && ++o->n > t->f->dirs_user_most) {
                t->f->dirs_user_most = o->n;
                t->f->dirs_user_uid = o->uid;
        }
}

/* Each container of the tree counted under its runtime, named or not (and why not). */
static int tally(const char *path, CtrselectKind kind, void *userdata) {
        Tally *t = userdata;
        const ContainerInfo *info;
        CheckRuntime *rt = NULL;

        if (kind == CTRSELECT_PARENT) {
                tally_dir(t, path);
                return 0;
        }
        info = container_cache_lookup(t->cache, path);
        if (!info) /* "<ns>/<id>" that containerd has no task of: walked as a parent */
                return 0;
        if (info->unverified[0]) {
                if (t->f->unverified++ == 0)
                        snprintf(t->f->unverified_why, sizeof t->f->unverified_why, "%s", info->unverified);
                return kind == CTRSELECT_MAYBE ? 1 : 0;
        }
        for (size_t i = 0; i < t->f->n_runtimes && !rt; i++)
                if (strcmp(t->f->runtimes[i].runtime, info->runtime) == 0)
                        rt = &t->f->runtimes[i];
        if (!rt && t->f->n_runtimes < CHECK_RUNTIMES_MAX) {
                rt = &t->f->runtimes[t->f->n_runtimes++];
                snprintf(rt->runtime, sizeof rt->runtime, "%s", info->runtime);
        }
        if (rt) {
                rt->seen++;
                if (!info->unnamed[0])
                        rt->named++;
                else if (!rt->unnamed[0])
                        snprintf(rt->unnamed, sizeof rt->unnamed, "%s", info->unnamed);
        }
        return kind == CTRSELECT_MAYBE ? 1 : 0;
}

/* The containers the cgroup tree holds, each looked up as an incident would name it. */
static void gather_containers(CheckFacts *f, const Sysroot *s) {
        _cleanup_(container_cache_freep) ContainerCache *cache = NULL;
        Tally t = { .f = f, .cgroup2_fd = s->cgroup2_fd };
        int r;

        if (s->cgroup2_fd < 0) {
                f->containers_err = -ENOENT;
                return;
        }
        r = container_cache_new(s->root_fd, s->proc_fd, s->cgroup2_fd, CONTAINER_CACHE_MAX, &cache);
        if (r >= 0) {
                t.cache = cache;
                /* one walk's lookups parse podman's containers.json once (container_cache_done()) */
                r = ctrselect_walk(s->cgroup2_fd, tally, &t);
                container_cache_done(cache);
        }
        f->containers_err = r < 0 ? r : 0;
}

static void gather_pressure(CheckFacts *f, const Sysroot *s) {
        PsiTriggerSpec spec = { PSI_RESOURCE_CPU, PSI_STALL_SOME, 500 * USEC_PER_MSEC, 2 * USEC_PER_SEC };
        int fd = -EBADF;

        f->pressure_err = s->pressure_fd < 0 ? -ENOENT : 0;
        if (s->pressure_fd < 0)
                return;
        for (PsiResource r = 0; r < _PSI_RESOURCE_MAX; r++)
                f->pressure[r] = faccessat(s->pressure_fd, pressure_file_name(r, false), F_OK, 0) == 0;
        f->arm_err = psi_trigger_open(s->pressure_fd, pressure_file_name(PSI_RESOURCE_CPU, false), &spec, &fd);
        safe_close(fd);
}

static void gather_mounts(CheckFacts *f, const Sysroot *s) {
        snprintf(f->cgroup2_path, sizeof f->cgroup2_path, "%s", s->cgroup2_path ? s->cgroup2_path : "");
        snprintf(f->memory_v1_path, sizeof f->memory_v1_path, "%s", s->memory_v1_path ? s->memory_v1_path : "");
        if (s->cgroup2_fd >= 0) {
                int fd = openat(s->cgroup2_fd, "cpu.pressure", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
                f->cgroup2_pressure = fd >= 0 || errno != ENOENT;
                f->cgroup2_write_err = fd >= 0 ? 0 : -errno;
                safe_close(fd);
        }
        /* The sysroot read mountinfo once for every mount we use. */
        snprintf(f->v1_controllers, sizeof f->v1_controllers, "%s", s->v1_controllers);
}

/* What the agent's exit listeners ask: exits on every possible cpu, acknowledged. */
static void gather_exit_listener(CheckFacts *f, const Sysroot *s) {
        _cleanup_free_ char *cpus = NULL;
        TaskstatsExitListener *l = NULL;

        f->exit_err = f->taskstats_err < 0 ? f->taskstats_err : system_read_cpus_possible(s->root_fd, &cpus);
        if (f->exit_err < 0)
                return;
        snprintf(f->exit_cpus, sizeof f->exit_cpus, "%s", cpus);
        f->exit_err = taskstats_exit_listener_new(cpus, &l);
        taskstats_exit_listener_free(l);
}

void check_gather_cgroups(CheckFacts *f, const Sysroot *s) {
        gather_mounts(f, s);
        gather_containers(f, s);
}

/* Discovery's inotify watches: its default limit, the kernel's, and what root's processes hold. */
static void gather_inotify(CheckFacts *f, const Sysroot *s) {
        f->dir_watch_default = (unsigned) config_keys_default("max_dir_watches");
        f->inotify_err = system_read_inotify_max_watches(s->proc_fd, &f->inotify_max);
        f->inotify_use_err = system_count_inotify(s->proc_fd, 0, "psidiag", CHECK_INOTIFY_SCAN_MAX, &f->inotify_use);
}

/* Taskstats asked about ourselves, as the agent asks about every task. */
static void gather_taskstats(CheckFacts *f) {
        TaskstatsSource *ts = NULL;

        f->taskstats_err = taskstats_netlink_new(&ts);
        if (f->taskstats_err >= 0) {
                TaskStats self;
                f->taskstats_err = taskstats_get_tid(ts, getpid(), &self);
                if (f->taskstats_err >= 0)
                        f->taskstats_version = self.version;
        }
        taskstats_source_free(ts);
}

/* What the agent may do: delay accounting (and switching it), its capabilities, its LSM label. */
static void gather_privileges(CheckFacts *f, const Sysroot *s) {
        f->delayacct = system_read_delayacct(s->proc_fd);
        f->caps_err = system_read_cap_eff(s->proc_fd, &f->cap_eff);
        f->lsm_err = system_read_lsm_label(s->proc_fd, f->lsm_label, sizeof f->lsm_label);
        f->delayacct_switchable = f->caps_err >= 0 && geteuid() == 0 && (f->cap_eff & CAP_BIT(CAP_SYS_ADMIN));
}

/* Another task's /proc entries (pid 1's stat and cmdline), as a sample reads every process's. */
static void gather_procfs(CheckFacts *f, const Sysroot *s) {
        ProcStat st;
        char cmdline[64];

        f->procfs_err = proc_read_stat(s->proc_fd, 1, &st);
        if (f->procfs_err >= 0) {
                ssize_t n = proc_read_cmdline(s->proc_fd, 1, cmdline, sizeof cmdline);
                f->procfs_err = n < 0 ? (int) n : 0;
        }
}

static void gather_prekill_dir(CheckFacts *f) {
        struct stat hook;

        f->prekill_dir_err = stat(CONFIG_PREKILL_SYSTEMD_DIR, &hook) < 0 ? -errno
                             : S_ISDIR(hook.st_mode)                     ? 0
                                                                         : -ENOTDIR;
}

/* This cpu's clock read where it runs (how long threads block), and the cpus we may run on. */
static void gather_sched(CheckFacts *f, const Sysroot *s) {
        uint64_t now_ns;
        cpu_set_t cpus;
        int cpu = sched_getcpu();

        f->sched_err = cpu < 0 ? -errno : schedclock_now_on(s->proc_fd, cpu, &now_ns);
        f->cpus_allowed = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 0;
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        f->cpus_online = online > 0 && online < INT32_MAX ? (int) online : 0;
}

static void gather_kmsg(CheckFacts *f) {
        int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat kst;

        f->kmsg_err = fd < 0 ? -errno : fstat(fd, &kst) < 0 ? -errno : 0;
        /* Masked (systemd's ProtectKernelLogs= where it cannot make a device node, as in a
         * container): an empty file of mode 0000, which CAP_DAC_READ_SEARCH opens. */
        if (f->kmsg_err == 0 && !S_ISCHR(kst.st_mode))
                f->kmsg_err = -ENODEV;
        safe_close(fd);
}

/* What stacks_hz needs: the events a capture opens (one cpu's, node-wide), libdw, kallsyms. */
static void gather_stacks(CheckFacts *f, const Sysroot *s) {
        char buf[32];
        int cpu = sched_getcpu();
        PerfRing *ring = NULL;
        PerfRingOptions o = {
                .cpus = &cpu, .n_cpus = 1, .cgroup_fd = -1, .freq_hz = 1, .stack_bytes = 8, .ring_pages = 1
        };
        KallSyms *k = NULL;

        f->perf_err = cpu < 0 ? -errno : perfring_open(&o, &ring);
        if (f->perf_err >= 0) {
                PerfRingInfo info;
                perfring_info(ring, &info);
                f->perf_kernel = info.kernel_callchains;
        }
        perfring_free(ring);
        ssize_t n = read_file_at(s->proc_fd, "sys/kernel/perf_event_paranoid", buf, sizeof buf - 1);
        f->perf_paranoid_err = n < 0 ? (int) n : 0;
        if (n >= 0) {
                buf[n] = '\0';
                f->perf_paranoid = atoi(buf);
        }
        f->unwinder = unwind_available();
        f->kallsyms_err = kallsyms_load(s->proc_fd, &k);
        kallsyms_free(k);
}

void check_gather(CheckFacts *f) {
        Sysroot *s = NULL;

        *f = (CheckFacts) {};
        f->proc_err = sysroot_open("/", &s);
        if (f->proc_err < 0) {
                f->pressure_err = f->taskstats_err = f->delayacct = f->caps_err = f->procfs_err = f->proc_err;
                f->kmsg_err = -ENOENT;
                f->cgroupns_err = f->proc_err;
                f->perf_err = f->perf_paranoid_err = f->kallsyms_err = f->proc_err;
                return;
        }
        gather_pressure(f, s);
        check_gather_cgroups(f, s);
        gather_inotify(f, s);
        gather_taskstats(f);
        gather_exit_listener(f, s);
        gather_privileges(f, s);
        gather_procfs(f, s);
        f->cgroupns_err = proc_cgroup_namespace_read(s->proc_fd, CHECK_CGROUPNS_SCAN_MAX, &f->cgroupns);
        f->cgns_err = proc_cgroup_namespace_locate(s, &f->cgns);
        gather_prekill_dir(f);
        gather_sched(f, s);
        gather_kmsg(f);
        gather_stacks(f, s);
        sysroot_free(s);
}
