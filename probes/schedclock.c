/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "base/fileio.h"
#include "base/parse.h"
#include "probes/schedclock.h"

#define SCHED_BUF 4096 /* se.exec_start is the first field, on the third line */

int schedclock_parse_exec_start(const char *buf, size_t len, uint64_t *ret_ns) {
        static const char key[] = "se.exec_start";
        const char *end = buf + len, *p = buf;
        uint64_t ms, frac = 0;
        int digits = 0;

        for (;;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                if ((size_t) (le - p) > sizeof key - 1 && memcmp(p, key, sizeof key - 1) == 0 &&
                    (p[sizeof key - 1] == ' ' || p[sizeof key - 1] == ':')) {
                        const char *q = memchr(p, ':', (size_t) (le - p));
                        if (!q)
                                return -EINVAL;
                        for (q++; q < le && *q == ' '; q++)
                                ;
                        if (parse_u64_prefix(q, le, &ms, &q) < 0 || ms > UINT64_MAX / 1000000)
                                return -EINVAL;
                        if (q < le && *q == '.')
                                for (q++; q < le && *q >= '0' && *q <= '9'; q++, digits++)
                                        if (digits < 6)
                                                frac = frac * 10 + (uint64_t) (*q - '0');
                        if (q != le || digits > 6)
                                return -EINVAL;
                        for (; digits < 6; digits++)
                                frac *= 10;
                        *ret_ns = ms * 1000000 + frac;
                        return 0;
                }
                if (!nl)
                        return -EINVAL;
                p = nl + 1;
        }
}

static int read_exec_start(int proc_fd, const char *path, uint64_t *ret_ns) {
        char buf[SCHED_BUF];
        ssize_t n = read_file_at(proc_fd, path, buf, sizeof buf);

        if (n < 0)
                return n == -ENOENT ? -ESRCH : (int) n;
        return schedclock_parse_exec_start(buf, (size_t) n, ret_ns);
}

int schedclock_read_exec_start(int proc_fd, pid_t tid, uint64_t *ret_ns) {
        char path[32];

        /* /proc/<tid>: a thread's own directory, though readdir lists leaders only; its task/
         * directory has no sched file. */
        snprintf(path, sizeof path, "%d/sched", (int) tid);
        return read_exec_start(proc_fd, path, ret_ns);
}

int schedclock_now_on(int proc_fd, int cpu, uint64_t *ret_ns) {
        cpu_set_t had, on;
        int r;

        if (cpu < 0 || cpu >= CPU_SETSIZE)
                return -EINVAL;
        if (sched_getaffinity(0, sizeof had, &had) < 0)
                return -errno;
        if (!CPU_ISSET(cpu, &had))
                return -EINVAL;
        CPU_ZERO(&on);
        CPU_SET(cpu, &on);
        /* Returns on cpu: the kernel moves a thread off a cpu no longer allowed before it returns. */
        if (sched_setaffinity(0, sizeof on, &on) < 0)
                return -errno;
        /* A reschedule stamps se.exec_start with this cpu's clock now (it is otherwise at most a
         * tick old). */
        (void) sched_yield();
        r = read_exec_start(proc_fd, "thread-self/sched", ret_ns);
        if (sched_setaffinity(0, sizeof had, &had) < 0 && r >= 0)
                r = -errno;
        return r;
}

void schedclock_cache_init(SchedClockCache *c, int proc_fd) {
        c->proc_fd = proc_fd;
        c->n = 0;
}

int schedclock_idle_ns(SchedClockCache *c, pid_t tid, int cpu, uint64_t *ret_ns) {
        uint64_t start, now;
        size_t i;
        int r = schedclock_read_exec_start(c->proc_fd, tid, &start);

        if (r < 0)
                return r;
        for (i = 0; i < c->n && c->cpus[i].cpu != cpu; i++)
                ;
        if (i == c->n) {
                if (c->n == SCHEDCLOCK_CPUS_MAX)
                        return -E2BIG;
                c->cpus[i].cpu = cpu;
                c->cpus[i].error = schedclock_now_on(c->proc_fd, cpu, &c->cpus[i].now_ns);
                c->n++;
        }
        if (c->cpus[i].error < 0)
                return c->cpus[i].error;
        now = c->cpus[i].now_ns;
        /* 0: reset by a migration (migrate_task_rq_fair()); ahead: it ran on cpu after our read. */
        if (start == 0 || start > now)
                return -ENODATA;
        *ret_ns = now - start;
        return 0;
}
