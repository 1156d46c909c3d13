/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/unparsed.h"
#include "probes/pressure.h"

static const char *const resource_names[_PSI_RESOURCE_MAX] = {
        [PSI_RESOURCE_CPU] = "cpu",
        [PSI_RESOURCE_MEMORY] = "memory",
        [PSI_RESOURCE_IO] = "io",
        [PSI_RESOURCE_IRQ] = "irq",
};

static const char *const stall_names[_PSI_STALL_MAX] = {
        [PSI_STALL_SOME] = "some",
        [PSI_STALL_FULL] = "full",
};

const char *psi_resource_to_string(PsiResource r) {
        return r >= 0 && r < _PSI_RESOURCE_MAX ? resource_names[r] : NULL;
}

PsiResource psi_resource_from_string(const char *s) {
        for (int i = 0; s && i < _PSI_RESOURCE_MAX; i++)
                if (strcmp(s, resource_names[i]) == 0)
                        return i;
        return _PSI_RESOURCE_INVALID;
}

const char *psi_stall_to_string(PsiStall s) {
        return s >= 0 && s < _PSI_STALL_MAX ? stall_names[s] : NULL;
}

PsiStall psi_stall_from_string(const char *s) {
        for (int i = 0; s && i < _PSI_STALL_MAX; i++)
                if (strcmp(s, stall_names[i]) == 0)
                        return i;
        return _PSI_STALL_INVALID;
}

static int parse_double(const char *s, size_t len, double *ret) {
        char tmp[32], *end;

        if (len == 0 || len >= sizeof tmp)
                return -EINVAL;
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        errno = 0;
        *ret = strtod(tmp, &end);
        if (errno != 0 || end != tmp + len || *ret < 0)
                return -EINVAL;
        return 0;
}

static int parse_line(const char *p, const char *end, PressureLine *ret) {
        PressureLine l = {};
        bool have_total = false;

        while (p < end) {
                const char *tok, *eq;
                size_t klen, vlen;

                while (p < end && *p == ' ')
                        p++;
                tok = p;
                while (p < end && *p != ' ')
                        p++;
                if (p == tok)
                        break;
                eq = memchr(tok, '=', (size_t) (p - tok));
                if (!eq)
                        return -EINVAL;
                klen = (size_t) (eq - tok);
                vlen = (size_t) (p - eq - 1);

                if (klen == 5 && memcmp(tok, "avg10", 5) == 0) {
                        if (parse_double(eq + 1, vlen, &l.avg10) < 0)
                                return -EINVAL;
                } else if (klen == 5 && memcmp(tok, "avg60", 5) == 0) {
                        if (parse_double(eq + 1, vlen, &l.avg60) < 0)
                                return -EINVAL;
                } else if (klen == 6 && memcmp(tok, "avg300", 6) == 0) {
                        if (parse_double(eq + 1, vlen, &l.avg300) < 0)
                                return -EINVAL;
                } else if (klen == 5 && memcmp(tok, "total", 5) == 0) {
                        if (parse_u64_exact(eq + 1, vlen, &l.total_us) < 0)
                                return -EINVAL;
                        have_total = true;
                }
                /* Other keys: ignored, for forward compatibility. */
        }
        if (!have_total)
                return -EINVAL;
        *ret = l;
        return 0;
}

int pressure_parse_buf(const char *buf, size_t len, PressureStats *ret) {
        PressureStats s = {};
        const char *p = buf, *end = buf + len;

        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                const char *line_end = eol ? eol : end;
                int which = -1;

                if (line_end - p >= 5 && memcmp(p, "some ", 5) == 0)
                        which = PSI_STALL_SOME;
                else if (line_end - p >= 5 && memcmp(p, "full ", 5) == 0)
                        which = PSI_STALL_FULL;

                /* A line it cannot read, or of a kind it does not know, costs that line
                 * (kernel-facts.md: unknown-lines). */
                if (which >= 0 && parse_line(p + 5, line_end, &s.line[which]) == 0)
                        s.has[which] = true;
                else if (line_end > p)
                        unparsed_note(UNPARSED_PRESSURE, p, line_end);
                p = eol ? eol + 1 : end;
        }
        if (!s.has[PSI_STALL_SOME] && !s.has[PSI_STALL_FULL])
                return -EINVAL;
        *ret = s;
        return 0;
}

const char *pressure_file_name(PsiResource r, bool cgroup) {
        static const char *const proc_names[_PSI_RESOURCE_MAX] = {
                [PSI_RESOURCE_CPU] = "cpu",
                [PSI_RESOURCE_MEMORY] = "memory",
                [PSI_RESOURCE_IO] = "io",
                [PSI_RESOURCE_IRQ] = "irq",
        };
        static const char *const cgroup_names[_PSI_RESOURCE_MAX] = {
                [PSI_RESOURCE_CPU] = "cpu.pressure",
                [PSI_RESOURCE_MEMORY] = "memory.pressure",
                [PSI_RESOURCE_IO] = "io.pressure",
                [PSI_RESOURCE_IRQ] = "irq.pressure",
        };

        if (r < 0 || r >= _PSI_RESOURCE_MAX)
                return NULL;
        return cgroup ? cgroup_names[r] : proc_names[r];
}

int pressure_read_at(int dirfd, const char *name, PressureStats *ret) {
        char buf[512];
        ssize_t n;

        n = read_file_at(dirfd, name, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return pressure_parse_buf(buf, (size_t) n, ret);
}

int pressure_read_fd(int fd, PressureStats *ret) {
        char buf[512];
        ssize_t n;

        for (;;) {
                n = pread(fd, buf, sizeof buf - 1, 0);
                if (n >= 0 || errno != EINTR)
                        break;
        }
        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        return pressure_parse_buf(buf, (size_t) n, ret);
}
