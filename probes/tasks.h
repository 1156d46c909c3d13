/* SPDX-License-Identifier: MIT */
/* Listing the threads to measure: every thread of a cgroup2 subtree (cgroup.threads of the
 * directory and all its descendants) or every thread on the host (/proc/<pid>/task/<tid>).
 * The TidList buffer is reused between samples; nothing else allocates. Never logs. */
#pragma once

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

/* Appends every thread of the cgroup at dirfd and its descendants (depth bounded at 64). A child
 * removed while walking is skipped (ENOENT/ENODEV race). Returns 0 or -errno. */
int cgroup_list_threads(int cgroup_fd, TidList *l);

/* The same for processes (cgroup.procs): one tgid per process of the subtree, for whole-process
 * taskstats queries. A threaded cgroup's processes are listed at its domain. 0 or -errno. */
int cgroup_list_processes(int cgroup_fd, TidList *l);

/* Appends the threads of process pid (/proc/<pid>/task). -ESRCH when it does not exist. */
int proc_list_process_threads(int proc_fd, pid_t pid, TidList *l);

/* Appends every thread on the host from proc_fd (/proc). Tasks that exit while listing are
 * skipped. Returns 0 or -errno. */
int proc_list_threads(int proc_fd, TidList *l);
