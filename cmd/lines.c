/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/lines.h"

FILE *lines_open(const char *path) {
        if (!path || strcmp(path, "-") == 0)
                return stdin;
        FILE *in = fopen(path, "re");
        if (!in)
                fprintf(stderr, "psidiag: %s: %s\n", path, strerror(errno));
        return in;
}

void lines_close(FILE *in) {
        if (in && in != stdin)
                fclose(in);
}

unsigned long lines_each(FILE *in, const char *name, LineFn fn, void *userdata) {
        char *line = NULL, error[256];
        size_t cap = 0;
        ssize_t n;
        unsigned long lineno = 0, bad = 0;

        while ((n = getline(&line, &cap, in)) >= 0) {
                lineno++;
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                        line[--n] = '\0';
                if (n == 0)
                        continue;
                if (fn(line, (size_t) n, error, sizeof error, userdata) < 0) {
                        fprintf(stderr, "psidiag: %s:%lu: %s\n", name, lineno, error);
                        bad++;
                }
        }
        free(line);
        return bad;
}
