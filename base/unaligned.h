/* SPDX-License-Identifier: MIT */
/* Integers read in the host's byte order from any address: a netlink attribute's payload, a page
 * of a bbolt file. memcpy, which the compiler turns into one load. No dependencies beyond libc. */
#pragma once

#include <stdint.h>
#include <string.h>

static inline uint16_t unaligned_u16(const void *p) {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
}

static inline uint32_t unaligned_u32(const void *p) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
}

static inline uint64_t unaligned_u64(const void *p) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return v;
}
