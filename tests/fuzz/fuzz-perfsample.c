/* SPDX-License-Identifier: MIT */
/* The perf ring's records (probes/perfsample.h): the input's first byte picks where in a small
 * ring its tail starts, the rest is the ring's data between tail and head, walked and each record
 * parsed; then the whole input parsed as one record. */
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "probes/perfsample.h"

#define RING 4096
#define MASK ((1ULL << 6) | (1ULL << 7) | (1ULL << 8))

static void on_record(const PerfRecord *r, void *userdata) {
        size_t *n = userdata;

        /* Touch what the record points at, so a sanitizer sees any read past it. */
        if (r->kind == PERF_REC_SAMPLE && r->sample.stack_size)
                *n += r->sample.stack[r->sample.stack_size - 1];
        else if (r->kind == PERF_REC_MMAP2)
                *n += strlen(r->mmap2.filename);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static uint8_t ring[RING], scratch[PERFSAMPLE_SCRATCH_BYTES];
        PerfRingStats st = {};
        PerfRecord r;
        uint64_t tail, out;
        size_t n = 0, len;

        if (size < 1)
                return 0;
        tail = (uint64_t) data[0] * 16 + RING * 3;
        len = size - 1 > RING ? RING : size - 1;
        for (size_t i = 0; i < len; i++)
                ring[(tail + i) % RING] = data[1 + i];
        (void) perfsample_ring_walk(ring, RING, tail, tail + len, MASK, scratch, &st, on_record, &n, &out);
        (void) perfsample_parse(data + 1, size - 1, MASK, &r);
        return 0;
}
