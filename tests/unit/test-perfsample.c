/* SPDX-License-Identifier: MIT */
/* The perf ring's records (probes/perfsample.h), built by hand as perf_output_sample() and
 * perf_event_mmap_output() lay them out: a sample with kernel and user callchains, registers and a
 * stack copy; MMAP2 with a build-id and with an inode; COMM, EXIT and LOST; a record wrapping the
 * ring's end; and records that lie about their sizes, each rejected and counted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probes/perfsample.h"
#include "tests/unit/test-util.h"

#define MASK ((1ULL << 6) | (1ULL << 7) | (1ULL << 8)) /* bp, sp, ip */

typedef struct Buf {
        uint8_t b[PERFSAMPLE_SCRATCH_BYTES];
        size_t n;
} Buf;

static void put(Buf *b, const void *p, size_t n) {
        assert_true(b->n + n <= sizeof b->b);
        memcpy(b->b + b->n, p, n);
        b->n += n;
}

static void u64(Buf *b, uint64_t v) {
        put(b, &v, 8);
}

static void u32s(Buf *b, uint32_t x, uint32_t y) {
        put(b, &x, 4);
        put(b, &y, 4);
}

static void header(Buf *b, uint32_t type, uint16_t misc) {
        b->n = 0;
        put(b, &type, 4);
        put(b, &misc, 2);
        put(b, &(uint16_t) { 0 }, 2);
}

static void finish(Buf *b) {
        uint16_t size = (uint16_t) b->n;

        memcpy(b->b + 6, &size, 2);
}

static void id(Buf *b, uint32_t pid) {
        u32s(b, pid, pid);
        u64(b, 5000);
        u32s(b, 1, 0);
}

/* A sample of pid 42 on cpu 1: kernel frames k, user frames u, the stack of stack_size bytes
 * (dyn bytes copied). */
