/* SPDX-License-Identifier: MIT */
/* podman 5's db.sql as containers/sqlitedb.h and containers/libpod.c read it, from any bytes: written to a
 * scratch storage directory, looked up for the id the seeds hold. Whatever the file, the lookup
 * answers (an error or a pod), within its deadline and a bounded time on the clock, with the name
 * NUL-terminated within its buffer and a reason on error. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/timeutil.h"
#include "containers/libpod.h"
#include "containers/sqlitedb.h"
#include "tests/fuzz/fuzz.h"

#define ID "2833898ba25d9558fca27c8528074bba53768135c471e5c111fd6a15d1738b57"

static char root[] = "/tmp/psidiag-fuzz-sqlitedb-XXXXXX";
static int root_fd = -1;

static void scratch_remove(void) {
        char path[160];

        snprintf(path, sizeof path, "%s/storage/db.sql", root);
        unlink(path);
        snprintf(path, sizeof path, "%s/storage", root);
        rmdir(path);
        rmdir(root);
}

static void scratch(void) {
        char dir[128];

        if (!mkdtemp(root))
                abort();
        snprintf(dir, sizeof dir, "%s/storage", root);
        if (mkdir(dir, 0700) < 0 || (root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                abort();
        atexit(scratch_remove);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char path[160], name[16], why[LIBPOD_REASON_MAX];
        usec_t t0;
        FILE *f;
        int r;

        if (root_fd < 0)
                scratch();
        snprintf(path, sizeof path, "%s/storage/db.sql", root);
        f = fopen(path, "we");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
                abort();
        t0 = now_usec(CLOCK_MONOTONIC);
        name[0] = '\0';
        r = libpod_pod_name(root_fd, "storage", -1, ID, name, sizeof name, why);
        /* the deadline's wall-clock bound, and room for reading and a loaded machine */
        if (now_usec(CLOCK_MONOTONIC) - t0 > SQLITEDB_DEADLINE_US * SQLITEDB_WALL_FACTOR + 2 * USEC_PER_SEC)
                abort();
        if (strnlen(name, sizeof name) == sizeof name || strnlen(why, sizeof why) == sizeof why || (r < 0 && !why[0]) ||
            (r >= 0 && why[0]) || (r == 0 && name[0]))
                abort();
        return 0;
}
