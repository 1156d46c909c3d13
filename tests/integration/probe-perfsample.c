/* SPDX-License-Identifier: MIT */
/* Integration helper: on-cpu samples as probes/perfring.c takes them on the real kernel:
 *
 *   probe-perfsample CGROUP2-DIR|-TID FREQ_HZ STACK_BYTES MS
 *
 * opens one event per online cpu for the cgroup (or, "-TID", for that thread), enables them,
 * reads the rings every 50 ms for MS milliseconds, disables and closes them, and prints one line
 * per record kind it saw and the stats:
 *
 *   info cpus=N kernel=0|1 build_ids=0|1 kernel_error=NAME|-
 *   sample pid tid cpu n_kernel n_user stack_size dyn_size regs_abi sp ip     (the first 20)
 *   mmap2 pid addr len pgoff build_id_size|- filename                      (each)
 *   comm pid tid name / exit pid tid
 *   stats records samples mmap2 comm task lost malformed corrupt wrapped
 *
 * or "error <errno name> <step>" with exit 1. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probes/perfring.h"

static unsigned samples_printed;

static void on_record(const PerfRecord *r, void *userdata) {
        (void) userdata;
        switch (r->kind) {
        case PERF_REC_SAMPLE:
                if (samples_printed++ < 20)
                        printf("sample %u %u %u %zu %zu %llu %llu %llu %#llx %#llx\n", r->sample.id.pid,
                               r->sample.id.tid, r->sample.id.cpu, r->sample.n_kernel_ips, r->sample.n_user_ips,
                               (unsigned long long) r->sample.stack_size, (unsigned long long) r->sample.stack_dyn_size,
                               (unsigned long long) r->sample.regs_abi, (unsigned long long) r->sample.regs[7],
                               (unsigned long long) r->sample.regs[8]);
                break;
        case PERF_REC_MMAP2:
                printf("mmap2 %u %#llx %#llx %#llx ", r->mmap2.pid, (unsigned long long) r->mmap2.addr,
                       (unsigned long long) r->mmap2.len, (unsigned long long) r->mmap2.pgoff);
                if (r->mmap2.has_build_id)
                        printf("%u ", r->mmap2.build_id_size);
                else
                        printf("- ");
                printf("%s\n", r->mmap2.filename);
                break;
        case PERF_REC_COMM:
                printf("comm %u %u %s\n", r->comm.pid, r->comm.tid, r->comm.comm);
                break;
        case PERF_REC_EXIT:
                printf("exit %u %u\n", r->task.pid, r->task.tid);
                break;
        default:
                break;
        }
}

static int fail(int r, const char *step) {
        printf("error %s %s\n", strerrorname_np(-r), step);
        return 1;
}

static long long now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
        int cpus[PERFRING_CPUS_MAX];
        PerfRingOptions o = { .cgroup_fd = -1, .ring_pages = PERFRING_PAGES_DEFAULT };
        PerfRing *ring = NULL;
        PerfRingInfo info;
        const PerfRingStats *st;
        long n = sysconf(_SC_NPROCESSORS_ONLN), ms;
        int cg = -1, r;
        long long end;

        if (argc != 5) {
                fprintf(stderr, "usage: %s CGROUP2-DIR|-TID FREQ_HZ STACK_BYTES MS\n", argv[0]);
                return 2;
        }
        if (argv[1][0] == '-')
                o.tid = atoi(argv[1] + 1);
        else {
                cg = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (cg < 0)
                        return fail(-errno, "open");
                o.cgroup_fd = cg;
        }
        o.freq_hz = (uint32_t) atoi(argv[2]);
        o.stack_bytes = (uint32_t) atoi(argv[3]);
        ms = atol(argv[4]);
        for (long i = 0; i < n && i < PERFRING_CPUS_MAX; i++)
                cpus[i] = (int) i;
        o.cpus = cpus;
        o.n_cpus = (size_t) (n < PERFRING_CPUS_MAX ? n : PERFRING_CPUS_MAX);

        r = perfring_open(&o, &ring);
        if (r < 0)
                return fail(r, "perfring_open");
        perfring_info(ring, &info);
        printf("info cpus=%zu kernel=%d build_ids=%d kernel_error=%s\n", info.n_cpus, info.kernel_callchains,
               info.build_ids, info.kernel_error ? strerrorname_np(-info.kernel_error) : "-");
        fflush(stdout);
        r = perfring_enable(ring);
        if (r < 0)
                return fail(r, "enable");
        end = now_ms() + ms;
        while (now_ms() < end) {
                size_t nfds;
                const int *fds = perfring_fds(ring, &nfds);
                struct pollfd p[PERFRING_CPUS_MAX];

                for (size_t i = 0; i < nfds; i++)
                        p[i] = (struct pollfd) { .fd = fds[i], .events = POLLIN };
                (void) poll(p, nfds, 50);
                perfring_read(ring, on_record, NULL);
        }
        r = perfring_disable(ring);
        if (r < 0)
                return fail(r, "disable");
        perfring_read(ring, on_record, NULL);
        st = perfring_stats(ring);
        printf("stats %llu %llu %llu %llu %llu %llu %llu %llu %llu\n", (unsigned long long) st->records,
               (unsigned long long) st->samples, (unsigned long long) st->mmap2, (unsigned long long) st->comm,
               (unsigned long long) st->task, (unsigned long long) st->lost, (unsigned long long) st->malformed,
               (unsigned long long) st->corrupt, (unsigned long long) st->wrapped);
        perfring_free(ring);
        if (cg >= 0)
                close(cg);
        return 0;
}
