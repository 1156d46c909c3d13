/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/system.h"

int system_read_boot_id(int proc_fd, char *out, size_t size) {
        char buf[64];
        ssize_t n = read_file_at(proc_fd, "sys/kernel/random/boot_id", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        if (n == 0 || (size_t) n >= size)
                return -EINVAL;
        memcpy(out, buf, (size_t) n + 1);
        return 0;
}

int system_read_delayacct(int proc_fd) {
        char buf[16];
        ssize_t n = read_file_at(proc_fd, "sys/kernel/task_delayacct", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        if (n < 1 || (buf[0] != '0' && buf[0] != '1'))
                return -EINVAL;
        return buf[0] == '1';
}

int system_write_delayacct(int proc_fd, bool on) {
        return write_string_at(proc_fd, "sys/kernel/task_delayacct", on ? "1\n" : "0\n");
}

int system_read_lsm_label(int proc_fd, char *out, size_t size) {
        ssize_t n = read_file_at(proc_fd, "self/attr/apparmor/current", out, size);

        if (n < 0)
                n = read_file_at(proc_fd, "self/attr/current", out, size);
        if (n < 0)
                return (int) n;
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
                out[--n] = '\0';
        return n > 0 ? 0 : -EINVAL;
}

bool system_lsm_confines(const char *label) {
        size_t n = label ? strlen(label) : 0;

        return n > 0 && strcmp(label, "unconfined") != 0 && !(n > 11 && strcmp(label + n - 11, " (complain)") == 0) &&
               !strstr(label, ":unconfined_t:");
}

int system_parse_cap_eff(const char *buf, size_t len, uint64_t *ret) {
        const char *q, *le;
        uint64_t v = 0;
        int digits = 0;

        if (line_find(buf, len, "CapEff:", &q, &le) < 0)
                return -EINVAL;
        while (q < le && (*q == '\t' || *q == ' '))
                q++;
        for (; q < le; q++, digits++) {
                int d;

                if (*q >= '0' && *q <= '9')
                        d = *q - '0';
                else if (*q >= 'a' && *q <= 'f')
                        d = *q - 'a' + 10;
                else
                        return -EINVAL;
                if (digits >= 16)
                        return -EINVAL;
                v = v << 4 | (uint64_t) d;
        }
        if (digits == 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int system_read_cap_eff(int proc_fd, uint64_t *ret) {
        char buf[4096];
        ssize_t n = read_file_at(proc_fd, "self/status", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return system_parse_cap_eff(buf, (size_t) n, ret);
}

void host_info_read(const Sysroot *sysroot, HostInfo *ret) {
        struct utsname u;

        *ret = (HostInfo) {};
        if (uname(&u) >= 0) {
                snprintf(ret->hostname, sizeof ret->hostname, "%s", u.nodename);
                snprintf(ret->kernel, sizeof ret->kernel, "%s", u.release);
        } else {
                snprintf(ret->hostname, sizeof ret->hostname, "unknown");
                snprintf(ret->kernel, sizeof ret->kernel, "unknown");
        }
        if (system_read_boot_id(sysroot->proc_fd, ret->boot_id, sizeof ret->boot_id) < 0)
                snprintf(ret->boot_id, sizeof ret->boot_id, "unknown");
}

int system_parse_threads(const char *buf, size_t len, uint64_t *ret) {
        /* "0.52 0.58 0.59 3/812 12345\n": the fourth field's total. */
        size_t i = 0;

        for (int field = 0; field < 3; field++) {
                while (i < len && buf[i] != ' ')
                        i++;
                while (i < len && buf[i] == ' ')
                        i++;
        }
        while (i < len && buf[i] != '/' && buf[i] != ' ')
                i++;
        if (i >= len || buf[i] != '/' || i + 1 >= len || buf[i + 1] < '0' || buf[i + 1] > '9')
                return -EINVAL;
        uint64_t n = 0;
        for (i++; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
                if (n > (UINT64_MAX - 9) / 10)
                        return -EINVAL;
                n = n * 10 + (uint64_t) (buf[i] - '0');
        }
        *ret = n;
        return 0;
}

int system_read_threads(int proc_fd, uint64_t *ret) {
        char buf[256];
        ssize_t n = read_file_at(proc_fd, "loadavg", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return system_parse_threads(buf, (size_t) n, ret);
}

unsigned system_cpulist_count(const char *list) {
        unsigned n = 0;

        for (const char *p = list; p && *p && *p != '\n';) {
                char *end;
                unsigned long a = strtoul(p, &end, 10), b = a;
                if (end == p)
                        return 0;
                if (*end == '-') {
                        p = end + 1;
                        b = strtoul(p, &end, 10);
                        if (end == p || b < a)
                                return 0;
                }
                n += (unsigned) MIN(b - a + 1, 1UL << 20);
                p = *end == ',' ? end + 1 : end;
                if (*end != ',' && *end != '\0' && *end != '\n')
                        return 0;
        }
        return n;
}

int system_read_cpus_possible(int root_fd, char **ret) {
        const size_t size = 65536;
        char *buf = malloc(size);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        n = read_file_at(root_fd, "sys/devices/system/cpu/possible", buf, size);
        if (n < 0) {
                free(buf);
                return (int) n;
        }
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        if (n == 0) {
                free(buf);
                return -ENODATA;
        }
        char *s = strndup(buf, (size_t) n);
        free(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
