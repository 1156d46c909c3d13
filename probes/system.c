/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "base/fileio.h"
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

int system_read_inotify_max_watches(int proc_fd, uint64_t *ret) {
        char buf[24];
        ssize_t n = read_file_at(proc_fd, "sys/fs/inotify/max_user_watches", buf, sizeof buf - 1);

        if (n < 0)
                return (int) n;
        while (n > 0 && buf[n - 1] == '\n')
                n--;
        return parse_u64_exact(buf, (size_t) n, ret);
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
