/* SPDX-License-Identifier: MIT */
/* Parsers for /proc/<pid>/{stat,status,cmdline,cgroup,comm} (pure, taking bytes) and bounded
 * readers that apply them through a /proc directory fd. ESRCH/ENOENT from a task that exited are
 * returned as -ESRCH. Never logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/cgns.h"

/* TASK_COMM_LEN is 16 today; keep room for longer comms and hostile bytes. */
#define PROC_COMM_MAX 64

typedef struct ProcStat {
        char comm[PROC_COMM_MAX];
        size_t comm_len; /* raw bytes, may contain anything but NUL */
        char state;
        pid_t ppid;
        uint64_t starttime_ticks;
        uint64_t majflt;    /* a thread's own, or (/proc/<pid>/stat) its whole process's, ended threads included */
        uint64_t rss_pages; /* the address space's, shared by every thread */
        bool has_rss;
        int processor; /* field 39: the cpu it last ran on */
        bool has_processor;
        uint32_t flags; /* field 9: the task's PF_* flags (include/linux/sched.h), world-readable */
} ProcStat;

/* /proc/<pid>/io: storage bytes of the whole process, its ended threads included. */
typedef struct ProcIo {
        uint64_t read_bytes, write_bytes, cancelled_write_bytes;
} ProcIo;

/* Parses /proc/<tid>/stat: the comm is everything between the first '(' and the LAST ')', since a
 * comm may itself contain ") Z " (kernel-facts.md: comm-parsing). Returns 0 or -EINVAL. */
int proc_stat_parse_buf(const char *buf, size_t len, ProcStat *ret);

/* Parses the real uid from a /proc/<pid>/status buffer ("Uid:\t<real>\t<eff>..."). 0 or -EINVAL. */
int proc_status_parse_uid(const char *buf, size_t len, uid_t *ret);

/* Parses the process a thread belongs to from a /proc/<tid>/status buffer ("Tgid:\t<n>"). 0 or
 * -EINVAL. */
int proc_status_parse_tgid(const char *buf, size_t len, pid_t *ret);

/* Extracts the cgroup2 path from a /proc/<pid>/cgroup buffer (the "0::<path>" line). Writes at most
 * size bytes including the NUL. 0, -ENOENT when there is no unified line, -ENOBUFS when too long,
 * -EBADMSG for a record a cgroup name with a newline has forged: two "0::" lines, or a line that
 * is not "ID:CONTROLLERS:/PATH" (an empty one included). */
int proc_cgroup_parse_unified(const char *buf, size_t len, char *out, size_t size);

/* Where our cgroup namespace's root lies under s's cgroup2 mount (probes/cgns.h: cgns_locate(),
 * with our own cgroup as the kernel writes it). 0, or -errno when /proc/self/cgroup cannot be read
 * or has no cgroup2 line. */
int proc_cgroup_namespace_locate(const Sysroot *s, CgroupNamespace *ret);

/* From now on proc_read_cgroup() resolves what it reads against root, our cgroup namespace's root
 * relative to the cgroup2 mount (probes/cgns.h: cgns_locate()); NULL: as the kernel writes it. */
void proc_cgroup_set_namespace_root(const char *root);

/* What an incident says for a process whose cgroup lies outside the agent's cgroup namespace. */
#define PROC_CGROUP_OUTSIDE_NAMESPACE "outside the agent's cgroup namespace"

/* True for a path from /proc/<pid>/cgroup that lies outside the reader's cgroup namespace: the
 * kernel shows such a cgroup relative to the namespace's root, as "/.." or "/../..." (cgroup_path_ns()
 * in kernel/cgroup/cgroup.c), a path that exists nowhere under the agent's cgroup2 mount. */
bool proc_cgroup_outside_namespace(const char *path);

typedef struct ProcCgroupNamespace {
        bool differs_from_init; /* /proc/self/ns/cgroup is not /proc/1/ns/cgroup */
        unsigned scanned;       /* processes whose cgroup2 path was read */
        unsigned outside;       /* of those, outside our cgroup namespace */
        pid_t outside_pid;      /* one of them; 0 none */
} ProcCgroupNamespace;

