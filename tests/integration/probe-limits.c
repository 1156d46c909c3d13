/* SPDX-License-Identifier: MIT */
/* Integration helper: limits, wchans and blocked threads as probes/limits*.c, probes/wchan.c and
 * sampling/blocked.c read them on the real kernel (through the sysroot "/"):
 *
 *   probe-limits hierarchy                  one line: cpu=SRC memory=SRC io=SRC
 *   probe-limits locate RES V2PATH          source= path= limited= limited_path= via_pid=
 *   probe-limits read RES SRC PATH          the reading, key=value (io: one line per device)
 *   probe-limits sample RES V2PATH MS       locate, read path at the start and MS later: the delta
 *   probe-limits wchan PID TID              "wchan SYMBOL", or "wchan 0"
 *   probe-limits stack PID TID              "frame SYMBOL" lines, or "error ERRNO REASON"
 *   probe-limits blocked LOOKS MS PID...    LOOKS looks MS apart at the threads of the PIDs: the
 *                                           groups ("group WCHAN seen= threads=") and their threads
 *   probe-limits hold-d SECONDS             blocks its main thread in D (a CLONE_VFORK parent
 *                                           waits killable, i.e. uninterruptible, for its child)
 *
 * RES is cpu|memory|io, SRC cgroup2|cgroup-v1. Errors: "error ERRNO-NAME" and exit 1. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/limits-find.h"
#include "probes/procfs.h"
#include "sampling/blocked.h"

static int fail(int r) {
        printf("error %s\n", strerrorname_np(-r));
        return 1;
}

static int resource_of(const char *s) {
        PsiResource r = psi_resource_from_string(s);

        if (r >= 0 && r <= PSI_RESOURCE_IO)
                return (int) r;
        fprintf(stderr, "unknown resource %s\n", s);
        exit(2);
}

static LimitsSource source_of(const char *s) {
        return strcmp(s, "cgroup2") == 0 ? LIMITS_SOURCE_V2 : LIMITS_SOURCE_V1;
}

/* A value, "max" for LIMITS_UNLIMITED, "-" when absent. */
static void pv(const char *key, bool has, uint64_t v) {
        if (!has)
                printf(" %s=-", key);
        else if (v == LIMITS_UNLIMITED)
                printf(" %s=max", key);
        else
                printf(" %s=%llu", key, (unsigned long long) v);
}

static void print_cpu(const CpuLimits *c) {
        printf("source=%s", limits_source_to_string(c->source));
        pv("quota_us", c->has_quota, c->quota_us);
        pv("period_us", c->has_quota, c->period_us);
        pv("nr_periods", c->has_stat, c->nr_periods);
        pv("nr_throttled", c->has_stat, c->nr_throttled);
        pv("throttled_us", c->has_stat, c->throttled_us);
        printf("\n");
}

static void print_memory(const MemoryLimits *m) {
        printf("source=%s", limits_source_to_string(m->source));
        pv("max", m->has_max, m->max_bytes);
        pv("high", m->has_high, m->high_bytes);
        pv("soft_limit", m->has_soft_limit, m->soft_limit_bytes);
        pv("current", m->has_current, m->current_bytes);
        pv("events_max", m->events.has_max, m->events.max);
        pv("events_high", m->events.has_high, m->events.high);
        pv("oom_kill", m->events.has_oom_kill, m->events.oom_kill);
        pv("anon", m->has_anon, m->anon_bytes);
        pv("file", m->has_file, m->file_bytes);
        pv("refault_file", m->has_refault_file, m->refault_file);
        printf("\n");
}

static void print_io(const IoLimits *io) {
        printf("source=%s stat=%d max=%d devices=%zu\n", limits_source_to_string(io->source), io->has_stat, io->has_max,
               io->n_devices);
        for (size_t i = 0; i < io->n_devices; i++) {
                const IoDeviceLimits *d = &io->devices[i];

                printf("device=%u:%u name=%s", d->major, d->minor, d->name[0] ? d->name : "-");
                pv("rbytes", d->has_stat, d->rbytes);
                pv("wbytes", d->has_stat, d->wbytes);
                pv("rios", d->has_stat, d->rios);
                pv("wios", d->has_stat, d->wios);
                pv("rbps", d->has_max, d->rbps);
                pv("wbps", d->has_max, d->wbps);
                printf("\n");
        }
}

