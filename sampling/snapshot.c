/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/snapshot.h"
#include "probes/procfs.h"

static void count_error(Snapshot *s, int r) {
        if (s->errors++ == 0)
                s->first_error = r;
}

void snapshot_read_pressure(Snapshot *s, const SampleScope *scope) {
        bool cgroup = scope->cgroup_fd >= 0;
        int dirfd = cgroup ? scope->cgroup_fd : scope->sysroot->pressure_fd;

        for (size_t i = 0; i < SAMPLE_PRESSURE_RESOURCES; i++)
                s->has_pressure[i] = dirfd >= 0 && pressure_read_at(dirfd, pressure_file_name((PsiResource) i, cgroup),
                                                                    &s->pressure[i]) >= 0;
}

static int cmp_tid(const void *a, const void *b) {
        const ThreadDelays *x = a, *y = b;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_tgid(const void *a, const void *b) {
        const ProcessDelays *x = a, *y = b;
        return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

static int reserve_threads(Snapshot *s, size_t n) {
        return array_reserve((void **) &s->threads, &s->cap, n, sizeof *s->threads);
}

static int reserve_procs(Snapshot *s, size_t n) {
        return array_reserve((void **) &s->procs, &s->cap_procs, n, sizeof *s->procs);
}

int snapshot_reserve(Snapshot *s, size_t n, size_t p) {
        size_t detail = MIN(n, (size_t) SAMPLE_DETAIL_THREADS_MAX);

        if (reserve_threads(s, detail) < 0 || reserve_procs(s, p) < 0 || tid_list_reserve(&s->tids, detail) < 0 ||
            tid_list_reserve(&s->pids, p + p / 4) < 0 ||
            array_reserve((void **) &s->counts, &s->cap_counts, p + p / 4, sizeof *s->counts) < 0)
                return -ENOMEM;
        return 0;
}

/* CGROUPSTATS_CMD_GET answers only for cgroup-v1 directories (EINVAL on cgroup2 by the cgroup
 * maintainers' choice; kernel-facts.md: cgroupstats); everything else counts states from /proc/<tid>/stat. */
static bool is_cgroup_v1(int fd) {
        struct statfs sfs;

        return fd >= 0 && fstatfs(fd, &sfs) >= 0 && sfs.f_type == CGROUP_SUPER_MAGIC;
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return (x > y) - (x < y);
}

/* A threaded cgroup (cgroup v2 "threaded" mode) has no cgroup.procs of its own: its processes
 * are those its threads (cgroup.threads) belong to, each counted with the threads it has here.
 * They are measured whole, their threads elsewhere included. */
static int list_threaded(Snapshot *s, const SampleScope *scope) {
        size_t k = 0;
        int r;

        tid_list_clear(&s->tids);
        s->tids_pid = 0;
        r = cgroup_list_threads(scope->cgroup_fd, &s->tids);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->tids.n; i++) {
                pid_t tgid;
                if (proc_read_tgid(scope->sysroot->proc_fd, s->tids.tids[i], &tgid) < 0)
                        continue; /* ended since listed */
                r = tid_list_push(&s->pids, tgid);
                if (r < 0)
                        return r;
        }
        tid_list_clear(&s->tids);
        if (array_reserve((void **) &s->counts, &s->cap_counts, s->pids.n, sizeof *s->counts) < 0)
                return -ENOMEM;
        if (s->pids.n > 0)
                qsort(s->pids.tids, s->pids.n, sizeof *s->pids.tids, cmp_pid);
        for (size_t i = 0; i < s->pids.n; i++) {
                if (k > 0 && s->pids.tids[k - 1] == s->pids.tids[i]) {
                        s->counts[k - 1]++;
                        continue;
                }
                s->pids.tids[k] = s->pids.tids[i];
                s->counts[k++] = 1;
        }
        s->pids.n = k;
        s->threaded = true;
        return 0;
}

static int list_processes(Snapshot *s, const SampleScope *scope) {
        tid_list_clear(&s->pids);
        s->threaded = false;
        if (scope->pid > 0)
                return tid_list_push(&s->pids, scope->pid);
        if (scope->listed) {
                if (tid_list_reserve(&s->pids, scope->listed->n) < 0)
                        return -ENOMEM;
                if (scope->listed->n > 0)
                        memcpy(s->pids.tids, scope->listed->tids, scope->listed->n * sizeof *s->pids.tids);
                s->pids.n = scope->listed->n;
                return 0;
        }
        if (scope->cgroup_fd >= 0 && cgroup_is_threaded(scope->cgroup_fd))
                return list_threaded(s, scope);
        if (scope->cgroup_fd >= 0)
                return cgroup_list_processes(scope->cgroup_fd, &s->pids);
        return proc_list_processes(scope->sysroot->proc_fd, &s->pids);
}

/* Queries are made in chunks of this many (the netlink source pipelines each chunk). */
#define QUERY_CHUNK 32

static void keep_process(Snapshot *s, pid_t pid, const TaskStats *ts) {
        ProcessDelays *p = &s->procs[s->n_procs++];

        s->taskstats_version = ts->version;
        *p = (ProcessDelays) {
                .tgid = pid,
                .uid = -1,
                .origin = PROCESS_MEASURED,
                .present = ts->present,
                .cpu_run_ns = ts->cpu_run_ns,
                .has_cpu_run = ts->has_cpu_run,
                .blkio_max_ns = blkio_max_from(ts),
        };
        memcpy(p->delay_ns, ts->delay_ns, sizeof p->delay_ns);
}

/* What a culprit pass ranks on beyond taskstats, one read per process: storage bytes (/proc/<pid>/io;
 * refused for other users' processes without CAP_SYS_PTRACE: has_io stays false) or the resident
 * size and major faults of the whole process (/proc/<pid>/stat). */
static void read_usage(Snapshot *s, const SampleScope *scope) {
        long page = sysconf(_SC_PAGESIZE);

        if (scope->usage != PSI_RESOURCE_IO && scope->usage != PSI_RESOURCE_MEMORY)
                return;
        for (size_t i = 0; i < s->n_procs; i++) {
                ProcessDelays *p = &s->procs[i];
                int r;

                if (scope->usage == PSI_RESOURCE_IO) {
                        ProcIo io;
                        r = proc_read_io(scope->sysroot->proc_fd, p->tgid, &io);
                        if (r >= 0) {
                                p->read_bytes = io.read_bytes;
                                p->write_bytes = io.write_bytes;
                                p->has_io = true;
                        } else if (r != -ESRCH && r != -EACCES && r != -EPERM)
                                count_error(s, r);
                } else {
                        ProcStat st;
                        r = proc_read_process_stat(scope->sysroot->proc_fd, p->tgid, &st);
                        if (r >= 0 && st.has_rss) {
                                p->rss_bytes = st.rss_pages * (uint64_t) (page > 0 ? page : 4096);
                                p->majflt = st.majflt;
                                p->has_mem = true;
                        } else if (r < 0 && r != -ESRCH)
                                count_error(s, r);
                }
        }
}

/* One TGID query per listed process. */
static int measure_processes(Snapshot *s, const SampleScope *scope) {
        pid_t self = scope->exclude_tgid, ids[QUERY_CHUNK];
        TaskStats ts[QUERY_CHUNK];
        int errs[QUERY_CHUNK], r;
        size_t k = 0;

        s->n_procs = 0;
        s->processes = 0;
        s->exited = 0;
        r = reserve_procs(s, s->pids.n);
        if (r < 0)
                return r;
        for (size_t i = 0; i <= s->pids.n; i++) {
                if (i < s->pids.n) {
                        if (self > 0 && s->pids.tids[i] == self)
                                continue;
                        s->processes++;
                        if (!scope->taskstats)
                                continue;
                        const ProcessDelays *known =
                                scope->reuse ? snapshot_find_process(scope->reuse, s->pids.tids[i]) : NULL;
                        if (known && known->origin == PROCESS_MEASURED) {
                                /* Measured a moment ago by the sample itself (a culprit pass over
                                 * the node that holds the sampled cgroup): one query per process. */
                                ProcessDelays *p = &s->procs[s->n_procs++];
                                *p = *known;
                                p->has_io = p->has_mem = false;
                                continue;
                        }
                        ids[k++] = s->pids.tids[i];
                        if (k < QUERY_CHUNK)
                                continue;
                }
                if (k == 0)
                        continue;
                (void) taskstats_get_many(scope->taskstats, true, ids, k, ts, errs);
                for (size_t j = 0; j < k; j++) {
                        if (errs[j] == -ESRCH)
                                s->exited++; /* ended between listing and asking: expected */
                        else if (errs[j] < 0)
                                count_error(s, errs[j]);
                        else
                                keep_process(s, ids[j], &ts[j]);
                }
                k = 0;
        }
        /* Sorted for lookups. A process that moved between two cgroups while the subtree was
         * walked can be listed twice: kept once. */
        if (s->n_procs > 0)
                qsort(s->procs, s->n_procs, sizeof *s->procs, cmp_tgid);
        size_t kept = 0;
        for (size_t i = 0; i < s->n_procs; i++)
                if (kept == 0 || s->procs[kept - 1].tgid != s->procs[i].tgid)
                        s->procs[kept++] = s->procs[i];
        s->processes -= (unsigned) (s->n_procs - kept);
        s->n_procs = kept;
        read_usage(s, scope);
        return 0;
}

static void begin(Snapshot *s) {
        s->n = 0;
        tid_list_clear(&s->tids);
        s->tids_pid = 0;
        s->threads_mono_us = 0;
        s->listed = s->processes = s->exited = s->errors = 0;
        s->first_error = 0;
        s->has_states = false;
        s->blocked.n = 0;
        s->mono_us = now_usec(CLOCK_MONOTONIC);
        s->real_us = now_usec(CLOCK_REALTIME);
        s->boot_us = now_usec(CLOCK_BOOTTIME);
        s->has_exit_listener = false;
        s->exit_records = s->lost_exit_records = s->ended_unheard = s->unattributed = 0;
        memset(s->unattributed_ns, 0, sizeof s->unattributed_ns);
        s->unattributed_present = 0;
}

/* Task states: up to SAMPLE_STATES_MAX threads evenly spaced over all the threads, process after
 * process (what reading every stride-th line of cgroup.threads gave before process-first), each
 * standing for its share of the threads. A process's k-th thread is found by seeking its
 * /proc/<pid>/task (proc_task_nth()) or, where that would cost more, from its listing. So a sample
 * costs at most SAMPLE_STATES_MAX stat reads and opens each process it samples once. */

/* The threads of process pid into s->tids, kept there for the rest of the snapshot (a process
 * whose states were sampled is often the one detailed next: a 4,000-thread listing costs 2 to 4 ms
 * in /proc). A subtree of one process lists them from cgroup.threads, which costs half that.
 * With ret_task_fd, /proc/<pid>/task is opened too. 0 or -errno (-ESRCH: it ended). */
static int list_threads_of(Snapshot *s, const SampleScope *scope, pid_t pid, int *ret_task_fd) {
        int r;

        if (s->tids_pid != pid || s->tids.n == 0) {
                tid_list_clear(&s->tids);
                s->tids_pid = 0;
                if (scope->cgroup_fd >= 0 && scope->pid <= 0 && s->pids.n == 1 && s->pids.tids[0] == pid)
                        r = cgroup_list_threads(scope->cgroup_fd, &s->tids);
                else
                        r = proc_open_process_threads(scope->sysroot->proc_fd, pid, &s->tids, ret_task_fd);
                if (r < 0)
                        return r;
                s->tids_pid = pid;
                if (!ret_task_fd || *ret_task_fd >= 0)
                        return 0;
        }
        if (!ret_task_fd)
                return 0;
        r = proc_open_process_task_dir(scope->sysroot->proc_fd, pid);
        if (r < 0)
                return r;
        *ret_task_fd = r;
        return 0;
}

/* Whether seeking to n of a process's count threads costs less than listing them. procfs walks
 * the thread list from the leader at each seek: about 1 us, plus 7 to 27 ns a thread passed (6.8
 * us for the 1,000th, 54 us for the 2,000th of 4,000 threads on the test VM), where a listing
 * costs about 0.44 us a thread. So n seeks cost about n * (2 + 0.0135 * count) us (half the
 * threads passed on average, at 27 ns) against 0.44 * count + 5 us for the listing; here times
 * 500. */
static bool seek_is_cheaper(size_t n, uint64_t count) {
        return (uint64_t) n * (1000 + 7 * count) < 220 * count + 2500;
}

/* Reads the states of process i's threads at offsets off[0..n) (ascending, below its count),
 * each standing for weight threads. Seeks where procfs allows it and that costs less than a
 * listing, unless the process's listing is at hand (a one-process subtree, listed for its detail
 * anyway); lists otherwise. A thread gone since it was counted is not read: the weights read make
 * the shares. */
static void read_states_at(Snapshot *s, const SampleScope *scope, size_t i, const uint32_t *off, size_t n,
                           double weight, TaskStateWeights *w) {
        _cleanup_close_ int task_fd = -EBADF;
        pid_t pid = s->pids.tids[i];
        bool seek = scope->sysroot->proc_is_procfs && s->pids.n > 1 && seek_is_cheaper(n, s->counts[i]) &&
                    !(s->tids_pid == pid && s->tids.n > 0);
        int r;

        if (seek) {
                task_fd = proc_open_process_task_dir(scope->sysroot->proc_fd, pid);
                r = task_fd < 0 ? task_fd : 0;
        } else
                r = list_threads_of(s, scope, pid, &task_fd);
        if (r < 0) {
                if (r != -ESRCH)
                        count_error(s, r);
                return;
        }
        for (size_t k = 0; k < n; k++) {
                ProcStat st;
                pid_t tid;

                if (seek) {
                        r = proc_task_nth(task_fd, off[k], &tid);
                        if (r == -ESRCH)
                                break; /* fewer threads than counted: the rest are gone too */
                } else {
                        if (off[k] >= s->tids.n)
                                break;
                        tid = s->tids.tids[off[k]];
                        r = 0;
                }
                if (r >= 0)
                        r = proc_read_task_stat(task_fd, tid, &st);
                if (r >= 0) {
                        task_state_weights_add(w, st.state, weight);
                        task_state_blocked_note(&s->blocked, st.state, pid);
                } else if (r != -ESRCH)
                        count_error(s, r);
        }
}

/* A threaded subtree: a process's threads there are some of its threads, the others may be in
 * sibling cgroups, so the positions are taken over the subtree's own threads (cgroup.threads),
 * each read as /proc/<tid>/task/<tid>/stat. The listing is not kept as a process's. */
static void sample_states_threaded(Snapshot *s, const SampleScope *scope, TaskStateWeights *w) {
        TidList *l = &s->tids;
        int r;

        tid_list_clear(l);
        s->tids_pid = 0;
        r = cgroup_list_threads(scope->cgroup_fd, l);
        if (r < 0) {
                if (r != -ENOENT && r != -ENODEV)
                        count_error(s, r);
                tid_list_clear(l);
                return;
        }
        size_t want = MIN(l->n, (size_t) SAMPLE_STATES_MAX);
        double step = want > 0 ? (double) l->n / (double) want : 1.0;
        for (size_t j = 0; j < want; j++) {
                ProcStat st;

                pid_t tid = l->tids[(size_t) (((double) j + 0.5) * step)], tgid;

                r = proc_read_stat(scope->sysroot->proc_fd, tid, &st);
                if (r >= 0) {
                        task_state_weights_add(w, st.state, step);
                        if (st.state == 'D' && proc_read_tgid(scope->sysroot->proc_fd, tid, &tgid) >= 0)
                                task_state_blocked_note(&s->blocked, st.state, tgid);
                } else if (r != -ESRCH)
                        count_error(s, r);
        }
        tid_list_clear(l);
}

static void sample_states(Snapshot *s, const SampleScope *scope, uint64_t total) {
        TaskStateWeights w = {};
        uint32_t off[SAMPLE_STATES_MAX];
        uint64_t want = MIN(total, (uint64_t) SAMPLE_STATES_MAX), start = 0, j = 0;
        double step = want > 0 ? (double) total / (double) want : 1.0;

        if (s->threaded && scope->cgroup_fd >= 0) {
                sample_states_threaded(s, scope, &w);
                task_state_weights_finish(&w, total, &s->states);
                return;
        }
        for (size_t i = 0; i < s->pids.n && j < want; i++) {
                uint64_t end = start + s->counts[i];
                size_t n = 0;

                /* Position j is thread floor((j + 1/2) * step) of all; every thread when
                 * total <= SAMPLE_STATES_MAX. */
                for (uint64_t p; j < want && (p = (uint64_t) (((double) j + 0.5) * step)) < end; j++)
                        off[n++] = (uint32_t) (p - start);
                if (n > 0)
                        read_states_at(s, scope, i, off, n, step, &w);
                start = end;
        }
        task_state_weights_finish(&w, total, &s->states);
}

/* Counts the threads of every listed process (one stat each, the agent's own left out) and
 * their states: cgroupstats for a cgroup-v1 directory, else sampled. */
static int count_threads(Snapshot *s, const SampleScope *scope) {
        pid_t self = scope->exclude_tgid;
        uint64_t total = 0;

        if (array_reserve((void **) &s->counts, &s->cap_counts, s->pids.n, sizeof *s->counts) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->pids.n; i++) {
                if (self > 0 && s->pids.tids[i] == self)
                        s->counts[i] = 0;
                else if (!s->threaded) { /* a threaded cgroup's were counted in its listing */
                        int n = proc_count_threads(scope->sysroot->proc_fd, s->pids.tids[i]);
                        s->counts[i] = n > 0 ? (uint32_t) n : 0;
                }
                total += s->counts[i];
        }
        s->listed = (unsigned) MIN(total, (uint64_t) UINT_MAX);

        if (scope->taskstats && is_cgroup_v1(scope->cgroup_fd) &&
            taskstats_cgroupstats(scope->taskstats, scope->cgroup_fd, &s->states) >= 0) {
                s->has_states = true;
                return 0;
        }
        sample_states(s, scope, total);
        s->has_states = true;
        return 0;
}

static int take_processes(Snapshot *s, const SampleScope *scope, bool count_tasks) {
        int r = list_processes(s, scope);

        if (r >= 0 && count_tasks)
                r = count_threads(s, scope);
        return r < 0 ? r : measure_processes(s, scope);
}

int snapshot_take_processes(Snapshot *s, const SampleScope *scope, bool count_tasks) {
        begin(s);
        return take_processes(s, scope, count_tasks);
}

int snapshot_take(Snapshot *s, const SampleScope *scope, bool count_tasks) {
        begin(s);
        snapshot_read_pressure(s, scope);
        s->has_cgroups = false;
        if (scope->walk_cgroups) {
                int dirfd = scope->cgroup_fd >= 0 ? scope->cgroup_fd : scope->sysroot->cgroup2_fd;
                cgroup_totals_clear(&s->cgroups);
                s->has_cgroups = dirfd >= 0 && cgroup_totals_read(dirfd, scope->cgroups_resource, &s->cgroups) >= 0;
        }

        return take_processes(s, scope, count_tasks);
}

int snapshot_take_threads(Snapshot *s, const SampleScope *scope, const pid_t *pids, size_t n) {
        TidList *l = &s->tids;
        int r;

        s->n = 0;
        s->threads_mono_us = now_usec(CLOCK_MONOTONIC);
        if (!scope->taskstats)
                return 0;
        for (size_t k = 0; k < n; k++) {
                if (k > 0 && s->n >= SAMPLE_DETAIL_THREADS_MAX)
                        break;
                r = list_threads_of(s, scope, pids[k], NULL);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue; /* ended, or /proc refused: no detail for this one */
                /* The first process whole; the others within what is left of the budget. */
                size_t want = k == 0 ? l->n : MIN(l->n, (size_t) SAMPLE_DETAIL_THREADS_MAX - s->n);
                r = reserve_threads(s, s->n + want);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < want; i += QUERY_CHUNK) {
                        size_t c = MIN(want - i, (size_t) QUERY_CHUNK);
                        TaskStats ts[QUERY_CHUNK];
                        int errs[QUERY_CHUNK];

                        (void) taskstats_get_many(scope->taskstats, false, l->tids + i, c, ts, errs);
                        for (size_t j = 0; j < c; j++) {
                                ThreadDelays *t = &s->threads[s->n];

                                /* Ended since listed, or refused: the process total has it. A thread of
                                 * another process (a listing from cgroup.threads) is not its. */
                                if (errs[j] < 0 || (ts[j].tgid > 0 && ts[j].tgid != pids[k]))
                                        continue;
                                *t = (ThreadDelays) {
                                        .tid = l->tids[i + j],
                                        .tgid = pids[k],
                                        .btime_s = ts[j].btime_s,
                                        .present = ts[j].present,
                                };
                                memcpy(t->delay_ns, ts[j].delay_ns, sizeof t->delay_ns);
                                thread_maxima_from(t, &ts[j]);
                                memcpy(t->comm, ts[j].comm, sizeof t->comm);
                                s->n++;
                        }
                }
        }
        if (s->n > 0)
                qsort(s->threads, s->n, sizeof *s->threads, cmp_tid);
        return 0;
}

