/* SPDX-License-Identifier: MIT */
/* Replays a fuzz target's corpus without libFuzzer: every file named on the command line, and
 * every regular file in every directory named, goes through LLVMFuzzerTestOneInput once. A crash
 * or a sanitizer report fails the test; an empty corpus is an error, so a lost corpus cannot pass. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/macro.h"
#include "tests/fuzz/fuzz.h"

#define INPUT_MAX (1024 * 1024)

static int replay_file(const char *path) {
        _cleanup_free_ uint8_t *buf = malloc(INPUT_MAX);
        FILE *f = fopen(path, "re");
        size_t len;

        if (!buf || !f) {
                fprintf(stderr, "replay: %s: %m\n", path);
                if (f)
                        fclose(f);
                return -EIO;
        }
        len = fread(buf, 1, INPUT_MAX, f);
        fclose(f);
        /* A copy of exactly len bytes, so ASan sees any read past the input. */
        _cleanup_free_ uint8_t *copy = malloc(len ? len : 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, buf, len);
        LLVMFuzzerTestOneInput(copy, len);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "replay: %s: %m\n", argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return 1;
                        n++;
                        continue;
                }
                struct dirent **names;
                int k = scandir(argv[i], &names, NULL, alphasort);
                if (k < 0) {
                        fprintf(stderr, "replay: %s: %m\n", argv[i]);
                        return 1;
                }
                for (int j = 0; j < k; j++) {
                        _cleanup_free_ char *p = NULL;
                        if (names[j]->d_name[0] != '.' && asprintf(&p, "%s/%s", argv[i], names[j]->d_name) >= 0 &&
                            stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                                if (replay_file(p) < 0)
                                        return 1;
                                n++;
                        }
                        free(names[j]);
                }
                free(names);
        }
        if (n == 0) {
                fprintf(stderr, "replay: no inputs\n");
                return 1;
        }
        printf("replayed %u inputs\n", n);
        return 0;
}
