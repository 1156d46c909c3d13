/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/cglimit.h"

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

/* [buf, buf+len) without trailing whitespace. */
static size_t trim_len(const char *buf, size_t len) {
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                len--;
        return len;
}

int cgroup_limit_parse_max(const char *buf, size_t len, bool *ret_limited, uint64_t *ret_value) {
        uint64_t v;

        len = trim_len(buf, len);
        if (len == 3 && memcmp(buf, "max", 3) == 0) {
                *ret_limited = false;
                *ret_value = 0;
                return 0;
        }
        if (parse_u64_exact(buf, len, &v) < 0)
                return -EINVAL;
        *ret_limited = true;
        *ret_value = v;
        return 0;
}

int cgroup_limit_parse_cpu_max(const char *buf, size_t len, bool *ret_limited, uint64_t *ret_quota_us,
                               uint64_t *ret_period_us) {
        const char *sp;
        uint64_t quota = 0, period;
        bool limited;

        len = trim_len(buf, len);
        sp = memchr(buf, ' ', len);
        if (!sp || parse_u64_exact(sp + 1, (size_t) (buf + len - sp - 1), &period) < 0 || period == 0)
                return -EINVAL;
        if (sp - buf == 3 && memcmp(buf, "max", 3) == 0)
                limited = false;
        else if (parse_u64_exact(buf, (size_t) (sp - buf), &quota) < 0)
                return -EINVAL;
        else
                limited = true;
        *ret_limited = limited;
        *ret_quota_us = quota;
        *ret_period_us = period;
        return 0;
}

/* "MAJ:MIN" at s; *ret_rest after it. */
static int skip_device(const char *s, const char *end, const char **ret_rest) {
        uint64_t v;

        if (parse_u64_prefix(s, end, &v, &s) < 0 || s >= end || *s != ':' || parse_u64_prefix(s + 1, end, &v, &s) < 0)
                return -EINVAL;
        *ret_rest = s;
        return 0;
}

int cgroup_limit_parse_io_max(const char *buf, size_t len, bool *ret_limited) {
        const char *p = buf, *end = buf + len;
        bool limited = false;

        while (p < end) {
                const char *le = memchr(p, '\n', (size_t) (end - p)), *s;
                if (!le)
                        le = end;
                if (le > p) {
                        if (skip_device(p, le, &s) < 0)
                                return -EINVAL;
                        while (s < le) {
                                const char *tok, *eq, *te;
                                while (s < le && *s == ' ')
                                        s++;
                                if (s >= le)
                                        break;
                                tok = s;
                                te = memchr(s, ' ', (size_t) (le - s));
                                if (!te)
                                        te = le;
                                eq = memchr(tok, '=', (size_t) (te - tok));
                                if (!eq)
                                        return -EINVAL;
                                if (!(te - eq - 1 == 3 && memcmp(eq + 1, "max", 3) == 0))
                                        limited = true;
                                s = te;
                        }
                }
                p = le < end ? le + 1 : end;
        }
        *ret_limited = limited;
        return 0;
}

int cgroup_limit_parse_v1_bytes(const char *buf, size_t len, bool *ret_limited, uint64_t *ret_value) {
        uint64_t v;

        if (parse_u64_exact(buf, trim_len(buf, len), &v) < 0)
                return -EINVAL;
        *ret_limited = v < (UINT64_C(1) << 62);
        *ret_value = *ret_limited ? v : 0;
        return 0;
}

int cgroup_limit_parse_v1_quota(const char *buf, size_t len, bool *ret_limited, uint64_t *ret_quota_us) {
        uint64_t v;

        len = trim_len(buf, len);
        if (len == 2 && memcmp(buf, "-1", 2) == 0) {
                *ret_limited = false;
                *ret_quota_us = 0;
                return 0;
        }
        if (parse_u64_exact(buf, len, &v) < 0)
                return -EINVAL;
        *ret_limited = true;
        *ret_quota_us = v;
        return 0;
}

int cgroup_limit_parse_blkio_throttle(const char *buf, size_t len, bool *ret_limited) {
        const char *p = buf, *end = buf + len;
        bool limited = false;

        while (p < end) {
                const char *le = memchr(p, '\n', (size_t) (end - p)), *s;
                uint64_t v;
                if (!le)
                        le = end;
                if (le > p) {
                        if (skip_device(p, le, &s) < 0 || s >= le || *s != ' ' ||
                            parse_u64_exact(s + 1, (size_t) (le - s - 1), &v) < 0)
                                return -EINVAL;
                        limited = true;
                }
                p = le < end ? le + 1 : end;
        }
        *ret_limited = limited;
        return 0;
}

