/* SPDX-License-Identifier: MIT */
/* Turns arbitrary bytes (task names, command lines) into valid UTF-8 for JSON. Pure, no allocation. */
#pragma once

#include <stddef.h>

/* Copies in[0..len) to out, replacing every byte that is not part of a valid UTF-8 sequence (and
 * overlong forms, surrogates, code points above U+10FFFF) with U+FFFD, and NUL bytes with a space.
 * Stops before overflowing out (size includes room for the terminating NUL; a replacement is never
 * cut in half). Returns the number of bytes written, not counting the NUL. */
size_t utf8_sanitize(const char *in, size_t len, char *out, size_t size);

/* Worst-case output size for len input bytes, including the NUL. */
#define UTF8_SANITIZED_MAX(len) ((len) *3 + 1)
