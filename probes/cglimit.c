/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "probes/cglimit.h"
#include "probes/limits-io.h"
#include "probes/limits.h"

const char *cgroup_limit_file(CgroupLimitKind k) {
        static const char *const names[_CGROUP_LIMIT_MAX] = {
                [CGROUP_LIMIT_CPU_MAX] = "cpu.max",
                [CGROUP_LIMIT_CPU_CFS_QUOTA] = "cpu.cfs_quota_us",
                [CGROUP_LIMIT_MEMORY_MAX] = "memory.max",
                [CGROUP_LIMIT_MEMORY_HIGH] = "memory.high",
                [CGROUP_LIMIT_MEMORY_LIMIT_IN_BYTES] = "memory.limit_in_bytes",
                [CGROUP_LIMIT_IO_MAX] = "io.max",
                [CGROUP_LIMIT_BLKIO_THROTTLE] = "blkio.throttle",
        };
        return k > CGROUP_LIMIT_NONE && k < _CGROUP_LIMIT_MAX ? names[k] : NULL;
}

static bool is_set(uint64_t v) {
        return v != LIMITS_UNLIMITED;
}

/* The limit a reading sets, cgroup2 or v1 (the readers of probes/limits*.h). */
static int read_at(int fd, bool v1, PsiResource res, CgroupLimit *ret) {
        CpuLimits c;
        MemoryLimits m;
        IoLimits io;
        int r;

        *ret = (CgroupLimit) {};
        switch (res) {
        case PSI_RESOURCE_CPU:
                r = v1 ? limits_read_cpu_v1(fd, &c) : limits_read_cpu_v2(fd, &c);
                if (r >= 0 && c.has_quota && is_set(c.quota_us))
                        *ret = (CgroupLimit) { .kind = v1 ? CGROUP_LIMIT_CPU_CFS_QUOTA : CGROUP_LIMIT_CPU_MAX,
                                               .value = c.quota_us,
                                               .period_us = c.period_us };
                return r;
        case PSI_RESOURCE_MEMORY:
                r = v1 ? limits_read_memory_v1(fd, &m) : limits_read_memory_v2(fd, &m);
                if (r >= 0 && m.has_max && is_set(m.max_bytes))
                        *ret = (CgroupLimit) { .kind = v1 ? CGROUP_LIMIT_MEMORY_LIMIT_IN_BYTES
                                                          : CGROUP_LIMIT_MEMORY_MAX,
                                               .value = m.max_bytes };
                else if (r >= 0 && m.has_high && is_set(m.high_bytes))
                        *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_MEMORY_HIGH, .value = m.high_bytes };
                return r;
        case PSI_RESOURCE_IO:
                r = v1 ? limits_read_io_v1(fd, &io) : limits_read_io_v2(fd, &io);
                if (r >= 0 && limits_io_is_limited(&io))
                        *ret = (CgroupLimit) { .kind = v1 ? CGROUP_LIMIT_BLKIO_THROTTLE : CGROUP_LIMIT_IO_MAX };
                return r;
        default:
                return 0;
        }
}

int cgroup_limit_read(const Sysroot *s, const char *path, PsiResource res, CgroupLimit *ret) {
        static const CgroupV1Controller v1[_PSI_RESOURCE_MAX] = {
                [PSI_RESOURCE_CPU] = CGROUP_V1_CPU,
                [PSI_RESOURCE_MEMORY] = CGROUP_V1_MEMORY,
                [PSI_RESOURCE_IO] = CGROUP_V1_BLKIO,
        };
        _cleanup_close_ int fd = -EBADF, v1_fd = -EBADF;
        CgroupLimit l = {};
        int r;

        if (res != PSI_RESOURCE_CPU && res != PSI_RESOURCE_MEMORY && res != PSI_RESOURCE_IO) {
                *ret = l;
                return 0;
        }
        if (sysroot_open_cgroup(s, path, &fd) >= 0) {
                r = read_at(fd, false, res, &l);
                if (r < 0 && !cgroup_is_gone(r))
                        return r;
        }
        if (l.kind == CGROUP_LIMIT_NONE && sysroot_open_v1(s, v1[res], path, &v1_fd) >= 0) {
                r = read_at(v1_fd, true, res, &l);
                if (r < 0 && !cgroup_is_gone(r))
                        return r;
        }
        *ret = l;
        return 0;
}

int cgroup_limit_find(const Sysroot *s, const char *path, PsiResource res, size_t *ret_len, CgroupLimit *ret) {
        char buf[4096];
        size_t len = strlen(path);

        if (len >= sizeof buf)
                return -ENAMETOOLONG;
        memcpy(buf, path, len + 1);
        for (;;) {
                CgroupLimit l;
                size_t start = 0;
                int r;

                while (len > 0 && buf[len - 1] == '/')
                        len--;
                while (start < len && buf[start] == '/')
                        start++;
                if (start >= len)
                        return -ENOENT; /* the root: the node is the scope */
                buf[len] = '\0';
                r = cgroup_limit_read(s, buf, res, &l);
                if (r < 0)
                        return r;
                if (l.kind != CGROUP_LIMIT_NONE) {
                        *ret_len = len;
                        *ret = l;
                        return 0;
                }
                while (len > 0 && buf[len - 1] != '/')
                        len--;
        }
}
