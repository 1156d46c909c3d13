/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/tasks.h"
#include "kills/prekill.h"

int prekill_measure_new(const char *cgroup, usec_t notified_mono_us, PrekillMeasure **ret) {
        PrekillMeasure *m = calloc(1, sizeof *m);

        if (!m)
                return -ENOMEM;
        snprintf(m->cgroup, sizeof m->cgroup, "%s", cgroup);
        m->notified_mono_us = notified_mono_us;
        m->notified_real_us = now_usec(CLOCK_REALTIME) - (now_usec(CLOCK_MONOTONIC) - notified_mono_us);
        *ret = m;
        return 0;
}

PrekillMeasure *prekill_measure_free(PrekillMeasure *m) {
        if (m) {
                free(m->procs);
                free(m);
        }
        return NULL;
}

/* The cgroup's memory: cgroup2's files, or on a hybrid host those of the v1 memcg its processes
 * are in (found as "limits" finds it). */
static void read_memory(PrekillMeasure *m, int fd, const LimitsHierarchy *h) {
        LimitsLocation loc;

        if (limits_read_memory_v2(fd, &m->memory) >= 0 && m->memory.has_current) {
                m->has_memory = true;
                return;
        }
        if (h && limits_locate(h, m->cgroup, PSI_RESOURCE_MEMORY, &loc) >= 0 && loc.source == LIMITS_SOURCE_V1 &&
            limits_read_memory_at(h, loc.source, loc.path, &m->memory) >= 0)
                m->has_memory = true;
}

int prekill_measure_cgroup(PrekillMeasure *m, const Sysroot *s, const LimitsHierarchy *h) {
        const char *rel = m->cgroup + strspn(m->cgroup, "/");
        TidList l = {};
        int fd;

        fd = s->cgroup2_fd < 0 ? -EBADF
             : rel[0]          ? openat(s->cgroup2_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                               : fcntl(s->cgroup2_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
                m->gone = true; /* ENOENT: killed and removed already, or never there */
                return 0;
        }
        m->has_pressure = pressure_read_at(fd, pressure_file_name(PSI_RESOURCE_MEMORY, true), &m->pressure) >= 0;
        read_memory(m, fd, h);
        if (cgroup_list_processes(fd, &l) < 0) {
                safe_close(fd);
                m->gone = true;
                return 0;
        }
        safe_close(fd);
        m->processes_total = l.n;
        size_t n = MIN(l.n, (size_t) PREKILL_PROCS_MAX);
        m->procs = calloc(MAX(n, (size_t) 1), sizeof *m->procs);
        if (!m->procs) {
                tid_list_done(&l);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (l.tids[i] != getpid())
                        m->procs[m->n_procs++].pid = l.tids[i];
        tid_list_done(&l);
        return 0;
}

bool prekill_measure_first(PrekillMeasure *m, const Sysroot *s, TaskstatsSource *ts, usec_t deadline) {
        for (; m->next_first < m->n_procs; m->next_first++) {
                PrekillProcess *p = &m->procs[m->next_first];
                TaskStats t;
                ssize_t n;

                if (now_usec(CLOCK_MONOTONIC) > deadline)
                        return false;
                p->has_memory = proc_read_memory(s->proc_fd, p->pid, &p->memory) >= 0;
                if (proc_read_comm(s->proc_fd, p->pid, p->comm, sizeof p->comm) < 0)
                        p->comm[0] = '\0';
                n = proc_read_cmdline(s->proc_fd, p->pid, p->cmdline, sizeof p->cmdline);
                if (n >= 0) {
                        p->cmdline_len = (size_t) n;
                        p->has_cmdline = true;
                }
                if (ts && taskstats_get_tgid(ts, p->pid, &t) >= 0) {
                        memcpy(p->first_ns, t.delay_ns, sizeof p->first_ns);
                        p->present = t.present;
                        p->has_first = true;
                        if (!p->comm[0])
                                memcpy(p->comm, t.comm, sizeof p->comm);
                }
        }
        m->first_mono_us = now_usec(CLOCK_MONOTONIC);
        return true;
}

bool prekill_measure_last(PrekillMeasure *m, TaskstatsSource *ts, usec_t deadline) {
        for (; m->next_last < m->n_procs; m->next_last++) {
                PrekillProcess *p = &m->procs[m->next_last];
                TaskStats t;

                if (now_usec(CLOCK_MONOTONIC) > deadline)
                        return false;
                if (!ts || !p->has_first || taskstats_get_tgid(ts, p->pid, &t) < 0)
                        continue; /* ESRCH: it ended between the readings; its totals stay */
                memcpy(p->last_ns, t.delay_ns, sizeof p->last_ns);
                p->present &= t.present;
                p->has_last = true;
        }
        m->last_mono_us = now_usec(CLOCK_MONOTONIC);
        return true;
}

static int by_size(const void *a, const void *b) {
        const PrekillProcess *x = a, *y = b;
        uint64_t sx = x->memory.rss_kib + x->memory.swap_kib, sy = y->memory.rss_kib + y->memory.swap_kib;

        if (sx != sy)
                return sx > sy ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void prekill_measure_rank(PrekillMeasure *m) {
        if (m->n_procs > 1)
                qsort(m->procs, m->n_procs, sizeof *m->procs, by_size);
}
