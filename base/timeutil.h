/* SPDX-License-Identifier: MIT */
/* Time in microseconds (usec_t), RFC 3339 formatting, and duration parsing ("150ms", "2s").
 * Pure helpers, no logging. */
#pragma once

#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)
#define NSEC_PER_MSEC ((uint64_t) 1000000ULL)

usec_t now_usec(clockid_t clock);

/* Formats a CLOCK_REALTIME timestamp as "2026-11-22T08:44:01.123456Z" into buf (>= 32 bytes).
 * Returns buf. */
#define RFC3339_MAX 32
char *format_rfc3339_us(usec_t t, char *buf, size_t size);

/* Parses a non-negative decimal duration with a unit suffix "us", "ms" or "s" (fractions allowed
 * down to the microsecond: "1.5s", "0.5ms"). Returns 0 and writes *ret, or -EINVAL (bad syntax or
 * unit) / -ERANGE (overflow or a fraction below 1 us). */
int parse_duration_us(const char *s, usec_t *ret);
