/* SPDX-License-Identifier: MIT */
/* Integration helper: user stacks as probes/unwind.c unwinds them from probes/perfring.c's samples
 * on the real kernel:
 *
 *   probe-unwind CGROUP2-DIR FREQ_HZ STACK_BYTES MS
 *
 * samples the cgroup on every online cpu for MS milliseconds, unwinds each sample as it is read
 * (the process alive: one UnwindProc per process, made at its first sample), and prints
 *
 *   info cpus=N kernel=0|1 build_ids=0|1 kernel_error=NAME|-     (first, once the events are on)
 *   stack PID COUNT END FRAME|FRAME|...   each distinct stack, innermost frame first; a FRAME is
 *                                         SYMBOL+0xOFF@MODULE or ?@MODULE+0xMODULE_PC or ?@-
 *   module PID ERROR DEBUG BUILD_ID PATH   each module a pc fell in
 *   cost samples=N unwound=N frames=N unwind_ns=N procs=N
 *
 * or "error <errno name> <step>" with exit 1. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probes/perfring.h"
#include "probes/unwind.h"

#define PROCS_MAX 64
#define STACKS_MAX 4096
#define KEY_MAX 4096

typedef struct Entry {
        pid_t pid;
        unsigned count;
        UnwindEnd end;
        char key[KEY_MAX];
} Entry;

static UnwindProc *procs[PROCS_MAX];
static size_t n_procs;
static Entry *entries;
static size_t n_entries;
static int proc_fd, root_fd;
static unsigned long long n_samples, n_unwound, n_frames, unwind_ns;

static long long now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static UnwindProc *proc_of(pid_t pid) {
        for (size_t i = 0; i < n_procs; i++)
                if (unwind_proc_pid(procs[i]) == pid)
                        return procs[i];
        if (n_procs == PROCS_MAX || unwind_proc_new(proc_fd, root_fd, pid, &procs[n_procs]) < 0)
                return NULL;
        return procs[n_procs++];
}

static void key_of(const UnwindProc *p, const UnwindStack *st, char *key) {
        size_t len = 0;

        key[0] = 0;
        for (size_t i = 0; i < st->n && len < KEY_MAX - 600; i++) {
                const UnwindFrame *f = &st->frames[i];
                const UnwindModule *m = f->module >= 0 ? unwind_proc_module(p, (size_t) f->module) : NULL;
                char path[512];
                const char *mod = "-";

                if (m) {
                        snprintf(path, sizeof path, "%s", m->path);
                        mod = basename(path);
                }
                if (f->symbol)
                        len += (size_t) snprintf(key + len, KEY_MAX - len, "%s%.200s+%#llx@%s", i ? "|" : "", f->symbol,
                                                 (unsigned long long) f->symbol_offset, mod);
                else if (m)
                        len += (size_t) snprintf(key + len, KEY_MAX - len, "%s?@%s+%#llx", i ? "|" : "", mod,
                                                 (unsigned long long) f->module_pc);
                else
                        len += (size_t) snprintf(key + len, KEY_MAX - len, "%s?@-", i ? "|" : "");
        }
}

static void on_record(const PerfRecord *r, void *userdata) {
        static char key[KEY_MAX];
        static UnwindStack st;
        UnwindProc *p;
        long long t;

        (void) userdata;
        if (r->kind != PERF_REC_SAMPLE)
                return;
        n_samples++;
        p = proc_of((pid_t) r->sample.id.pid);
        if (!p)
                return;
        t = now_ns();
        if (unwind_sample(p, &r->sample, &st) < 0)
                return;
        unwind_ns += (unsigned long long) (now_ns() - t);
        n_unwound++;
        n_frames += st.n;
        key_of(p, &st, key);
        for (size_t i = 0; i < n_entries; i++)
                if (entries[i].pid == unwind_proc_pid(p) && entries[i].end == st.end && !strcmp(entries[i].key, key)) {
                        entries[i].count++;
                        return;
                }
        if (n_entries < STACKS_MAX) {
                entries[n_entries] = (Entry) { .pid = unwind_proc_pid(p), .count = 1, .end = st.end };
                strcpy(entries[n_entries++].key, key);
        }
}

static int fail(int r, const char *step) {
        printf("error %s %s\n", strerrorname_np(-r), step);
        return 1;
}

static void print_modules(void) {
        for (size_t i = 0; i < n_procs; i++)
                for (size_t j = 0; j < unwind_proc_n_modules(procs[i]); j++) {
                        const UnwindModule *m = unwind_proc_module(procs[i], j);
                        char id[2 * UNWIND_BUILD_ID_MAX + 2] = "-";

                        if (!m->opened)
                                continue;
                        for (size_t k = 0; k < m->build_id_size; k++)
                                sprintf(id + 2 * k, "%02x", m->build_id[k]);
                        printf("module %d %s %d %s %s\n", (int) unwind_proc_pid(procs[i]),
                               m->error ? strerrorname_np(-m->error) : "-", m->debug_file, id, m->path);
                }
}

int main(int argc, char **argv) {
        int cpus[PERFRING_CPUS_MAX];
        PerfRingOptions o = { .ring_pages = PERFRING_PAGES_DEFAULT };
        PerfRing *ring = NULL;
        PerfRingInfo info;
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        long long end;
        int r;

        if (argc != 5) {
                fprintf(stderr, "usage: %s CGROUP2-DIR FREQ_HZ STACK_BYTES MS\n", argv[0]);
                return 2;
        }
        if (!unwind_available())
                return fail(-EOPNOTSUPP, "unwind_available");
        entries = calloc(STACKS_MAX, sizeof *entries);
        proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        root_fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        o.cgroup_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!entries || proc_fd < 0 || root_fd < 0 || o.cgroup_fd < 0)
                return fail(-errno, "open");
        o.freq_hz = (uint32_t) atoi(argv[2]);
        o.stack_bytes = (uint32_t) atoi(argv[3]);
        for (long i = 0; i < n && i < PERFRING_CPUS_MAX; i++)
                cpus[i] = (int) i;
        o.cpus = cpus;
        o.n_cpus = (size_t) (n < PERFRING_CPUS_MAX ? n : PERFRING_CPUS_MAX);
        r = perfring_open(&o, &ring);
        if (r < 0)
                return fail(r, "perfring_open");
        perfring_info(ring, &info);
        r = perfring_enable(ring);
        if (r < 0)
                return fail(r, "enable");
        printf("info cpus=%zu kernel=%d build_ids=%d kernel_error=%s\n", info.n_cpus, info.kernel_callchains,
               info.build_ids, info.kernel_error ? strerrorname_np(-info.kernel_error) : "-");
        fflush(stdout);
        end = now_ns() + atoll(argv[4]) * 1000000LL;
        while (now_ns() < end) {
                size_t nfds;
                const int *fds = perfring_fds(ring, &nfds);
                struct pollfd p[PERFRING_CPUS_MAX];

                for (size_t i = 0; i < nfds; i++)
                        p[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
                (void) poll(p, nfds, 50);
                perfring_read(ring, on_record, NULL);
        }
        (void) perfring_disable(ring);
        perfring_read(ring, on_record, NULL);
        for (size_t i = 0; i < n_entries; i++)
                printf("stack %d %u %s %s\n", (int) entries[i].pid, entries[i].count,
                       unwind_end_to_string(entries[i].end), entries[i].key[0] ? entries[i].key : "-");
        print_modules();
        printf("cost samples=%llu unwound=%llu frames=%llu unwind_ns=%llu procs=%zu\n", n_samples, n_unwound, n_frames,
               unwind_ns, n_procs);
        for (size_t i = 0; i < n_procs; i++)
                unwind_proc_free(procs[i]);
        perfring_free(ring);
        return 0;
}
