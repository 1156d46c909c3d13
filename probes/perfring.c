/* SPDX-License-Identifier: MIT */
/* The ring protocol is include/uapi/linux/perf_event.h's (struct perf_event_mmap_page): data_head
 * read with acquire semantics before the data, data_tail stored with release semantics after it,
 * the mapping PROT_WRITE so that the kernel never overwrites what we have not read (it counts
 * PERF_RECORD_LOST instead; kernel-facts.md: perf-ring). */
#include "probes/perfring.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

#include "base/macro.h"

typedef struct Cpu {
        int fd;
        void *map;
        size_t map_len;
} Cpu;

struct PerfRing {
        size_t n;
        Cpu *cpus;
        int *fds;
        size_t data_size;
        uint64_t regs_mask;
        PerfRingInfo info;
        PerfRingStats stats;
        uint8_t *scratch;
};

uint64_t perfring_regs_mask(void) {
#if defined(__x86_64__)
        uint64_t m = 0;

        for (int i = PERF_REG_X86_AX; i <= PERF_REG_X86_IP; i++)
                m |= UINT64_C(1) << i;
        for (int i = PERF_REG_X86_R8; i <= PERF_REG_X86_R15; i++)
                m |= UINT64_C(1) << i;
        return m;
#else
        return 0;
#endif
}

static void attr_fill(const PerfRingOptions *o, bool kernel, bool build_id, struct perf_event_attr *a) {
        size_t data_size = (size_t) o->ring_pages * (size_t) sysconf(_SC_PAGESIZE);

        *a = (struct perf_event_attr) {
                .size = sizeof *a,
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_CPU_CLOCK,
                .sample_freq = o->freq_hz,
                .freq = 1,
                .sample_type = PERFSAMPLE_TYPE,
                .sample_regs_user = perfring_regs_mask(),
                .sample_stack_user = o->stack_bytes,
                .sample_max_stack = PERFSAMPLE_STACK_DEPTH,
                .sample_id_all = 1,
                .disabled = 1,
                .exclude_guest = 1,
                .exclude_hv = 1,
                .exclude_kernel = !kernel,
                .exclude_callchain_kernel = !kernel,
                /* mmap2 alone writes nothing: account_event() counts nr_mmap_events, which
                 * perf_event_mmap() tests first, only for attr.mmap or mmap_data; with mmap2 set
                 * too, perf_event_mmap_output() writes MMAP2 (kernel-facts.md: perf-ring). */
                .mmap = 1,
                .mmap2 = 1,
                .comm = 1,
                .comm_exec = 1,
                .task = 1,
                .build_id = build_id,
                /* Times in CLOCK_MONOTONIC, the clock of the agent's own timestamps. */
                .use_clockid = 1,
                .clockid = CLOCK_MONOTONIC,
                /* A poller wakes when a quarter of the ring is full. */
                .watermark = 1,
                .wakeup_watermark = (uint32_t) (data_size / 4),
        };
}

static int event_open(struct perf_event_attr *a, pid_t pid, int cpu, unsigned long flags) {
        long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, flags | PERF_FLAG_FD_CLOEXEC);

        return fd < 0 ? -errno : (int) fd;
}

/* The first cpu's event decides what the kernel allows, and every other cpu is opened alike. */
static int open_first(const PerfRingOptions *o, pid_t pid, unsigned long flags, PerfRingInfo *info,
                      struct perf_event_attr *ret) {
        bool kernel = true, build_id = true;

        for (;;) {
                struct perf_event_attr a;
                int fd;

                attr_fill(o, kernel, build_id, &a);
                fd = event_open(&a, pid, o->cpus[0], flags);
                if (fd >= 0) {
                        info->kernel_callchains = kernel;
                        info->build_ids = build_id;
                        *ret = a;
                        return fd;
                }
                /* attr.build_id is 5.12's; an older kernel's perf_copy_attr() refuses bits it does
                 * not know with E2BIG or EINVAL (kernel-facts.md: perf-ring). */
                if ((fd == -EINVAL || fd == -E2BIG) && build_id) {
                        build_id = false;
                        continue;
                }
                /* perf_event_paranoid > 1 without CAP_PERFMON refuses kernel samples
                 * (perf_allow_kernel()): go on with the user part (kernel-facts.md: perf-ring). */
                if ((fd == -EACCES || fd == -EPERM) && kernel) {
                        kernel = false;
                        info->kernel_error = fd;
                        continue;
                }
                return fd;
        }
}

static int ring_map(PerfRing *r, Cpu *c) {
        long page = sysconf(_SC_PAGESIZE);
        void *m;

        c->map_len = page + r->data_size;
        m = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        c->map = m;
        return 0;
}

