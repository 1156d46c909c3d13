/* SPDX-License-Identifier: MIT */
/* Host facts: name, kernel release and boot id, the kernel.task_delayacct sysctl, and our
 * effective capabilities (parsed from /proc/self/status). Never logs. */
#pragma once

#include <linux/capability.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/sysroot.h"

/* Reads <proc>/sys/kernel/random/boot_id (36 chars + NUL into out). 0 or -errno. */
int system_read_boot_id(int proc_fd, char *out, size_t size);

/* Reads kernel.task_delayacct: 1 on, 0 off, -ENOENT on kernels without the sysctl, -errno. */
int system_read_delayacct(int proc_fd);
/* Writes it; 0 or -errno (-EACCES/-EPERM without privilege, -EROFS in a read-only /proc/sys). */
int system_write_delayacct(int proc_fd, bool on);

/* Reads fs.inotify.max_user_watches: the inotify watches one uid may hold, all its processes
 * together (root's: systemd's, the agent's). 0 or -errno. */
int system_read_inotify_max_watches(int proc_fd, uint64_t *ret);

/* The inotify watches the processes of uid hold, all their instances together (what
 * fs.inotify.max_user_watches limits), and those of the processes named comm among them. */
typedef struct InotifyUse {
        uint64_t watches;
        uint64_t comm_watches; /* of processes whose comm is the one asked about */
        unsigned comm_procs;
        unsigned scanned; /* processes of uid read */
        bool truncated;   /* more than max_procs: the counts are of the first max_procs */
} InotifyUse;

/* Reads <proc>/<pid>/fd and fdinfo of every process of uid (the owner of <proc>/<pid>), at most
 * max_procs of them; a process that ends meanwhile is skipped. 0 or -errno (listing <proc>). */
int system_count_inotify(int proc_fd, uid_t uid, const char *comm, unsigned max_procs, InotifyUse *ret);

/* The threads on the node: the total of /proc/loadavg's "running/total" field (the kernel's
 * nr_threads). Parse and read; 0 or -EINVAL / -errno. */
int system_parse_threads(const char *buf, size_t len, uint64_t *ret);
int system_read_threads(int proc_fd, uint64_t *ret);

/* <root>/sys/devices/system/cpu/possible: every cpu that can ever be online (hotplug included), in
 * the kernel's cpulist format, trailing space cut, malloc'ed into *ret (no length cut: as long as
 * the kernel writes it, up to 64 KiB). 0, -ENODATA (empty) or -errno. */
int system_read_cpus_possible(int root_fd, char **ret);
/* The same of <root>/sys/devices/system/cpu/online: the cpus online now. */
int system_read_cpus_online(int root_fd, char **ret);

/* The cpus of a cpu list, in order, into cpus (at most max of them; the rest are not stored): how
 * many were stored, or -EINVAL for a malformed list. */
int system_cpulist_expand(const char *list, int *cpus, size_t max);

/* The number of cpus of a cpu list ("0-3,8", as /sys/devices/system/cpu/online says); 0 for none
 * or a malformed list. */
unsigned system_cpulist_count(const char *list);

/* Parses "CapEff:\t<hex>" from a /proc/<pid>/status buffer. 0 or -EINVAL. */
int system_parse_cap_eff(const char *buf, size_t len, uint64_t *ret);
/* Reads our own effective capability mask. 0 or -errno. */
int system_read_cap_eff(int proc_fd, uint64_t *ret);

/* Our Linux security module label: <proc>/self/attr/apparmor/current (AppArmor's own, since 5.8),
 * else <proc>/self/attr/current (the first LSM's: AppArmor's or SELinux's), trailing newline and
 * NULs cut. 0, -EINVAL when no LSM answers (the file refuses the read, or is empty), or -errno. */
int system_read_lsm_label(int proc_fd, char *out, size_t size);
/* Whether the label confines us: set and not "unconfined" (AppArmor), not a profile in complain
 * mode ("name (complain)": it logs but denies nothing), not SELinux's unconfined_t. */
bool system_lsm_confines(const char *label);

/* A capability's bit in that mask; the numbers are the kernel's (CAP_NET_ADMIN, CAP_SYS_ADMIN,
 * CAP_SYS_RESOURCE, ... from linux/capability.h), the one definition the code uses. */
#define CAP_BIT(cap) (UINT64_C(1) << (cap))

/* What an incident says about the host. */
typedef struct HostInfo {
        char hostname[256];
        char kernel[256];
        char boot_id[64];
} HostInfo;

/* Fills ret from uname(2) and the sysroot's boot id; "unknown" for what cannot be read. */
void host_info_read(const Sysroot *sysroot, HostInfo *ret);
