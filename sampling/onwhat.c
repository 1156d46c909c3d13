/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/macro.h"
#include "base/timeutil.h"
#include "probes/procfs.h"
#include "probes/schedclock.h"
#include "sampling/onwhat.h"

#define LOOKS_SIZE ((size_t) ONWHAT_LOOKS_MAX * ONWHAT_LOOK_THREADS_MAX * sizeof(BlockedThreadLook))
#define PAGE_ROUND(n) (((n) + 4095) & ~(size_t) 4095)
#define DISKS_OFFSET PAGE_ROUND(LOOKS_SIZE)
#define PAGES_SIZE (DISKS_OFFSET + PAGE_ROUND(sizeof(OnWhatDisks)))

/* The looks' threads (about 204 KiB) and the disk readings (about 90 KiB) in pages of their own:
 * zero until a sample writes them, so an agent that keeps one per concurrent sample holds none of
 * it in memory before an incident. */
static void *pages_alloc(void) {
        void *p = mmap(NULL, PAGES_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        return p == MAP_FAILED ? NULL : p;
}

/* The node's device counters at one end of an io sample. A host without /proc/diskstats (or with
 * more devices than the buffer holds) has none: the incident then names no node device. */
static bool pages_ensure(OnWhat *w) {
        char *p;

        if (w->look_threads)
                return true;
        p = pages_alloc();
        if (!p)
                return false;
        w->look_threads = (BlockedThreadLook *) p;
        w->disks = (OnWhatDisks *) (p + DISKS_OFFSET);
        return true;
}

static void read_disks(OnWhat *w, const LimitsHierarchy *h, bool end) {
        OnWhatDisks *d;

        /* An OnWhat without onwhat_init() (a snapshot's) gets its pages now. */
        if (!h || !h->sysroot || (!end && !pages_ensure(w)) || !w->disks)
                return;
        d = w->disks;
        if (end) {
                d->has_b = d->has_a && diskstats_read(h->sysroot->root_fd, d->buf, sizeof d->buf, &d->b) >= 0;
                d->b_us = now_usec(CLOCK_MONOTONIC);
                d->has_dirty = node_dirty_read(h->sysroot->root_fd, &d->dirty) >= 0;
        } else {
                d->has_a = diskstats_read(h->sysroot->root_fd, d->buf, sizeof d->buf, &d->a) >= 0;
                d->a_us = now_usec(CLOCK_MONOTONIC);
        }
}

/* The cgroup whose limit counts: the nearest limited one, else the trigger's own. */
static const char *limit_path(const LimitsLocation *loc) {
        return loc->limited ? loc->limited_path : loc->path;
}

/* One reading at loc: cpu and memory at the limited cgroup, io at the trigger's (its devices). */
static bool read_at(const LimitsHierarchy *h, const LimitsLocation *loc, PsiResource res, CpuLimits *cpu,
                    MemoryLimits *mem, IoLimits *io) {
        switch (res) {
        case PSI_RESOURCE_CPU:
                return limits_read_cpu_at(h, loc->source, limit_path(loc), cpu) >= 0;
        case PSI_RESOURCE_MEMORY:
                return limits_read_memory_at(h, loc->source, limit_path(loc), mem) >= 0;
        case PSI_RESOURCE_IO:
                return limits_read_io_at(h, loc->source, loc->path, io) >= 0;
        default:
                return false;
        }
}

/* One end's reading; at the end, also the io.max rules at the limited cgroup. */
static bool read_limits(OnWhat *w, const LimitsHierarchy *h, bool end) {
        bool ok = end ? read_at(h, &w->loc, w->resource, &w->cpu_b, &w->mem_b, &w->io_b)
                      : read_at(h, &w->loc, w->resource, &w->cpu_a, &w->mem_a, &w->io_a);

        if (ok && end && w->resource == PSI_RESOURCE_IO && w->loc.limited)
                w->has_io_max = limits_read_io_at(h, w->loc.source, w->loc.limited_path, &w->io_max) >= 0;
        return ok;
}

void onwhat_begin(OnWhat *w, const LimitsHierarchy *h, const char *path, PsiResource res) {
        w->resource = res;
        w->located = w->has_a = w->has_b = w->has_io_max = false;
        w->n_looks = 0;
        w->has_blocked = w->has_stack = false;
        w->stack_error = w->since_error = 0;
        if (w->disks)
                w->disks->has_a = w->disks->has_b = w->disks->has_dirty = false;
        /* The node's disks are read for any io sample, node-wide ones too (no cgroup, no limit). */
        if (res == PSI_RESOURCE_IO)
                read_disks(w, h, false);
        if (!h || !path)
                return;
        /* -EOPNOTSUPP: irq; -ESRCH: a v1 hierarchy and no process left to map the cgroup through. */
        if (!onwhat_locate(h, path, res, &w->loc))
                return;
        w->located = true;
        w->has_a = read_limits(w, h, false);
}

bool onwhat_locate(const LimitsHierarchy *h, const char *path, PsiResource res, LimitsLocation *ret) {
        return h && path && limits_locate(h, path, res, ret) >= 0 && ret->source != LIMITS_SOURCE_NONE;
}

void onwhat_read(const LimitsHierarchy *h, const LimitsLocation *loc, PsiResource res, char *buf, OnWhatReading *ret) {
        ret->has_limits = loc && read_at(h, loc, res, &ret->cpu, &ret->mem, &ret->io);
        ret->has_disks = false;
        if (res == PSI_RESOURCE_IO && ret->disks && buf && h && h->sysroot) {
                ret->has_disks = diskstats_read(h->sysroot->root_fd, buf, ONWHAT_DISK_BUF, ret->disks) >= 0;
                ret->disks_us = now_usec(CLOCK_MONOTONIC);
        }
}

static bool same_location(const LimitsLocation *x, const LimitsLocation *y) {
        return x->source == y->source && x->limited == y->limited && strcmp(x->path, y->path) == 0 &&
               strcmp(x->limited_path, y->limited_path) == 0;
}

void onwhat_begin_at(OnWhat *w, const LimitsLocation *loc, const OnWhatReading *rd) {
        if (w->has_a && loc && rd->has_limits && same_location(&w->loc, loc)) {
                w->cpu_a = rd->cpu;
                w->mem_a = rd->mem;
                w->io_a = rd->io;
        }
        if (w->disks && w->disks->has_a && rd->has_disks) {
                w->disks->a = *rd->disks;
                w->disks->a_us = rd->disks_us;
        }
}

/* The kernel stack of a thread seen blocked, read at once: a blocked thread moves on (or ends)
 * soon. The first readable one is kept; a refusal (no CAP_SYS_ADMIN) is not tried again. */
static void read_stack(OnWhat *w, int proc_fd, const BlockedThreadLook *l) {
        int r;

        if (w->has_stack || w->stack_error == -EACCES || w->stack_error == -EPERM)
                return;
        r = wchan_read_stack(proc_fd, l->pid, l->tid, &w->stack);
        if (r < 0) {
                w->stack_error = r; /* -ESRCH: gone already, the next one may do */
                return;
        }
        w->has_stack = true;
        w->stack_error = 0;
        memcpy(w->stack_wchan, l->wchan, sizeof w->stack_wchan);
        w->stack_wait_for = l->wait_for;
}

/* How long a thread in D has been blocked: since it last ran (kernel-facts.md: blocked-since). The
 * first reason it could not be told is kept for the incident. */
static int64_t blocked_for(OnWhat *w, SchedClockCache *clocks, const BlockedThreadLook *l, const ProcStat *st) {
        uint64_t ns;
        int r = st->has_processor ? schedclock_idle_ns(clocks, l->tid, st->processor, &ns) : -ENODATA;

        if (r < 0) {
                if (w->since_error == 0 && r != -ESRCH)
                        w->since_error = r;
                return -1;
        }
        return ns > INT64_MAX ? INT64_MAX : (int64_t) ns;
}

/* What a thread in D waits for (sampling/waitfor.h): its wchan and flags, and its kernel stack
 * when they do not tell and the agent may read stacks, at most ONWHAT_LOOK_STACKS_MAX a look. A
 * stack read here is the incident's too when it has none yet. */
static WaitFor wait_for(OnWhat *w, int proc_fd, const BlockedThreadLook *l, uint32_t flags, size_t *n_stacks) {
        WchanStack st;
        int r;

        if (!waitfor_needs_stack(l->wchan, flags) || w->stack_error == -EACCES || w->stack_error == -EPERM ||
            *n_stacks >= ONWHAT_LOOK_STACKS_MAX)
                return waitfor_classify(l->wchan, flags, NULL);
        (*n_stacks)++;
        r = wchan_read_stack(proc_fd, l->pid, l->tid, &st);
        if (r < 0) {
                if (!w->has_stack)
                        w->stack_error = r;
                return waitfor_classify(l->wchan, flags, NULL);
        }
        if (!w->has_stack) {
                w->stack = st;
                w->has_stack = true;
                w->stack_error = 0;
                memcpy(w->stack_wchan, l->wchan, sizeof w->stack_wchan);
                w->stack_wait_for = waitfor_classify(l->wchan, flags, &st);
        }
        return waitfor_classify(l->wchan, flags, &st);
}

void onwhat_look(OnWhat *w, int proc_fd, const Snapshot *s, const pid_t *pids, size_t n) {
        BlockedThreadLook *out;
        SchedClockCache clocks;
        size_t k = 0, n_stacks = 0;

        schedclock_cache_init(&clocks, proc_fd);
        if (w->n_looks >= ONWHAT_LOOKS_MAX)
                return;
        if (!pages_ensure(w))
                return; /* no look: the incident goes without "blocked" */
        out = w->look_threads + w->n_looks * ONWHAT_LOOK_THREADS_MAX;
        /* The leaders first, each with the threads the sample measured of it. */
        for (size_t p = 0; p < n && k < ONWHAT_LOOK_THREADS_MAX; p++)
                for (size_t i = 0; i < s->n && k < ONWHAT_LOOK_THREADS_MAX; i++) {
                        const ThreadDelays *t = &s->threads[i];
                        ProcStat st;

                        if (t->tgid != pids[p])
                                continue;
                        if (proc_read_stat(proc_fd, t->tid, &st) < 0)
                                continue; /* ended: nothing to see */
                        BlockedThreadLook *l = &out[k++];
                        *l = (BlockedThreadLook) { .pid = t->tgid, .tid = t->tid, .state = st.state, .blocked_ns = -1 };
                        memcpy(l->comm, st.comm, MIN(st.comm_len, sizeof l->comm - 1));
                        l->comm[MIN(st.comm_len, sizeof l->comm - 1)] = '\0';
                        if (st.state != 'D')
                                continue;
                        /* "0" (no ptrace access, or running again) leaves it "": grouped as unknown. */
                        if (wchan_read(proc_fd, t->tgid, t->tid, l->wchan, sizeof l->wchan) <= 0)
                                l->wchan[0] = '\0';
                        l->blocked_ns = blocked_for(w, &clocks, l, &st);
                        l->wait_for = wait_for(w, proc_fd, l, st.flags, &n_stacks);
                        read_stack(w, proc_fd, l);
                }
        w->n_look[w->n_looks++] = k;
}

const BlockedThreadLook *onwhat_last_look(const OnWhat *w, size_t *n) {
        *n = w->n_looks > 0 ? w->n_look[w->n_looks - 1] : 0;
        return *n > 0 ? w->look_threads + (w->n_looks - 1) * ONWHAT_LOOK_THREADS_MAX : NULL;
}

void onwhat_end(OnWhat *w, const LimitsHierarchy *h) {
        BlockedLook looks[ONWHAT_LOOKS_MAX];

        if (w->resource == PSI_RESOURCE_IO)
                read_disks(w, h, true);
        if (w->located)
                w->has_b = w->has_a && read_limits(w, h, true);
        if (w->n_looks == 0)
                return;
        for (size_t i = 0; i < w->n_looks; i++)
                looks[i] = (BlockedLook) { .threads = w->look_threads + i * ONWHAT_LOOK_THREADS_MAX,
                                           .n_threads = w->n_look[i] };
        if (blocked_group(looks, w->n_looks, &w->blocked) < 0)
                return;
        w->has_blocked = true;
}

const char *onwhat_cpu_verdict(uint64_t throttled_us, bool has_stall, uint64_t stall_us, uint64_t duration_us) {
        if (throttled_us == 0)
                return "contention";
        if (has_stall && stall_us > 0)
                return throttled_us * 2 >= stall_us ? "throttled" : "contention";
        return throttled_us * 10 >= duration_us * 3 ? "throttled" : "contention";
}

const char *onwhat_memory_verdict(const MemoryLimits *d) {
        if (d->events.has_max && d->events.max > 0)
                return "limit";
        if (d->has_high && d->high_bytes != LIMITS_UNLIMITED && d->events.has_high && d->events.high > 0)
                return "throttled";
        return "contention";
}

int onwhat_init(OnWhat *w) {
        char *p = pages_alloc();

        *w = (OnWhat) {};
        if (!p)
                return -ENOMEM;
        w->look_threads = (BlockedThreadLook *) p;
        w->disks = (OnWhatDisks *) (p + DISKS_OFFSET);
        return 0;
}

void onwhat_done(OnWhat *w) {
        if (w->look_threads)
                (void) munmap(w->look_threads, PAGES_SIZE);
        *w = (OnWhat) {};
}
