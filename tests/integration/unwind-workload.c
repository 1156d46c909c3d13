/* SPDX-License-Identifier: MIT */
/* A culprit whose call chain is known, built without frame pointers (-fomit-frame-pointer, as
 * Debian builds its userland): main -> uw_outer -> uw_middle -> uw_leaf, which spins. It runs
 * until killed, or for the seconds given:
 *
 *   unwind-workload [SECONDS]
 *
 * Each function does work after its call, so no call is a tail call, and none is inlined. main
 * keeps a frame pointer: built again without unwind tables or debug information (unwind-workload-nocfi: no .eh_frame,
 * no .debug_frame), its rbp is what a frame-pointer guess would follow from uw_leaf, straight to main's caller,
 * skipping two frames; an unwinder that never invents frames stops at uw_leaf instead. */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long uw_leaf(unsigned long n) {
        unsigned long x = n;

        for (unsigned long i = 0; i < 20000000; i++)
                x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
        return x;
}

__attribute__((noinline)) static unsigned long uw_middle(unsigned long n) {
        unsigned long x = uw_leaf(n + 1);

        sink += x;
        return x ^ n;
}

__attribute__((noinline)) static unsigned long uw_outer(unsigned long n) {
        unsigned long x = uw_middle(n * 3);

        sink -= x;
        return x + n;
}

__attribute__((optimize("no-omit-frame-pointer"))) int main(int argc, char **argv) {
        double seconds = argc > 1 ? atof(argv[1]) : 0;
        struct timespec start, now;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (unsigned long n = 0;; n++) {
                sink += uw_outer(n);
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (seconds > 0 && (double) (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 > seconds)
                        return 0;
        }
}