typedef union Reading {
        CpuLimits cpu;
        MemoryLimits memory;
        IoLimits io;
} Reading;

static int read_at(const LimitsHierarchy *h, int res, LimitsSource src, const char *path, Reading *ret) {
        switch (res) {
        case PSI_RESOURCE_CPU:
                return limits_read_cpu_at(h, src, path, &ret->cpu);
        case PSI_RESOURCE_MEMORY:
                return limits_read_memory_at(h, src, path, &ret->memory);
        default:
                return limits_read_io_at(h, src, path, &ret->io);
        }
}

static void print_reading(int res, const Reading *r) {
        if (res == PSI_RESOURCE_CPU)
                print_cpu(&r->cpu);
        else if (res == PSI_RESOURCE_MEMORY)
                print_memory(&r->memory);
        else
                print_io(&r->io);
}

static void sleep_ms(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int cmd_limits(int argc, char **argv) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        LimitsLocation loc;
        Reading a, b, d;
        int r, res;

        r = sysroot_open("/", &s);
        if (r >= 0)
                r = limits_hierarchy_open(s, &h);
        if (r < 0)
                return fail(r);
        if (strcmp(argv[1], "hierarchy") == 0) {
                for (PsiResource i = 0; i <= PSI_RESOURCE_IO; i++)
                        printf("%s%s=%s", i ? " " : "", psi_resource_to_string(i),
                               limits_source_to_string(h->source[i]));
                printf("\n");
                return 0;
        }
        if (argc < 4)
                return 2;
        res = resource_of(argv[2]);
        if (strcmp(argv[1], "read") == 0) {
                if (argc != 5)
                        return 2;
                r = read_at(h, res, source_of(argv[3]), argv[4], &a);
                if (r < 0)
                        return fail(r);
                print_reading(res, &a);
                return 0;
        }
        r = limits_locate(h, argv[3], (PsiResource) res, &loc);
        if (r < 0)
                return fail(r);
        if (strcmp(argv[1], "locate") == 0) {
                printf("source=%s path=/%s limited=%d limited_path=%s%s via_pid=%d\n",
                       limits_source_to_string(loc.source), loc.path, loc.limited, loc.limited ? "/" : "-",
                       loc.limited_path, (int) loc.via_pid);
                return 0;
        }
        if (strcmp(argv[1], "sample") != 0 || argc != 5)
                return 2;
        r = read_at(h, res, loc.source, loc.path, &a);
        if (r >= 0) {
                sleep_ms(atol(argv[4]));
                r = read_at(h, res, loc.source, loc.path, &b);
        }
        if (r < 0)
                return fail(r);
        if (res == PSI_RESOURCE_CPU)
                limits_cpu_delta(&a.cpu, &b.cpu, &d.cpu);
        else if (res == PSI_RESOURCE_MEMORY)
                limits_memory_delta(&a.memory, &b.memory, &d.memory);
        else
                limits_io_delta(&a.io, &b.io, &d.io);
        print_reading(res, &d);
        return 0;
}

/* One look at every thread of pids: state and wchan. Returns the number of threads put in out. */
static size_t look(int proc_fd, char **pids, int n_pids, BlockedThreadLook *out, size_t max) {
        size_t n = 0;

        for (int i = 0; i < n_pids; i++) {
                pid_t pid = (pid_t) atoi(pids[i]);
                char path[64];
                DIR *d;
                struct dirent *de;

                snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
                d = opendir(path);
                if (!d)
                        continue;
                while ((de = readdir(d)) && n < max) {
                        BlockedThreadLook *t = &out[n];
                        ProcStat st;
                        pid_t tid = (pid_t) atoi(de->d_name);

                        if (tid <= 0 || proc_read_stat(proc_fd, tid, &st) < 0)
                                continue;
                        *t = (BlockedThreadLook) { .pid = pid, .tid = tid, .state = st.state };
                        snprintf(t->comm, sizeof t->comm, "%.*s", (int) st.comm_len, st.comm);
                        if (wchan_read(proc_fd, pid, tid, t->wchan, sizeof t->wchan) <= 0)
                                t->wchan[0] = '\0';
                        n++;
                }
                closedir(d);
        }
        return n;
}