static void sample(Buf *b, const uint64_t *k, size_t nk, const uint64_t *u, size_t nu, uint64_t stack_size,
                   uint64_t dyn) {
        header(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
        u64(b, 0x401000);
        u32s(b, 42, 43);
        u64(b, 123456789);
        u32s(b, 1, 0);
        u64(b, (nk ? nk + 1 : 0) + (nu ? nu + 1 : 0));
        if (nk) {
                u64(b, (uint64_t) PERF_CONTEXT_KERNEL);
                for (size_t i = 0; i < nk; i++)
                        u64(b, k[i]);
        }
        if (nu) {
                u64(b, (uint64_t) PERF_CONTEXT_USER);
                for (size_t i = 0; i < nu; i++)
                        u64(b, u[i]);
        }
        u64(b, PERF_SAMPLE_REGS_ABI_64);
        u64(b, 0xb0);       /* bp */
        u64(b, 0x7ffc0000); /* sp */
        u64(b, 0x401000);   /* ip */
        u64(b, stack_size);
        if (stack_size) {
                for (uint64_t i = 0; i < stack_size; i++)
                        put(b, &(uint8_t) { (uint8_t) i }, 1);
                u64(b, dyn);
        }
        finish(b);
}

static void mmap2(Buf *b, bool build_id, const char *name) {
        char pad[8] = {};
        size_t len = strlen(name) + 1;

        header(b, PERF_RECORD_MMAP2, build_id ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0);
        u32s(b, 42, 42);
        u64(b, 0x400000);
        u64(b, 0x2000);
        u64(b, 0x1000);
        if (build_id) {
                uint8_t u[24] = { 20 };

                for (int i = 0; i < 20; i++)
                        u[4 + i] = (uint8_t) (0xa0 + i);
                put(b, u, 24);
        } else {
                u32s(b, 8, 1);
                u64(b, 777);
                u64(b, 3);
        }
        u32s(b, 5, 2); /* PROT_READ|PROT_EXEC, MAP_PRIVATE */
        put(b, name, len);
        put(b, pad, (8 - len % 8) % 8);
        id(b, 42);
        finish(b);
}

static int parse(const Buf *b, PerfRecord *r) {
        return perfsample_parse(b->b, b->n, MASK, r);
}

static void test_sample(void **state) {
        static Buf b;
        static PerfRecord r;
        const uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 }, u[] = { 0x401000, 0x401234, 0x7f0000001000 };

        sample(&b, k, 2, u, 3, 64, 40);
        assert_int_equal(parse(&b, &r), 0);
        assert_int_equal(r.kind, PERF_REC_SAMPLE);
        assert_int_equal(r.sample.id.pid, 42);
        assert_int_equal(r.sample.id.tid, 43);
        assert_int_equal(r.sample.id.cpu, 1);
        assert_int_equal(r.sample.id.time_ns, 123456789);
        assert_int_equal(r.sample.ip, 0x401000);
        assert_true(r.sample.user);
        assert_int_equal(r.sample.n_kernel_ips, 2);
        assert_int_equal(r.sample.kernel_ips[1], 0xffffffff81000020);
        assert_int_equal(r.sample.n_user_ips, 3);
        assert_int_equal(r.sample.user_ips[2], 0x7f0000001000);
        assert_int_equal(r.sample.regs_abi, PERF_SAMPLE_REGS_ABI_64);
        assert_int_equal(r.sample.regs[6], 0xb0);
        assert_int_equal(r.sample.regs[7], 0x7ffc0000);
        assert_int_equal(r.sample.regs[8], 0x401000);
        assert_int_equal(r.sample.stack_size, 64);
        assert_int_equal(r.sample.stack_dyn_size, 40);
        assert_int_equal(r.sample.stack[63], 63);

        /* A kernel thread: no user part, abi NONE and no registers, stack size 0 and no dyn_size. */
        header(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
        u64(&b, 0xffffffff81000010);
        u32s(&b, 0, 0);
        u64(&b, 1);
        u32s(&b, 0, 0);
        u64(&b, 2);
        u64(&b, (uint64_t) PERF_CONTEXT_KERNEL);
        u64(&b, 0xffffffff81000010);
        u64(&b, PERF_SAMPLE_REGS_ABI_NONE);
        u64(&b, 0);
        finish(&b);
        assert_int_equal(parse(&b, &r), 0);
        assert_false(r.sample.user);
        assert_int_equal(r.sample.n_kernel_ips, 1);
        assert_int_equal(r.sample.n_user_ips, 0);
        assert_int_equal(r.sample.regs_mask, 0);
        assert_null(r.sample.stack);
        assert_int_equal(r.sample.stack_size, 0);
}

static void test_hostile_sample(void **state) {
        static Buf b;
        static PerfRecord r;
        const uint64_t u[] = { 0x401000 };
        uint64_t v;

        /* The header's size is not the record's. */
        sample(&b, NULL, 0, u, 1, 16, 16);
        b.b[6]++;
        assert_int_equal(parse(&b, &r), -EBADMSG);
        /* Cut anywhere: never accepted. */
        sample(&b, NULL, 0, u, 1, 16, 16);
        for (size_t n = 0; n < b.n; n++) {
                Buf c = {};
                memcpy(c.b, b.b, n);
                c.n = n;
                finish(&c);
                assert_int_equal(parse(&c, &r), -EBADMSG);
        }
        /* A callchain nr past the record, and past any callchain the kernel writes. */
        sample(&b, NULL, 0, u, 1, 16, 16);
        v = 1000;
        memcpy(b.b + 40, &v, 8);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        v = 3;
        memcpy(b.b + 40, &v, 8);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        /* A stack size past the record (the offset of size: 48 + 2 ips + abi + 3 regs). */
        sample(&b, NULL, 0, u, 1, 16, 16);
        v = 1u << 20;
        memcpy(b.b + 48 + 16 + 8 + 24, &v, 8);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        v = UINT64_MAX;
        memcpy(b.b + 48 + 16 + 8 + 24, &v, 8);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        /* A dyn_size larger than the stack copy. */
        sample(&b, NULL, 0, u, 1, 16, 17);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        /* An abi that is none of the kernel's. */
        sample(&b, NULL, 0, u, 1, 16, 16);
        v = 9;
        memcpy(b.b + 48 + 16, &v, 8);
        assert_int_equal(parse(&b, &r), -EBADMSG);
        /* Bytes after the stack: a layout other than ours. */
        sample(&b, NULL, 0, u, 1, 16, 16);
        u64(&b, 0);
        finish(&b);
        assert_int_equal(parse(&b, &r), -EBADMSG);
}

static void test_mmap2_comm_task(void **state) {
        static Buf b;
        static PerfRecord r;

        mmap2(&b, true, "/usr/bin/psidiag-workload");
        assert_int_equal(parse(&b, &r), 0);
        assert_int_equal(r.kind, PERF_REC_MMAP2);
        assert_true(r.mmap2.has_build_id);
        assert_int_equal(r.mmap2.build_id_size, 20);
        assert_int_equal(r.mmap2.build_id[19], 0xa0 + 19);
        assert_int_equal(r.mmap2.addr, 0x400000);
        assert_int_equal(r.mmap2.len, 0x2000);
        assert_int_equal(r.mmap2.pgoff, 0x1000);
        assert_int_equal(r.mmap2.prot, 5);
        assert_string_equal(r.mmap2.filename, "/usr/bin/psidiag-workload");
        assert_int_equal(r.mmap2.id.time_ns, 5000);

        mmap2(&b, false, "/lib/x86_64-linux-gnu/libc.so.6");
        assert_int_equal(parse(&b, &r), 0);
        assert_false(r.mmap2.has_build_id);
        assert_int_equal(r.mmap2.maj, 8);
        assert_int_equal(r.mmap2.ino, 777);
        assert_string_equal(r.mmap2.filename, "/lib/x86_64-linux-gnu/libc.so.6");

        /* A filename without its NUL, and a build-id longer than its 20 bytes. */
        mmap2(&b, false, "/123456");
        b.b[b.n - PERFSAMPLE_ID_BYTES - 1] = 'x';
        assert_int_equal(parse(&b, &r), -EBADMSG);
        mmap2(&b, true, "/x");
        b.b[40] = 21;
        assert_int_equal(parse(&b, &r), -EBADMSG);

        header(&b, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
        u32s(&b, 42, 42);
        put(&b, "a-name-longer-than-16\0\0\0", 24);
        id(&b, 42);
        finish(&b);
        assert_int_equal(parse(&b, &r), 0);
        assert_int_equal(r.kind, PERF_REC_COMM);
        assert_true(r.comm.exec);
        assert_string_equal(r.comm.comm, "a-name-longer-t");

        header(&b, PERF_RECORD_EXIT, 0);
        u32s(&b, 42, 1);
        u32s(&b, 43, 1);
        u64(&b, 99);
        id(&b, 42);
        finish(&b);
        assert_int_equal(parse(&b, &r), 0);
        assert_int_equal(r.kind, PERF_REC_EXIT);
        assert_int_equal(r.task.tid, 43);
        assert_int_equal(r.task.time_ns, 99);
        /* No trailer. */
        b.n -= PERFSAMPLE_ID_BYTES;
        finish(&b);
        assert_int_equal(parse(&b, &r), -EBADMSG);

        header(&b, PERF_RECORD_LOST, 0);
        u64(&b, 7);
        u64(&b, 12);
        id(&b, 0);
        finish(&b);
        assert_int_equal(parse(&b, &r), 0);
        assert_int_equal(r.kind, PERF_REC_LOST);
        assert_int_equal(r.lost.lost, 12);
}

typedef struct Seen {
        size_t n;
        uint32_t pids[64];
        uint64_t stack_sizes[64];
} Seen;

static void on_record(const PerfRecord *r, void *userdata) {
        Seen *s = userdata;

        if (r->kind == PERF_REC_SAMPLE && s->n < 64) {
                s->pids[s->n] = r->sample.id.pid;
                s->stack_sizes[s->n++] = r->sample.stack_size;
        }
}

/* Writes rec into the ring at free-running position pos, wrapping. */
static void ring_put(uint8_t *ring, size_t size, uint64_t pos, const Buf *b) {
        for (size_t i = 0; i < b->n; i++)
                ring[(pos + i) & (size - 1)] = b->b[i];
}

static void test_ring(void **state) {
        static uint8_t ring[4096], scratch[PERFSAMPLE_SCRATCH_BYTES];
        static Buf b;
        const uint64_t u[] = { 0x401000, 0x401100 };
        PerfRingStats st = {};
        Seen seen = {};
        uint64_t tail = 8192 + 4096 - 200, head = tail, out;

        /* Three samples from near the end of a ring that has gone round twice: the second wraps. */
        sample(&b, NULL, 0, u, 2, 128, 128);
        for (int i = 0; i < 3; i++) {
                ring_put(ring, sizeof ring, head, &b);
                head += b.n;
        }
        assert_int_equal(
                perfsample_ring_walk(ring, sizeof ring, tail, head, MASK, scratch, &st, on_record, &seen, &out), 0);
        assert_int_equal(out, head);
        assert_int_equal(seen.n, 3);
        assert_int_equal(seen.pids[1], 42);
        assert_int_equal(seen.stack_sizes[1], 128);
        assert_int_equal(st.samples, 3);
        assert_int_equal(st.wrapped, 1);
        assert_int_equal(st.malformed, 0);

        /* A lost record counts what it says. */
        header(&b, PERF_RECORD_LOST, 0);
        u64(&b, 7);
        u64(&b, 12);
        id(&b, 0);
        finish(&b);
        tail = head;
        ring_put(ring, sizeof ring, head, &b);
        head += b.n;
        assert_int_equal(
                perfsample_ring_walk(ring, sizeof ring, tail, head, MASK, scratch, &st, on_record, &seen, &out), 0);
        assert_int_equal(st.lost, 12);

        /* A malformed record inside good framing is skipped, the next one read. */
        tail = head;
        sample(&b, NULL, 0, u, 2, 16, 17);
        ring_put(ring, sizeof ring, head, &b);
        head += b.n;
        sample(&b, NULL, 0, u, 2, 16, 16);
        ring_put(ring, sizeof ring, head, &b);
        head += b.n;
        seen.n = 0;
        assert_int_equal(
                perfsample_ring_walk(ring, sizeof ring, tail, head, MASK, scratch, &st, on_record, &seen, &out), 0);
        assert_int_equal(st.malformed, 1);
        assert_int_equal(seen.n, 1);
}

static void test_ring_hostile(void **state) {
        static uint8_t ring[4096], scratch[PERFSAMPLE_SCRATCH_BYTES];
        static Buf b;
        const uint64_t u[] = { 0x401000 };
        PerfRingStats st = {};
        Seen seen = {};
        uint64_t out;

        /* A head more than the ring past the tail. */
        assert_int_equal(perfsample_ring_walk(ring, sizeof ring, 0, 4097, MASK, scratch, &st, on_record, &seen, &out),
                         0);
        assert_int_equal(st.corrupt, 1);
        assert_int_equal(out, 4097);
        /* A head behind the tail. */
        assert_int_equal(perfsample_ring_walk(ring, sizeof ring, 100, 50, MASK, scratch, &st, on_record, &seen, &out),
                         0);
        assert_int_equal(st.corrupt, 2);
        /* A record claiming a size past head (and a size of 65535, past the ring). */
        sample(&b, NULL, 0, u, 1, 16, 16);
        ring_put(ring, sizeof ring, 0, &b);
        assert_int_equal(
                perfsample_ring_walk(ring, sizeof ring, 0, b.n - 8, MASK, scratch, &st, on_record, &seen, &out), 0);
        assert_int_equal(st.corrupt, 3);
        memcpy(ring + 6, &(uint16_t) { 65535 }, 2);
        assert_int_equal(perfsample_ring_walk(ring, sizeof ring, 0, 4096, MASK, scratch, &st, on_record, &seen, &out),
                         0);
        assert_int_equal(st.corrupt, 4);
        /* A header smaller than itself: no way on. */
        memcpy(ring + 6, &(uint16_t) { 4 }, 2);
        assert_int_equal(perfsample_ring_walk(ring, sizeof ring, 0, 64, MASK, scratch, &st, on_record, &seen, &out), 0);
        assert_int_equal(st.corrupt, 5);
        assert_int_equal(seen.n, 0);
        /* A ring that is no power of two. */
        assert_int_equal(perfsample_ring_walk(ring, 3000, 0, 0, MASK, scratch, &st, NULL, NULL, &out), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sample),          cmocka_unit_test(test_hostile_sample),
                cmocka_unit_test(test_mmap2_comm_task), cmocka_unit_test(test_ring),
                cmocka_unit_test(test_ring_hostile),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
