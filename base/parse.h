/* SPDX-License-Identifier: MIT */
/* The number and line scanners every kernel-text parser shares: unsigned decimals with overflow
 * checks (no sign, no spaces, no locale), and the line of a buffer that starts with a key. Pure:
 * no I/O, no dependencies beyond libc. Outputs are written only on success. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/unparsed.h"

/* The decimal digits at the start of [s, end): 0 and the value, with *ret_rest (may be NULL) at
 * the first byte that is not a digit; -EINVAL when s does not start with a digit; -ERANGE when
 * the value does not fit in 64 bits. */
int parse_u64_prefix(const char *s, const char *end, uint64_t *ret, const char **ret_rest);

/* The value of a hex digit (0-9, a-f, A-F), or -1. */
int parse_hex_digit(char c);

/* All of s[0..len) as a decimal: 0, -EINVAL (empty, or anything but digits), -ERANGE. */
int parse_u64_exact(const char *s, size_t len, uint64_t *ret);

/* A NUL-terminated decimal ("42"), as parse_u64_exact(). */
int parse_uint64(const char *s, uint64_t *ret);

/* The next line of [*p, end): [*ret_line, *ret_end) without its '\n', and *p past it. False at
 * the end (*p >= end), the outputs untouched. A last line without '\n' is a line. */
bool line_next(const char **p, const char *end, const char **ret_line, const char **ret_end);

/* Finds the first line of buf[0..len) that begins with key (lines end at '\n' or at the end of
 * the buffer). 0 with [*ret_value, *ret_end) the rest of that line after key, or -ENOENT. */
int line_find(const char *buf, size_t len, const char *key, const char **ret_value, const char **ret_end);

/* One key a flat keyed file is read for: its decimal into *value, *has set, when the file has a
 * line "key N". */
typedef struct KeyedWant {
        const char *key;
        uint64_t *value;
        bool *has;
} KeyedWant;

/* Reads the flat keyed file buf[0..len) ("key N" lines: memory.stat, memory.events, cpu.stat)
 * for the n keys of want (the first line of a key wins; keys not wanted are passed over). A line
 * that is not a key, one space and a decimal is skipped and noted as of kind file
 * (unparsed_note()): it costs that line, and a wanted key on it stays unset. Empty lines are
 * fine. Returns the number of lines read as "key N". */
size_t parse_keyed(const char *buf, size_t len, UnparsedFile file, const KeyedWant *want, size_t n);
