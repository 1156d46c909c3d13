/* SPDX-License-Identifier: MIT */
/* The facts `psidiag check` judges (cmd/check.h), gathered from this host: /proc and its sysctls,
 * capabilities and the LSM label, /proc/pressure and a test trigger, the cgroup mounts and the tree's
 * containers and directories, taskstats and an exit listener, /dev/kmsg, the cgroup namespace, a
 * cpu's clock. Gathering touches the host and judges nothing; what cannot be learned is an error in
 * the facts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/procfs.h"
#include "probes/sysroot.h"
#include "probes/system.h"
#include "triggers/trigger.h"

/* The containers of one runtime that the cgroup tree holds, and how many its files named. */
#define CHECK_RUNTIMES_MAX 6
typedef struct CheckRuntime {
        char runtime[16];  /* "docker", "containerd", "crio", "podman" */
        unsigned seen;     /* containers found in the tree */
        unsigned named;    /* of them, named by their runtime's files */
        char unnamed[160]; /* why the first one that was not is not */
} CheckRuntime;

typedef struct CheckFacts {
        int proc_err;                     /* opening /proc */
        int pressure_err;                 /* opening /proc/pressure */
        bool pressure[_PSI_RESOURCE_MAX]; /* which pressure files exist */
        int arm_err;                      /* arming a test trigger on /proc/pressure/cpu */
        char cgroup2_path[256];           /* "": no cgroup2 mount */
        bool cgroup2_pressure;            /* cpu.pressure at the mount's root */
        int cgroup2_write_err;            /* opening that file for writing (arming needs it) */
        char v1_controllers[128];         /* "cpu memory blkio" mounted as cgroup v1, "" none */
        char memory_v1_path[256];         /* hybrid: where memory limits come from, or "" */
        int taskstats_err;                /* asking taskstats about ourselves */
        unsigned taskstats_version;
        int exit_err;              /* registering an exit listener for the possible cpus (its acknowledgement) */
        char exit_cpus[64];        /* those cpus, as the kernel lists them (cut to fit: shown, not used) */
        int delayacct;             /* 1, 0 or -errno */
        bool delayacct_switchable; /* euid 0 with CAP_SYS_ADMIN: --enable-delayacct works */
        int caps_err;
        uint64_t cap_eff;
        int procfs_err;   /* reading another task's stat and cmdline (pid 1) */
        int kmsg_err;     /* opening /dev/kmsg for reading */
        int cgroupns_err; /* reading our cgroup namespace (proc_cgroup_namespace_read()) */
        ProcCgroupNamespace cgroupns;
        int lsm_err;                   /* reading our LSM label (system_read_lsm_label()): -EINVAL none */
        char lsm_label[128];           /* "docker-default (enforce)" */
        int cgns_err;                  /* locating our namespace's root (proc_cgroup_namespace_locate()) */
        CgroupNamespace cgns;          /* where it lies under the cgroup2 mount */
        int prekill_dir_err;           /* stat of systemd-oomd's prekill hook directory: 0 a directory */
        int sched_err;                 /* reading this cpu's clock (schedclock_now_on()): how long threads block */
        int cpus_allowed, cpus_online; /* our cpuset's cpus, the node's online ones (0: unknown) */
        int containers_err;            /* walking the cgroup tree for containers (ctrselect_walk()) */
        CheckRuntime runtimes[CHECK_RUNTIMES_MAX];
        size_t n_runtimes;
        /* The directories discovery watches (inotify) for container watches: those the walk for
         * containers goes through, the most one user (not root) owns and whose, all users'. */
        unsigned dirs, dirs_user_most, dirs_users;
        uint32_t dirs_user_uid;
        unsigned dir_watch_default; /* max_dir_watches' default */
        int inotify_err;            /* reading fs.inotify.max_user_watches */
        uint64_t inotify_max;       /* fs.inotify.max_user_watches */
        int inotify_use_err;        /* counting root's watches (system_count_inotify()) */
        InotifyUse inotify_use;     /* root's processes' watches now, psidiag's among them */
        /* cgroups that claim a container's id but were not verified as its runtime's
         * (containers/ctrverify.h), counted under no runtime, and why the first was not */
        unsigned unverified;
        char unverified_why[160];
        /* Stacks (stacks_hz): a node-wide perf sampling event opened on one cpu and closed, the
         * sysctl that decides it without CAP_PERFMON, libdw, the kernel's symbols. */
        int perf_err;
        bool perf_kernel; /* kernel callchains allowed */
        int perf_paranoid_err;
        int perf_paranoid;
        bool unwinder;
        int kallsyms_err;
} CheckFacts;

/* How many processes `check` reads the cgroup of, looking for ones outside our cgroup namespace. */
#define CHECK_CGROUPNS_SCAN_MAX 4096
/* How many of root's processes `check` reads the inotify instances of. */
#define CHECK_INOTIFY_SCAN_MAX 4096
/* How many users' directories `check` counts apart (beyond them, the rest under "users"). */
#define CHECK_DIR_OWNERS_MAX 64

/* Gathers the facts from this host. Never fails: what cannot be learned is an error in the facts. */
void check_gather(CheckFacts *f);

/* The facts of s's cgroup tree: the cgroup2 mount (its pressure files writable), the cgroup v1
 * controllers, and the containers and directories of the tree (ctrselect_walk()), each container
 * looked up as an incident names it. check_gather() on "/"; a test on a fake tree. */
void check_gather_cgroups(CheckFacts *f, const Sysroot *s);
