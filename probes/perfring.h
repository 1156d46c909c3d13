/* SPDX-License-Identifier: MIT */
/* On-cpu samples from the kernel: one PERF_COUNT_SW_CPU_CLOCK sampling event per cpu
 * (perf_event_open), of one cgroup2 cgroup, one thread or every task, each with its callchain,
 * its user registers and a copy of its user stack, and the MMAP2, COMM, FORK and EXIT records a
 * later unwinder needs to map addresses to modules and build-ids; each cpu's ring buffer mapped
 * and read (probes/perfsample.h parses what it holds). Opened for a capture and closed after it:
 * nothing stays open, nothing costs, while no capture runs. Unwinding and symbolising are a
 * higher layer's. Never logs. x86-64 only (the registers asked are its own); elsewhere
 * perfring_open() says -EOPNOTSUPP. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probes/perfsample.h"

#define PERFRING_CPUS_MAX 256
#define PERFRING_FREQ_MAX_HZ 1000 /* a capture's bound, far under perf_event_max_sample_rate */
#define PERFRING_STACK_MAX_BYTES 32768
#define PERFRING_STACK_DEFAULT_BYTES 16384
#define PERFRING_PAGES_MAX 512 /* data pages per cpu, a power of two */
#define PERFRING_PAGES_DEFAULT 128

/* The user registers each sample carries: those an x86-64 DWARF unwinder starts from (ip, sp, bp
 * and the other general-purpose registers a CFA rule or a restored register may name; the DWARF
 * registers 0 to 16 of the x86-64 psABI), as a sample_regs_user mask of PERF_REG_X86_* bits.
 * 0 on other architectures. */
uint64_t perfring_regs_mask(void);

typedef struct PerfRingOptions {
        const int *cpus; /* the cpus to sample, each opened on its own */
        size_t n_cpus;
        int cgroup_fd;        /* a cgroup2 directory fd (PERF_FLAG_PID_CGROUP), or -1 */
        pid_t tid;            /* with cgroup_fd -1: one thread (perf_event_open's pid is a task), or 0: all tasks */
        uint32_t freq_hz;     /* 1 to PERFRING_FREQ_MAX_HZ */
        uint32_t stack_bytes; /* 0 to PERFRING_STACK_MAX_BYTES, a multiple of 8; 0: no stack copy */
        uint32_t ring_pages;  /* 1 to PERFRING_PAGES_MAX, a power of two */
} PerfRingOptions;

/* What was opened, for `check` and the incident to say. */
typedef struct PerfRingInfo {
        size_t n_cpus;
        bool kernel_callchains; /* false: perf_event_paranoid refused them, events exclude_kernel */
        bool build_ids;         /* the kernel gives build-ids in MMAP2 (PERF_RECORD_MISC_MMAP_BUILD_ID) */
        int kernel_error;       /* why kernel callchains were dropped (-EACCES...), or 0 */
} PerfRingInfo;

typedef struct PerfRing PerfRing;

/* Opens and maps one event per cpu of o, disabled. Kernel callchains are asked first and dropped
 * (exclude_kernel) when the kernel refuses them (EACCES or EPERM, perf_event_paranoid), saying so
 * in the info; build-ids likewise on a kernel that lacks them (EINVAL, before 5.12). 0; -EINVAL
 * on an option out of bounds; -EACCES/-EPERM when sampling is not allowed at all (without
 * CAP_PERFMON a cpu-wide or cgroup event needs perf_event_paranoid <= 0); -ENODEV for a cpu that
 * is offline; -EOPNOTSUPP off x86-64; other -errno. */
int perfring_open(const PerfRingOptions *o, PerfRing **ret);
PerfRing *perfring_free(PerfRing *r);
static inline void perfring_freep(PerfRing **r) {
        perfring_free(*r);
}

void perfring_info(const PerfRing *r, PerfRingInfo *ret);

/* PERF_EVENT_IOC_ENABLE / _DISABLE on every cpu's event. 0 or -errno. */
int perfring_enable(PerfRing *r);
int perfring_disable(PerfRing *r);

/* Reads what every ring holds now: each record parsed and handed to fn (perfsample_ring_walk()),
 * each ring's tail moved past it so the kernel may reuse the space. stats add up over calls. */
void perfring_read(PerfRing *r, PerfRecordFn fn, void *userdata);
const PerfRingStats *perfring_stats(const PerfRing *r);

/* The ring fds, for a caller that polls them (POLLIN at the wakeup watermark); n via ret_n. */
const int *perfring_fds(const PerfRing *r, size_t *ret_n);
