/* SPDX-License-Identifier: MIT */
/* Listing the tasks to measure: every process or thread of a cgroup2 subtree (cgroup.procs or
 * cgroup.threads of the directory and all its descendants) or of the host (/proc/<pid>,
 * /proc/<pid>/task/<tid>).
 * The TidList buffer is reused between samples; nothing else allocates. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct TidList {
        pid_t *tids;
        size_t n, cap;
} TidList;

void tid_list_clear(TidList *l);
void tid_list_done(TidList *l);
int tid_list_push(TidList *l, pid_t tid);
/* Makes room for n tids without a later allocation. 0 or -ENOMEM. */
int tid_list_reserve(TidList *l, size_t n);

/* Parses one cgroup.threads (or cgroup.procs) buffer, appending every tid. Malformed lines are
 * -EINVAL. */
int tid_list_parse_buf(TidList *l, const char *buf, size_t len);

/* Appends every thread of the cgroup at dirfd and its descendants, by cgroup_walk() and its error
 * policy (probes/cgwalk.h): a child removed while walking is skipped, one that cannot be read
 * (its cgroup.threads malformed, say) is left out and counted. Returns that count (0: every
 * cgroup of the subtree was listed), or -errno: cgroup_fd's own error, or -ENOMEM. */
int cgroup_list_threads(int cgroup_fd, TidList *l);

/* Whether the cgroup at cgroup_fd is in cgroup v2's threaded mode (cgroup.type "threaded"): its
 * cgroup.procs cannot be read, its threads' processes are listed at its threaded domain. */
bool cgroup_is_threaded(int cgroup_fd);

/* The same for processes (cgroup.procs): one tgid per process of the subtree, for whole-process
 * taskstats queries. A threaded cgroup's processes are listed at its domain. The same returns. */
int cgroup_list_processes(int cgroup_fd, TidList *l);

/* The processes of the cgroup at cgroup_fd itself, none of its descendants' (cgroup.procs; none
 * for a threaded cgroup). 0 or -errno. */
int cgroup_list_own_processes(int cgroup_fd, TidList *l);

/* Appends the threads of process pid (/proc/<pid>/task). -ESRCH when it does not exist. */
int proc_list_process_threads(int proc_fd, pid_t pid, TidList *l);

/* The same, leaving /proc/<pid>/task open in *ret_task_fd for reads of its threads' files (one
 * path component each instead of four). */
int proc_open_process_threads(int proc_fd, pid_t pid, TidList *l, int *ret_task_fd);

/* Opens /proc/<pid>/task. The fd, or -ESRCH when the process does not exist, or -errno. */
int proc_open_process_task_dir(int proc_fd, pid_t pid);

/* The k-th thread (from 0, in the kernel's thread-list order, the order of a listing) of the
 * process whose /proc/<pid>/task is open at task_fd, found by seeking the directory to entry k + 2
 * and reading that one entry: procfs walks the thread list to the offset without building an
 * entry for each thread it passes (kernel-facts.md: task-dir-seek), so a few threads of a large
 * process cost less than its listing. Only on procfs, where a directory offset is an index
 * (Sysroot.proc_is_procfs). -ESRCH past the last thread (the process shrank since it was counted),
 * or -errno. */
int proc_task_nth(int task_fd, size_t k, pid_t *ret_tid);

/* The number of threads of process pid: the link count of /proc/<pid>/task, which procfs makes
 * 2 + its threads (proc_task_getattr()), so one stat instead of a listing; a listing where the
 * link count says nothing (below 2). -ESRCH when it does not exist, or -errno. */
int proc_count_threads(int proc_fd, pid_t pid);

/* Appends every process on the host from proc_fd (/proc's numeric entries). 0 or -errno. */
int proc_list_processes(int proc_fd, TidList *l);

/* Appends every thread on the host from proc_fd (/proc). Tasks that exit while listing are
 * skipped. Returns 0 or -errno. */
int proc_list_threads(int proc_fd, TidList *l);
