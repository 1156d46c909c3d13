/* SPDX-License-Identifier: MIT */
#include "probes/elfopen.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/macro.h"

static int openat2_in(int dirfd, const char *path, uint64_t resolve) {
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY, .resolve = resolve };
        int fd = (int) syscall(SYS_openat2, dirfd, path, &how, sizeof how);

        return fd < 0 ? negative_errno() : fd;
}

static int check_mapped(int fd, const ElfOpenTarget *t) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode) || st.st_ino != t->inode || major(st.st_dev) != t->dev_major ||
            minor(st.st_dev) != t->dev_minor)
                return -ESTALE;
        if ((uint64_t) st.st_size > ELFOPEN_BYTES_MAX)
                return -EFBIG;
        return 0;
}

int elfopen_module(int proc_fd, const ElfOpenTarget *t) {
        char name[96];
        int fd, r;

        snprintf(name, sizeof name, "%d/map_files/%" PRIx64 "-%" PRIx64, (int) t->pid, t->map_start, t->map_end);
        fd = openat(proc_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                _cleanup_close_ int root = -1;

                r = negative_errno();
                /* A file deleted (or renamed over) since it was mapped: its path names another file
                 * now, or none. */
                if (t->deleted || t->path[0] != '/')
                        return r;
                snprintf(name, sizeof name, "%d/root", (int) t->pid);
                root = openat(proc_fd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (root < 0)
                        return negative_errno();
                /* Its symlinks resolved as the process would, inside its root; no /proc magic link. */
                fd = openat2_in(root, t->path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
                if (fd < 0)
                        return fd;
        }
        r = check_mapped(fd, t);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

int elfopen_debug(int root_fd, const uint8_t *build_id, size_t n, char *ret_path, size_t ret_size) {
        char path[sizeof "usr/lib/debug/.build-id/" + 2 * ELFOPEN_BUILD_ID_MAX + sizeof "/.debug"];
        size_t len;
        struct stat st;
        int fd;

        if (n < 2 || n > ELFOPEN_BUILD_ID_MAX)
                return -EINVAL;
        len = (size_t) snprintf(path, sizeof path, "usr/lib/debug/.build-id/%02x/", build_id[0]);
        for (size_t i = 1; i < n; i++)
                len += (size_t) snprintf(path + len, sizeof path - len, "%02x", build_id[i]);
        snprintf(path + len, sizeof path - len, ".debug");
        /* Debian's .build-id entries may be symlinks to the files beside them: followed, inside root. */
        fd = openat2_in(root_fd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
            (uint64_t) st.st_size > ELFOPEN_BYTES_MAX) {
                close(fd);
                return -EPERM;
        }
        snprintf(ret_path, ret_size, "%s", path);
        return fd;
}

static uint8_t *vdso_image;
static size_t vdso_size;
static pthread_once_t vdso_once = PTHREAD_ONCE_INIT;

static void vdso_load(void) {
        const Elf64_Ehdr *e = (const Elf64_Ehdr *) getauxval(AT_SYSINFO_EHDR);
        size_t size;

        if (!e || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || e->e_ident[EI_CLASS] != ELFCLASS64)
                return;
        /* The section headers come last in the image the kernel builds (arch/x86/tools/vdso2c). */
        size = (size_t) e->e_shoff + (size_t) e->e_shnum * e->e_shentsize;
        if (size < sizeof *e || size > 1024 * 1024)
                return;
        vdso_image = malloc(size);
        if (!vdso_image)
                return;
        memcpy(vdso_image, e, size);
        vdso_size = size;
}

bool elfopen_vdso(const uint8_t **ret, size_t *ret_size) {
        pthread_once(&vdso_once, vdso_load);
        if (!vdso_image)
                return false;
        *ret = vdso_image;
        *ret_size = vdso_size;
        return true;
}
