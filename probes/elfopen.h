/* SPDX-License-Identifier: MIT */
/* The files a stack unwinder reads, opened so that no one can hand it another: a process's
 * mapped module by /proc/PID/map_files (the very file mapped, in whatever mount namespace, even
 * deleted; CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, kernel-facts.md: proc-map-files), or else by
 * its path inside /proc/PID/root, never leaving that root; either kept only when it is a regular
 * file of at most ELFOPEN_BYTES_MAX on the device and inode the maps give. A debug file only by
 * build-id, under the host's usr/lib/debug/.build-id, root's and written by no one else. And the
 * vDSO's image, the agent's own. No ELF is parsed here (probes/unwind.c hands the fds to
 * libdwfl). Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ELFOPEN_BYTES_MAX (512ULL * 1024 * 1024)
#define ELFOPEN_BUILD_ID_MAX 20

typedef struct ElfOpenTarget {
        pid_t pid;
        uint64_t map_start, map_end; /* one mapping of the file: its map_files name */
        uint32_t dev_major, dev_minor;
        uint64_t inode;
        const char *path; /* as the maps name it */
        bool deleted;     /* the maps said " (deleted)": reached by map_files alone */
} ElfOpenTarget;

/* An O_RDONLY fd of the file t names, through proc_fd (a /proc directory fd). -ESTALE when the
 * file reached is not the one mapped (or not a regular file), -EFBIG past ELFOPEN_BYTES_MAX, or
 * the open's -errno (-EPERM: map_files refused and no path to try). */
int elfopen_module(int proc_fd, const ElfOpenTarget *t);

/* <root_fd>/usr/lib/debug/.build-id/NN/NNNN....debug for the build-id (2 to ELFOPEN_BUILD_ID_MAX
 * bytes), resolved inside root_fd; refused (-EPERM) unless a regular file owned by root, not
 * group- or world-writable, of at most ELFOPEN_BYTES_MAX. The fd; its path (relative to
 * root_fd) in ret_path, of ret_size bytes. -EINVAL for a build-id out of bounds. */
int elfopen_debug(int root_fd, const uint8_t *build_id, size_t n, char *ret_path, size_t ret_size);

/* The vDSO this process was given (getauxval(AT_SYSINFO_EHDR)): one image per ABI in the
 * kernel, mapped into every process of that ABI (kernel-facts.md: vdso-image). Copied once; its
 * bytes and size, or false when there is none (booted vdso=0) or it does not parse. */
bool elfopen_vdso(const uint8_t **ret, size_t *ret_size);