static bool options_valid(const PerfRingOptions *o) {
        return o->n_cpus >= 1 && o->n_cpus <= PERFRING_CPUS_MAX && o->cpus && o->freq_hz >= 1 &&
               o->freq_hz <= PERFRING_FREQ_MAX_HZ && o->stack_bytes <= PERFRING_STACK_MAX_BYTES &&
               o->stack_bytes % 8 == 0 && o->ring_pages >= 1 && o->ring_pages <= PERFRING_PAGES_MAX &&
               (o->ring_pages & (o->ring_pages - 1)) == 0 && o->tid >= 0 && (o->cgroup_fd < 0 || o->tid == 0);
}

int perfring_open(const PerfRingOptions *o, PerfRing **ret) {
        _cleanup_(perfring_freep) PerfRing *r = NULL;
        struct perf_event_attr a;
        unsigned long flags = 0;
        pid_t pid;
        int k;

        if (!options_valid(o))
                return -EINVAL;
        if (perfring_regs_mask() == 0)
                return -EOPNOTSUPP;
        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->cpus = calloc(o->n_cpus, sizeof *r->cpus);
        r->fds = calloc(o->n_cpus, sizeof *r->fds);
        r->scratch = malloc(PERFSAMPLE_SCRATCH_BYTES);
        if (!r->cpus || !r->fds || !r->scratch)
                return -ENOMEM;
        for (size_t i = 0; i < o->n_cpus; i++)
                r->cpus[i].fd = -1;
        r->data_size = (size_t) o->ring_pages * (size_t) sysconf(_SC_PAGESIZE);
        r->regs_mask = perfring_regs_mask();
        if (o->cgroup_fd >= 0) {
                pid = o->cgroup_fd;
                flags = PERF_FLAG_PID_CGROUP;
        } else
                pid = o->tid > 0 ? o->tid : -1;

        k = open_first(o, pid, flags, &r->info, &a);
        if (k < 0)
                return k;
        r->cpus[0].fd = k;
        r->n = 1;
        for (size_t i = 1; i < o->n_cpus; i++) {
                k = event_open(&a, pid, o->cpus[i], flags);
                if (k < 0)
                        return k;
                r->cpus[i].fd = k;
                r->n++;
        }
        for (size_t i = 0; i < r->n; i++) {
                k = ring_map(r, &r->cpus[i]);
                if (k < 0)
                        return k;
                r->fds[i] = r->cpus[i].fd;
        }
        r->info.n_cpus = r->n;
        *ret = TAKE_PTR(r);
        return 0;
}

PerfRing *perfring_free(PerfRing *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                if (r->cpus[i].map)
                        munmap(r->cpus[i].map, r->cpus[i].map_len);
                if (r->cpus[i].fd >= 0)
                        close(r->cpus[i].fd);
        }
        free(r->cpus);
        free(r->fds);
        free(r->scratch);
        free(r);
        return NULL;
}

void perfring_info(const PerfRing *r, PerfRingInfo *ret) {
        *ret = r->info;
}

static int ioctl_all(PerfRing *r, unsigned long req) {
        int first = 0;

        for (size_t i = 0; i < r->n; i++)
                if (ioctl(r->cpus[i].fd, req, 0) < 0 && first == 0)
                        first = -errno;
        return first;
}

int perfring_enable(PerfRing *r) {
        return ioctl_all(r, PERF_EVENT_IOC_ENABLE);
}

int perfring_disable(PerfRing *r) {
        return ioctl_all(r, PERF_EVENT_IOC_DISABLE);
}

void perfring_read(PerfRing *r, PerfRecordFn fn, void *userdata) {
        long page = sysconf(_SC_PAGESIZE);

        for (size_t i = 0; i < r->n; i++) {
                struct perf_event_mmap_page *mp = r->cpus[i].map;
                const uint8_t *data = (const uint8_t *) r->cpus[i].map + page;
                uint64_t head, tail, new_tail;

                /* The acquire pairs with the kernel's store of data_head after the records
                 * (perf_output_put_handle()): the records up to head are visible to us. */
                head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
                tail = mp->data_tail; /* ours alone to write */
                if (perfsample_ring_walk(data, r->data_size, tail, head, r->regs_mask, r->scratch, &r->stats, fn,
                                         userdata, &new_tail) < 0)
                        continue;
                /* The release orders our reads of the records before the kernel may reuse them. */
                __atomic_store_n(&mp->data_tail, new_tail, __ATOMIC_RELEASE);
        }
}

const PerfRingStats *perfring_stats(const PerfRing *r) {
        return &r->stats;
}

const int *perfring_fds(const PerfRing *r, size_t *ret_n) {
        *ret_n = r->n;
        return r->fds;
}