/* Reads dirfd/name into buf; false when it is not there (or unreadable: no limit known). */
static bool read_small(int dirfd, const char *name, char *buf, size_t size, size_t *ret_len) {
        ssize_t n = read_file_at(dirfd, name, buf, size);

        if (n < 0)
                return false;
        *ret_len = (size_t) n;
        return true;
}

static int read_v2(int fd, PsiResource res, CgroupLimit *ret) {
        char buf[4096];
        size_t n;
        bool limited;
        uint64_t v, period;
        int r;

        switch (res) {
        case PSI_RESOURCE_CPU:
                if (!read_small(fd, "cpu.max", buf, sizeof buf, &n))
                        return 0;
                r = cgroup_limit_parse_cpu_max(buf, n, &limited, &v, &period);
                if (r < 0)
                        return r;
                if (limited)
                        *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_CPU_MAX, .value = v, .period_us = period };
                return 0;
        case PSI_RESOURCE_MEMORY:
                if (read_small(fd, "memory.max", buf, sizeof buf, &n)) {
                        r = cgroup_limit_parse_max(buf, n, &limited, &v);
                        if (r < 0)
                                return r;
                        if (limited) {
                                *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_MEMORY_MAX, .value = v };
                                return 0;
                        }
                }
                if (read_small(fd, "memory.high", buf, sizeof buf, &n)) {
                        r = cgroup_limit_parse_max(buf, n, &limited, &v);
                        if (r < 0)
                                return r;
                        if (limited)
                                *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_MEMORY_HIGH, .value = v };
                }
                return 0;
        case PSI_RESOURCE_IO:
                if (!read_small(fd, "io.max", buf, sizeof buf, &n))
                        return 0;
                r = cgroup_limit_parse_io_max(buf, n, &limited);
                if (r < 0)
                        return r;
                if (limited)
                        *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_IO_MAX };
                return 0;
        default:
                return 0;
        }
}

static int read_v1(const Sysroot *s, const char *path, PsiResource res, CgroupLimit *ret) {
        static const char *const throttles[] = { "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device",
                                                 "blkio.throttle.read_iops_device",
                                                 "blkio.throttle.write_iops_device" };
        _cleanup_close_ int fd = -EBADF;
        char buf[4096];
        size_t n;
        bool limited;
        uint64_t v;
        int r;

        switch (res) {
        case PSI_RESOURCE_CPU:
                if (sysroot_open_v1(s, CGROUP_V1_CPU, path, &fd) < 0 ||
                    !read_small(fd, "cpu.cfs_quota_us", buf, sizeof buf, &n))
                        return 0;
                r = cgroup_limit_parse_v1_quota(buf, n, &limited, &v);
                if (r < 0 || !limited)
                        return r;
                *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_CPU_CFS_QUOTA, .value = v, .period_us = 100000 };
                if (read_small(fd, "cpu.cfs_period_us", buf, sizeof buf, &n) &&
                    cgroup_limit_parse_v1_quota(buf, n, &limited, &v) >= 0 && limited && v > 0)
                        ret->period_us = v;
                return 0;
        case PSI_RESOURCE_MEMORY:
                if (sysroot_open_v1(s, CGROUP_V1_MEMORY, path, &fd) < 0 ||
                    !read_small(fd, "memory.limit_in_bytes", buf, sizeof buf, &n))
                        return 0;
                r = cgroup_limit_parse_v1_bytes(buf, n, &limited, &v);
                if (r >= 0 && limited)
                        *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_MEMORY_LIMIT_IN_BYTES, .value = v };
                return r;
        case PSI_RESOURCE_IO:
                if (sysroot_open_v1(s, CGROUP_V1_BLKIO, path, &fd) < 0)
                        return 0;
                for (size_t i = 0; i < ELEMENTSOF(throttles); i++) {
                        if (!read_small(fd, throttles[i], buf, sizeof buf, &n))
                                continue;
                        r = cgroup_limit_parse_blkio_throttle(buf, n, &limited);
                        if (r < 0)
                                return r;
                        if (limited) {
                                *ret = (CgroupLimit) { .kind = CGROUP_LIMIT_BLKIO_THROTTLE };
                                return 0;
                        }
                }
                return 0;
        default:
                return 0;
        }
}

int cgroup_limit_read(const Sysroot *s, const char *path, PsiResource res, CgroupLimit *ret) {
        _cleanup_close_ int fd = -EBADF;
        CgroupLimit l = {};
        int r;

        if (sysroot_open_cgroup(s, path, &fd) >= 0) {
                r = read_v2(fd, res, &l);
                if (r < 0)
                        return r;
        }
        if (l.kind == CGROUP_LIMIT_NONE) {
                r = read_v1(s, path, res, &l);
                if (r < 0)
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
