/* SPDX-License-Identifier: MIT */
/* Text for people: short durations, and strings from tasks and incidents made safe to print on a
 * terminal or in a log line. No I/O, no dependencies beyond libc. */
#pragma once

#include <stddef.h>

/* Formats a duration in microseconds as "1.03s", "984ms", "5.6ms", "120us" ("-" when negative).
 * Returns buf. */
char *text_format_us(long long us, char *buf, size_t size);

/* The character at p (NUL-terminated) when a name must not carry it raw to a person: a C0 control
 * or DEL (1 byte), a C1 control U+0080-U+009F (2 bytes), or a bidirectional control, which
 * reorders what follows it on the screen (U+061C, U+200E, U+200F, U+202A-U+202E,
 * U+2066-U+2069; Unicode's UAX #9): its length, and its code point in *ret_cp; 0 for any other. */
size_t text_unsafe_char(const char *p, unsigned *ret_cp);

/* Copies s (NULL: "") into out (at most size-1 bytes, cut at a UTF-8 boundary) with every
 * character text_unsafe_char() names replaced by '?', so a hostile task name cannot drive a
 * terminal or turn the text around it. Returns out. */
char *text_terminal_safe(const char *s, char *out, size_t size);

/* Copies the bytes [s, end) into dst as a string, cut to size-1 bytes (size > 0). */
void text_copy_range(char *dst, size_t size, const char *s, const char *end);