const ThreadDelays *snapshot_find_n(const Snapshot *s, size_t n, pid_t tid) {
        ThreadDelays key = { .tid = tid };

        /* bsearch's array must not be NULL, even for zero elements. */
        return n > 0 ? bsearch(&key, s->threads, n, sizeof *s->threads, cmp_tid) : NULL;
}

const ThreadDelays *snapshot_find(const Snapshot *s, pid_t tid) {
        return snapshot_find_n(s, s->n, tid);
}

const ProcessDelays *snapshot_find_process_n(const Snapshot *s, size_t n, pid_t tgid) {
        ProcessDelays key = { .tgid = tgid };

        return n > 0 ? bsearch(&key, s->procs, n, sizeof *s->procs, cmp_tgid) : NULL;
}

const ProcessDelays *snapshot_find_process(const Snapshot *s, pid_t tgid) {
        return snapshot_find_process_n(s, s->n_procs, tgid);
}

int snapshot_append_process(Snapshot *s, const ProcessDelays *p) {
        int r = reserve_procs(s, s->n_procs + 1);

        if (r >= 0)
                s->procs[s->n_procs++] = *p;
        return MIN(r, 0);
}

int snapshot_append_thread(Snapshot *s, const ThreadDelays *t) {
        int r = reserve_threads(s, s->n + 1);

        if (r >= 0)
                s->threads[s->n++] = *t;
        return MIN(r, 0);
}

