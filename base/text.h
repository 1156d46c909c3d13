/* SPDX-License-Identifier: MIT */
/* Text for people: short durations, and strings from tasks and incidents made safe to print on a
 * terminal or in a log line. No I/O, no dependencies beyond libc. */
#pragma once

#include <stddef.h>

/* Formats a duration in microseconds as "1.03s", "984ms", "5.6ms", "120us" ("-" when negative).
 * Returns buf. */
char *text_format_us(long long us, char *buf, size_t size);

/* Copies s (NULL: "") into out (at most size-1 bytes, cut at a UTF-8 boundary) with C0 and C1
 * control characters and DEL replaced by '?', so a hostile task name cannot drive a terminal.
 * Returns out. */
char *text_terminal_safe(const char *s, char *out, size_t size);

/* Copies the bytes [s, end) into dst as a string, cut to size-1 bytes (size > 0). */
void text_copy_range(char *dst, size_t size, const char *s, const char *end);
