/* SPDX-License-Identifier: MIT */
/* The incident lines the commands read (`show`, `stacks`): FILE or stdin, each non-empty line
 * handed on with its "\n" (and a "\r" before it) cut, a line the handler refuses reported on
 * stderr with its number. */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* One line, NUL-terminated at len; returns < 0 with error set when it is not what it should be. */
typedef int (*LineFn)(const char *line, size_t len, char *error, size_t error_size, void *userdata);

/* path opened for reading, or stdin for NULL and "-". NULL when it cannot be (said on stderr). */
FILE *lines_open(const char *path);
void lines_close(FILE *in);

/* Every line of in to fn; a refused one reported as "psidiag: NAME:LINENO: error". Returns how
 * many were refused. */
unsigned long lines_each(FILE *in, const char *name, LineFn fn, void *userdata);
