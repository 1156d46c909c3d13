/* SPDX-License-Identifier: MIT */
/* The records of a perf_event ring buffer, parsed: pure functions over bytes, no syscalls, for the
 * one record layout probes/perfring.h opens (PERFSAMPLE_TYPE with sample_id_all, mmap2, comm and
 * task; kernel-facts.md: perf-sample-layout). perfsample_parse() reads one record,
 * perfsample_ring_walk() the records between a ring's tail and head, those that wrap the ring's
 * end copied out first. Every size field is checked against the bytes it claims: a record that
 * lies is rejected and counted, never read past. Opening, mapping and enabling the events is
 * probes/perfring.h's; unwinding and symbolising is the caller's. Never logs. */
#pragma once

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What each sample carries (perf_event_attr.sample_type); sample_id_all = 1 gives every other
 * record a trailer of the same TID, TIME and CPU. */
#define PERFSAMPLE_TYPE                                                                                                \
        (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN |               \
         PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define PERFSAMPLE_ID_BYTES 24 /* the trailer: pid, tid; time; cpu, res */

/* The kernel's default perf_event_max_stack, asked as sample_max_stack; the callchain adds at most
 * perf_event_max_contexts_per_stack (8) context markers. A longer callchain is rejected. */
#define PERFSAMPLE_STACK_DEPTH 127
#define PERFSAMPLE_IPS_MAX 192
#define PERFSAMPLE_REGS_MAX 64 /* a sample_regs_user mask has 64 bits */

typedef enum PerfRecordKind {
        PERF_REC_SAMPLE,
        PERF_REC_MMAP2,
        PERF_REC_COMM,
        PERF_REC_FORK,
        PERF_REC_EXIT,
        PERF_REC_LOST,  /* PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES */
        PERF_REC_OTHER, /* throttling and the rest: framed, not parsed */
} PerfRecordKind;

typedef struct PerfSampleId {
        uint32_t pid, tid, cpu;
        uint64_t time_ns; /* CLOCK_MONOTONIC as probes/perfring.c opens them (use_clockid) */
} PerfSampleId;

typedef struct PerfSample {
        PerfSampleId id;
        uint64_t ip;
        bool user; /* the interrupted context was user mode (PERF_RECORD_MISC_USER) */
        /* The callchain split at its context markers (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER),
         * markers left out, innermost first; entries under other contexts (hypervisor, guest) are
         * counted in n_other_ips and dropped. */
        size_t n_kernel_ips, n_user_ips, n_other_ips;
        uint64_t kernel_ips[PERFSAMPLE_IPS_MAX];
        uint64_t user_ips[PERFSAMPLE_IPS_MAX];
        /* The user registers at the sample: regs_abi PERF_SAMPLE_REGS_ABI_64 (or _32) and regs[i]
         * for each bit i of regs_mask (the PERF_REG_X86_* numbering on x86-64); abi NONE and
         * regs_mask 0 when the sample hit a kernel thread. */
        uint64_t regs_abi, regs_mask;
        uint64_t regs[PERFSAMPLE_REGS_MAX];
        /* A copy of the user stack from the sampled sp: stack_size bytes in the record, of which
         * the first stack_dyn_size were copied from the task (the rest is padding). Points into
         * the bytes given to the parser: valid only during the callback. NULL and 0 for a kernel
         * thread or an exiting task. */
        const uint8_t *stack;
        uint64_t stack_size, stack_dyn_size;
} PerfSample;

typedef struct PerfMmap2 {
        PerfSampleId id;
        uint32_t pid, tid;
        uint64_t addr, len, pgoff;
        uint32_t prot, flags;
        /* PERF_RECORD_MISC_MMAP_BUILD_ID: the kernel gave the build-id instead of the inode. */
        bool has_build_id;
        uint8_t build_id_size;
        uint8_t build_id[20];
        uint32_t maj, min;
        uint64_t ino, ino_generation;
        bool data;            /* PERF_RECORD_MISC_MMAP_DATA: not executable */
        const char *filename; /* NUL-terminated inside the record; valid during the callback */
} PerfMmap2;

typedef struct PerfComm {
        PerfSampleId id;
        uint32_t pid, tid;
        bool exec; /* PERF_RECORD_MISC_COMM_EXEC: the name changed at an exec */
        char comm[16];
} PerfComm;

typedef struct PerfTask {
        PerfSampleId id;
        uint32_t pid, ppid, tid, ptid;
        uint64_t time_ns;
} PerfTask;

typedef struct PerfLost {
        uint64_t lost; /* records the kernel could not write */
} PerfLost;

typedef struct PerfRecord {
        PerfRecordKind kind;
        uint32_t type; /* perf_event_header.type */
        union {
                PerfSample sample;
                PerfMmap2 mmap2;
                PerfComm comm;
                PerfTask task; /* FORK and EXIT */
                PerfLost lost;
        };
} PerfRecord;

/* One record of rec_len bytes, its perf_event_header first, for events opened with sample_type
 * PERFSAMPLE_TYPE, sample_id_all and sample_regs_user regs_mask. 0 and *ret filled (its pointers
 * into rec); -EBADMSG when the header's size is not rec_len, or a field claims bytes the record
 * has not (a callchain nr, a register count, a stack size, a missing NUL or trailer). */
int perfsample_parse(const uint8_t *rec, size_t rec_len, uint64_t regs_mask, PerfRecord *ret);

typedef struct PerfRingStats {
        uint64_t records; /* framed and handed on or rejected */
        uint64_t samples, mmap2, comm, task, other;
        uint64_t lost;      /* the sum of PERF_RECORD_LOST's counts */
        uint64_t malformed; /* rejected by perfsample_parse() */
        uint64_t corrupt;   /* the ring's own framing broken: the rest skipped */
        uint64_t wrapped;   /* records copied out across the ring's end */
} PerfRingStats;

/* Called for each record parsed; the record and what it points to live until it returns. */
typedef void (*PerfRecordFn)(const PerfRecord *r, void *userdata);

/* The scratch a wrapped record is copied into: a record's size is a u16. */
#define PERFSAMPLE_SCRATCH_BYTES 65536

/* Walks the records between tail and head (the ring's free-running positions) of a ring's data of
 * data_size bytes (a power of two), copying a record that crosses the end into scratch
 * (PERFSAMPLE_SCRATCH_BYTES), parsing each and calling fn. A head more than data_size past tail,
 * a header smaller than itself or a record past head are counted in stats->corrupt and the rest
 * skipped. *ret_tail: where the reader is now, head. 0; -EINVAL when data_size is not a power of
 * two of at least a page or scratch is missing. */
int perfsample_ring_walk(const uint8_t *data, size_t data_size, uint64_t tail, uint64_t head, uint64_t regs_mask,
                         uint8_t *scratch, PerfRingStats *stats, PerfRecordFn fn, void *userdata, uint64_t *ret_tail);