static int cmd_blocked(int n_looks, long ms, char **pids, int n_pids) {
        enum { LOOKS_MAX = 16, THREADS_MAX = 256 };
        static BlockedThreadLook threads[LOOKS_MAX][THREADS_MAX];
        BlockedLook looks[LOOKS_MAX];
        BlockedSummary s;
        int proc_fd = open("/proc", O_DIRECTORY | O_RDONLY | O_CLOEXEC), r;

        if (proc_fd < 0 || n_looks < 1 || n_looks > LOOKS_MAX)
                return 2;
        for (int l = 0; l < n_looks; l++) {
                if (l > 0)
                        sleep_ms(ms);
                looks[l] = (BlockedLook) { threads[l], look(proc_fd, pids, n_pids, threads[l], THREADS_MAX) };
        }
        r = blocked_group(looks, (size_t) n_looks, &s);
        if (r < 0)
                return fail(r);
        printf("looks=%zu seen=%llu groups=%zu\n", s.n_looks, (unsigned long long) s.seen, s.n_groups_total);
        for (size_t i = 0; i < s.n_groups; i++) {
                const BlockedGroup *g = &s.groups[i];

                printf("group %s seen=%llu threads=%zu\n", g->wchan[0] ? g->wchan : "-", (unsigned long long) g->seen,
                       g->n_threads_total);
                for (size_t j = 0; j < g->n_threads; j++)
                        printf("thread %d %d %llu %s\n", (int) g->threads[j].pid, (int) g->threads[j].tid,
                               (unsigned long long) g->threads[j].seen, g->threads[j].comm);
        }
        return 0;
}

static char child_stack[64 * 1024] __attribute__((aligned(16)));

static int vfork_child(void *arg) {
        sleep_ms(*(long *) arg);
        _exit(0);
}

int main(int argc, char **argv) {
        int proc_fd, r;

        if (argc < 2)
                return 2;
        if (strcmp(argv[1], "hold-d") == 0 && argc == 3) {
                long ms = atol(argv[2]) * 1000;
                /* The parent sleeps in wait_for_vfork_done(): TASK_KILLABLE, which /proc shows as
                 * D, until the child exits. */
                pid_t child =
                        clone(vfork_child, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &ms);
                if (child < 0)
                        return fail(-errno);
                waitpid(child, NULL, 0);
                return 0;
        }
        if (strcmp(argv[1], "blocked") == 0 && argc >= 5)
                return cmd_blocked(atoi(argv[2]), atol(argv[3]), argv + 4, argc - 4);
        if ((strcmp(argv[1], "wchan") == 0 || strcmp(argv[1], "stack") == 0) && argc == 4) {
                pid_t pid = (pid_t) atoi(argv[2]), tid = (pid_t) atoi(argv[3]);
                char w[WCHAN_SYMBOL_MAX];
                WchanStack st;

                proc_fd = open("/proc", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
                if (proc_fd < 0)
                        return fail(-errno);
                if (argv[1][0] == 'w') {
                        r = wchan_read(proc_fd, pid, tid, w, sizeof w);
                        if (r < 0)
                                return fail(r);
                        printf("wchan %s\n", r > 0 ? w : "0");
                        return 0;
                }
                r = wchan_read_stack(proc_fd, pid, tid, &st);
                if (r < 0) {
                        printf("error %s %s\n", strerrorname_np(-r), wchan_stack_error_reason(r));
                        return 1;
                }
                for (size_t i = 0; i < st.n_frames; i++)
                        printf("frame %s\n", st.frames[i]);
                return 0;
        }
        return cmd_limits(argc, argv);
}
