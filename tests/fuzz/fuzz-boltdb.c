/* SPDX-License-Identifier: MIT */
/* bbolt lookups (containers/boltdb.h) in any bytes: the paths the seeds hold (containerd's meta.db,
 * podman's bolt_state.db, and the files bbolt wrote in tests/fixtures/boltdb), as given and then with both meta pages'
 * checksums made right (so that a mutated root, high water mark or page size gets past them). The
 * value stays NUL-terminated within its buffer and the reason within its own, whatever the input. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "containers/boltdb.h"
#include "tests/fuzz/fuzz.h"

/* FNV-1a 64 of the meta at off (after its page's 16-byte header) written into its checksum. */
static void fix_checksum(uint8_t *buf, size_t size, size_t off) {
        uint64_t h = 0xcbf29ce484222325ull;

        if (off > size || size - off < 16 + 64)
                return;
        for (size_t i = 0; i < 56; i++) {
                h ^= buf[off + 16 + i];
                h *= 0x100000001b3ull;
        }
        memcpy(buf + off + 16 + 56, &h, sizeof h);
}

static void lookups(const uint8_t *buf, size_t size) {
        static const char *const paths[][6] = {
                { "v1", "default", "containers", "bigenv", "image" },
                { "v1", "many", "containers", "c123", "image" },
                { "deep", "k0777" },
                /* podman 4.3's libpod state (containers/libpod.c): a container's pod id, a pod's name */
                { "ctr", "61d041b26f05e80bc0f53f9a3c75b43e503237a4b3641b7da2c657061d41946c", "pod-id" },
                { "id-registry", "0f57d86d592133043c247b29bb2831cb77cbe5c2da3923e5e9eca1759ce6cf77" },
        };
        char value[64], why[BOLTDB_REASON_MAX];

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                size_t n = 0;
                while (n < ELEMENTSOF(paths[i]) && paths[i][n])
                        n++;
                value[0] = '\0';
                int r = boltdb_get_buf(buf, size, paths[i], n, value, sizeof value, why);
                if (strnlen(value, sizeof value) == sizeof value || strnlen(why, sizeof why) == sizeof why ||
                    (r >= 0 && why[0]))
                        abort();
        }
}

/* podman 4's three lookups (containers/libpod.c) in a file of the bytes, sharing one budget: each
 * takes what it read off it, none reads past it. */
static void budgeted(const uint8_t *buf, size_t size) {
        static const char *const paths[][3] = {
                { "all-ctrs", "61d041b26f05e80bc0f53f9a3c75b43e503237a4b3641b7da2c657061d41946c" },
                { "ctr", "61d041b26f05e80bc0f53f9a3c75b43e503237a4b3641b7da2c657061d41946c", "pod-id" },
                { "id-registry", "0f57d86d592133043c247b29bb2831cb77cbe5c2da3923e5e9eca1759ce6cf77" },
        };
        char value[64], why[BOLTDB_REASON_MAX];
        uint64_t budget = 64 * 1024, before;
        struct stat st;
        int fd = memfd_create("fuzz-boltdb", MFD_CLOEXEC);

        if (fd < 0)
                return;
        if (write(fd, buf, size) != (ssize_t) size || fstat(fd, &st) < 0) {
                close(fd);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                int r;

                before = budget;
                /* value is written only on success (the module's contract) */
                r = boltdb_get_fd_budget(fd, &st, paths[i], i == 1 ? 3 : 2, value, sizeof value, &budget, why);
                if (budget > before || (r > 0 && strnlen(value, sizeof value) == sizeof value))
                        abort();
        }
        close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *buf = malloc(size ? size : 1);
        uint32_t ps = 0;

        if (!buf)
                return 0;
        memcpy(buf, data, size); /* exactly size bytes: ASan sees any read past them */
        lookups(buf, size);
        budgeted(buf, size);
        if (size >= 16 + 64) {
                memcpy(&ps, buf + 16 + 8, sizeof ps);
                fix_checksum(buf, size, 0);
                fix_checksum(buf, size, ps);
                lookups(buf, size);
        }
        free(buf);
        return 0;
}
