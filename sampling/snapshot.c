/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/magic.h>
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

static int reserve_threads(Snapshot *s, size_t n) {
        return array_reserve((void **) &s->threads, &s->cap, n, sizeof *s->threads);
}

int snapshot_reserve(Snapshot *s, size_t n) {
        int r = reserve_threads(s, n);

        return r < 0 ? r : tid_list_reserve(&s->tids, n + n / 4);
}

/* CGROUPSTATS_CMD_GET answers only for cgroup-v1 directories (EINVAL on cgroup2 by the cgroup
 * maintainers' choice; kernel-facts.md: cgroupstats); everything else counts states from /proc/<tid>/stat. */
static bool is_cgroup_v1(int fd) {
        struct statfs sfs;

        return fd >= 0 && fstatfs(fd, &sfs) >= 0 && sfs.f_type == CGROUP_SUPER_MAGIC;
}

int snapshot_take(Snapshot *s, const SampleScope *scope, bool count_states) {
        pid_t self = scope->exclude_tgid;
        bool procfs_states;
        int r;

        s->n = 0;
        s->listed = s->exited = s->errors = 0;
        s->first_error = 0;
        s->has_states = false;
        tid_list_clear(&s->tids);
        s->mono_us = now_usec(CLOCK_MONOTONIC);
        s->real_us = now_usec(CLOCK_REALTIME);

        snapshot_read_pressure(s, scope);
        s->has_cgroups = false;
        if (scope->walk_cgroups) {
                int dirfd = scope->cgroup_fd >= 0 ? scope->cgroup_fd : scope->sysroot->cgroup2_fd;
                cgroup_totals_clear(&s->cgroups);
                s->has_cgroups = dirfd >= 0 && cgroup_totals_read(dirfd, scope->cgroups_resource, &s->cgroups) >= 0;
        }

        if (scope->pid > 0)
                r = proc_list_process_threads(scope->sysroot->proc_fd, scope->pid, &s->tids);
        else if (scope->cgroup_fd >= 0)
                r = cgroup_list_threads(scope->cgroup_fd, &s->tids);
        else
                r = proc_list_threads(scope->sysroot->proc_fd, &s->tids);
        if (r < 0)
                return r;
        r = reserve_threads(s, s->tids.n);
        if (r < 0)
                return r;

        procfs_states = count_states;
        if (count_states && scope->taskstats && is_cgroup_v1(scope->cgroup_fd) &&
            taskstats_cgroupstats(scope->taskstats, scope->cgroup_fd, &s->states) >= 0) {
                s->has_states = true;
                procfs_states = false;
        }
        if (procfs_states) {
                task_state_counts_init_procfs(&s->states);
                s->has_states = true;
        }

        /* Every stride-th listed thread has its state read (stride 1 up to SAMPLE_STATES_MAX). */
        size_t stride = (s->tids.n + SAMPLE_STATES_MAX - 1) / SAMPLE_STATES_MAX;
        if (stride == 0)
                stride = 1;

        for (size_t i = 0; i < s->tids.n; i++) {
                pid_t tid = s->tids.tids[i];
                ThreadDelays *t = &s->threads[s->n];
                TaskStats ts;

                /* Our own (single) thread; other threads of ours are caught by tgid below. */
                if (self > 0 && tid == self)
                        continue;
                s->listed++;

                if (procfs_states && i % stride == 0) {
                        ProcStat st;

                        r = proc_read_stat(scope->sysroot->proc_fd, tid, &st);
                        if (r >= 0)
                                task_state_counts_add(&s->states, st.state);
                        else if (r != -ESRCH)
                                count_error(s, r);
                }

                if (!scope->taskstats)
                        continue;
                r = taskstats_get_tid(scope->taskstats, tid, &ts);
                if (r == -ESRCH) {
                        /* Exited between listing and asking: expected while tasks come and go. */
                        s->exited++;
                        continue;
                }
                if (r < 0) {
                        count_error(s, r);
                        continue;
                }
                if (self > 0 && ts.tgid == self) {
                        s->listed--;
                        continue;
                }
                s->taskstats_version = ts.version;
                *t = (ThreadDelays) {
                        .tid = tid,
                        /* v12+ carry the tgid; older kernels: treat each thread as its own process. */
                        .tgid = ts.tgid > 0 ? ts.tgid : tid,
                        .btime_s = ts.btime_s,
                        .present = ts.present,
                };
                memcpy(t->delay_ns, ts.delay_ns, sizeof t->delay_ns);
                memcpy(t->comm, ts.comm, sizeof t->comm);
                s->n++;
        }

        if (procfs_states)
                task_state_counts_scale(&s->states, s->listed - s->exited);
        if (s->n > 0)
                qsort(s->threads, s->n, sizeof *s->threads, cmp_tid);
        return 0;
}

const ThreadDelays *snapshot_find(const Snapshot *s, pid_t tid) {
        ThreadDelays key = { .tid = tid };

        if (s->n == 0)
                return NULL;
        return bsearch(&key, s->threads, s->n, sizeof *s->threads, cmp_tid);
}

void snapshot_done(Snapshot *s) {
        free(s->threads);
        tid_list_done(&s->tids);
        cgroup_totals_done(&s->cgroups);
        *s = (Snapshot) {};
}

int exit_records_add(ExitRecords *e, const TaskStats *ts) {
        if (array_grow((void **) &e->items, &e->cap, e->n, 64, sizeof *e->items) < 0)
                return -ENOMEM;
        ThreadDelays *t = &e->items[e->n++];
        *t = (ThreadDelays) {
                .tid = ts->pid,
                .tgid = ts->tgid > 0 ? ts->tgid : ts->pid,
                .btime_s = ts->btime_s,
                .present = ts->present,
        };
        memcpy(t->delay_ns, ts->delay_ns, sizeof t->delay_ns);
        memcpy(t->comm, ts->comm, sizeof t->comm);
        return 0;
}

void exit_records_collect(const TaskStats *ts, void *userdata) {
        ExitRecords *e = userdata;

        if (exit_records_add(e, ts) < 0)
                e->lost++;
}

void exit_records_clear(ExitRecords *e) {
        e->n = 0;
        e->lost = 0;
}

void exit_records_done(ExitRecords *e) {
        free(e->items);
        *e = (ExitRecords) {};
}

int snapshot_merge_exits(Snapshot *b, const Snapshot *a, const ExitRecords *e) {
        size_t n = b->n;
        int r;

        b->has_exit_listener = true;
        b->exit_records = 0;
        b->lost_exit_records = e->lost;
        for (size_t i = 0; i < e->n; i++) {
                const ThreadDelays *x = &e->items[i], *ta = snapshot_find(a, x->tid);

                /* Not one of a's threads, or its tid was reused (begin times a second apart at most:
                 * the kernel recomputes them on every query). Still in b: b has newer counters. */
                if (!ta || (ta->btime_s && x->btime_s &&
                            (ta->btime_s > x->btime_s ? ta->btime_s - x->btime_s : x->btime_s - ta->btime_s) > 1))
                        continue;
                /* bsearch's array must not be NULL, even for zero elements. */
                if (n > 0 && bsearch(x, b->threads, n, sizeof *b->threads, cmp_tid))
                        continue;
                r = reserve_threads(b, b->n + 1);
                if (r < 0)
                        return r;
                b->threads[b->n++] = *x;
                b->exit_records++;
        }
        if (b->n > n)
                qsort(b->threads, b->n, sizeof *b->threads, cmp_tid);
        return 0;
}
