/* SPDX-License-Identifier: MIT */
/* PSI's resources and stall kinds, the parsing of pressure files ("some avg10=0.12 avg60=...
 * avg300=... total=N" and "full ...") and bounded reads of them from /proc/pressure or a cgroup
 * directory. No logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum PsiResource {
        PSI_RESOURCE_CPU,
        PSI_RESOURCE_MEMORY,
        PSI_RESOURCE_IO,
        PSI_RESOURCE_IRQ,
        _PSI_RESOURCE_MAX,
        _PSI_RESOURCE_INVALID = -22,
} PsiResource;

typedef enum PsiStall {
        PSI_STALL_SOME,
        PSI_STALL_FULL,
        _PSI_STALL_MAX,
        _PSI_STALL_INVALID = -22,
} PsiStall;

const char *psi_resource_to_string(PsiResource r);
PsiResource psi_resource_from_string(const char *s);
const char *psi_stall_to_string(PsiStall s);
PsiStall psi_stall_from_string(const char *s);

typedef struct PressureLine {
        double avg10, avg60, avg300;
        uint64_t total_us;
} PressureLine;

typedef struct PressureStats {
        PressureLine line[_PSI_STALL_MAX];
        bool has[_PSI_STALL_MAX];
} PressureStats;

/* Parses a pressure file's contents. Unknown key=value pairs are ignored (newer kernels may add
 * some); a line that is not a some or full line with total= costs that line and is noted
 * (base/unparsed.h). Returns 0, or -EINVAL when neither a some nor a full line could be read. */
int pressure_parse_buf(const char *buf, size_t len, PressureStats *ret);

/* The file name of a resource's pressure: "cpu" under /proc/pressure, "cpu.pressure" in a cgroup. */
const char *pressure_file_name(PsiResource r, bool cgroup);

/* Reads and parses dirfd/<name>. -ENOENT when the file (or the cgroup) is gone, -EOPNOTSUPP when PSI
 * is disabled (the kernel refuses reads with that), other -errno from open/read, -EINVAL on parse. */
int pressure_read_at(int dirfd, const char *name, PressureStats *ret);

/* Reads and parses from an fd, from offset 0 (pread), so an armed trigger fd can be re-read. */
int pressure_read_fd(int fd, PressureStats *ret);