/* Whether we run in a cgroup namespace of our own: compares /proc/self/ns/cgroup with pid 1's, and
 * reads /proc/<pid>/cgroup of up to max_scan processes listed in /proc. 0, or -errno when our own
 * namespace link cannot be read (-ENOENT: a kernel without cgroup namespaces) or /proc cannot be
 * listed. A pid 1 whose link cannot be read (another user's) counts as the same namespace. */
int proc_cgroup_namespace_read(int proc_fd, unsigned max_scan, ProcCgroupNamespace *ret);

/* Reads the thread's own stat (<tid>/task/<tid>/stat), never the thread group's. */
int proc_read_stat(int proc_fd, pid_t tid, ProcStat *ret);
/* The same from its process's /proc/<pid>/task directory (proc_open_process_threads()). */
int proc_read_task_stat(int task_fd, pid_t tid, ProcStat *ret);
/* The whole process's /proc/<pid>/stat: majflt summed over its threads, ended ones included. It
 * costs a walk of the threads in the kernel, so only culprit passes read it. */
int proc_read_process_stat(int proc_fd, pid_t pid, ProcStat *ret);
/* Parses /proc/<pid>/io (read_bytes, write_bytes, cancelled_write_bytes). 0 or -EINVAL. */
int proc_io_parse_buf(const char *buf, size_t len, ProcIo *ret);
/* Reads /proc/<pid>/io: -EACCES without ptrace read access to the process (another user's,
 * without CAP_SYS_PTRACE: kernel-facts.md: permissions), -ESRCH when it ended. */
int proc_read_io(int proc_fd, pid_t pid, ProcIo *ret);
int proc_read_uid(int proc_fd, pid_t pid, uid_t *ret);
/* The process thread tid belongs to. 0, -ESRCH (it ended), or -errno. */
int proc_read_tgid(int proc_fd, pid_t tid, pid_t *ret);
int proc_read_cgroup(int proc_fd, pid_t pid, char *out, size_t size);

/* The resident set of process pid (/proc/<pid>/statm's second field, in pages) in KiB. 0, -ESRCH
 * (gone), -EINVAL (malformed) or -errno. */
int proc_read_rss_kib(int proc_fd, pid_t pid, uint64_t *ret);

/* A process's memory from /proc/<pid>/status (kB lines, fs/proc/task_mmu.c task_mem()), and its uid. */
typedef struct ProcMemory {
        uint64_t rss_kib, anon_kib, file_kib, shmem_kib, swap_kib; /* VmRSS, RssAnon, RssFile, RssShmem, VmSwap */
        uid_t uid;
} ProcMemory;

/* Parses a status buffer. 0, or -EINVAL when a line is missing or malformed (a kernel thread has
 * no Vm lines). */
int proc_status_parse_memory(const char *buf, size_t len, ProcMemory *ret);
/* Reads /proc/<pid>/status. 0, -ESRCH (gone), -EINVAL or -errno. */
int proc_read_memory(int proc_fd, pid_t pid, ProcMemory *ret);

/* The cpu time the whole process pid (every thread, the ended ones included) has run, in us, from
 * its process cpu-time clock (clock_getcpuclockid(): ns, not /proc/<pid>/stat's clock ticks). 0 or
 * -errno (-ESRCH: gone). */
int proc_cpu_time_us(pid_t pid, uint64_t *ret);

/* Reads /proc/<pid>/comm without the trailing newline. Returns its length or -errno. */
ssize_t proc_read_comm(int proc_fd, pid_t pid, char *out, size_t size);

/* Reads /proc/<pid>/cmdline with NUL separators turned into spaces and the trailing NUL dropped
 * (truncated to size-1 bytes). Kernel threads have an empty cmdline. Returns its length or -errno. */
ssize_t proc_read_cmdline(int proc_fd, pid_t pid, char *out, size_t size);