void snapshot_sort(Snapshot *s) {
        if (s->n_procs > 0)
                qsort(s->procs, s->n_procs, sizeof *s->procs, cmp_tgid);
        if (s->n > 0)
                qsort(s->threads, s->n, sizeof *s->threads, cmp_tid);
}

void snapshot_mark_born(Snapshot *b, const Snapshot *a, int proc_fd) {
        long hz = sysconf(_SC_CLK_TCK);

        if (hz <= 0)
                hz = 100;
        for (size_t i = 0; i < b->n_procs; i++) {
                ProcessDelays *p = &b->procs[i];
                ProcStat st;

                p->born_in_sample = false;
                if (p->origin != PROCESS_MEASURED || snapshot_find_process(a, p->tgid))
                        continue;
                if (proc_read_stat(proc_fd, p->tgid, &st) < 0)
                        continue;
                /* starttime counts clock ticks since boot (CLOCK_BOOTTIME); one tick of slack. */
                usec_t start = (usec_t) (st.starttime_ticks + 1) * USEC_PER_SEC / (usec_t) hz;
                p->born_in_sample = start >= a->boot_us;
        }
}

void snapshot_done(Snapshot *s) {
        free(s->threads);
        free(s->procs);
        free(s->counts);
        tid_list_done(&s->tids);
        tid_list_done(&s->pids);
        cgroup_totals_done(&s->cgroups);
        *s = (Snapshot) {};
}
