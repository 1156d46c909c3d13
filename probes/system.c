/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

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

int system_read_inotify_max_watches(int proc_fd, uint64_t *ret) {
        char buf[24];
        ssize_t n = read_file_at(proc_fd, "sys/fs/inotify/max_user_watches", buf, sizeof buf - 1);

        if (n < 0)
                return (int) n;
        while (n > 0 && buf[n - 1] == '\n')
                n--;
        return parse_u64_exact(buf, (size_t) n, ret);
}

/* The "inotify wd:" lines of an inotify instance's fdinfo, one per watch (fs/notify/fdinfo.c
 * inotify_fdinfo()), read in pieces: an instance with 20,000 watches has 1.6 MB of them. */
static uint64_t count_watches(int fd) {
        static const char key[] = "\ninotify wd:";
        const size_t k = sizeof key - 1;
        char buf[8192];
        size_t have = 1;
        uint64_t n = 0;
        ssize_t r;

        buf[0] = '\n'; /* the first line */
        while ((r = read(fd, buf + have, sizeof buf - have)) > 0) {
                have += (size_t) r;
                for (const char *p = buf; (p = memmem(p, have - (size_t) (p - buf), key, k)); p += k)
                        n++;
                /* a key cut at the end is counted with the next piece */
                size_t keep = MIN(have, k - 1);
                memmove(buf, buf + have - keep, keep);
                have = keep;
        }
        return n;
}

static void count_process(int proc_fd, const char *pid, InotifyUse *u, bool is_comm) {
        char path[600], link[32];
        struct dirent *de;
        DIR *d;

        snprintf(path, sizeof path, "%s/fd", pid);
        if (opendir_at(proc_fd, path, &d) < 0)
                return; /* ended */
        while ((de = readdir(d))) {
                ssize_t n;
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof path, "%s/fd/%s", pid, de->d_name);
                n = readlinkat(proc_fd, path, link, sizeof link - 1);
                if (n < 0)
                        continue;
                link[n] = '\0';
                if (strcmp(link, "anon_inode:inotify") != 0)
                        continue;
                snprintf(path, sizeof path, "%s/fdinfo/%s", pid, de->d_name);
                fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        continue;
                uint64_t w = count_watches(fd);
                close(fd);
                u->watches += w;
                if (is_comm)
                        u->comm_watches += w;
        }
        closedir(d);
}

int system_count_inotify(int proc_fd, uid_t uid, const char *comm, unsigned max_procs, InotifyUse *ret) {
        InotifyUse u = {};
        struct dirent *de;
        DIR *d;
        int r;

        r = opendir_at(proc_fd, ".", &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                char path[600], name[32];
                struct stat st;
                ssize_t n;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                if (fstatat(proc_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != uid)
                        continue;
                if (u.scanned >= max_procs) {
                        u.truncated = true;
                        break;
                }
                u.scanned++;
                snprintf(path, sizeof path, "%s/comm", de->d_name);
                n = read_file_at(proc_fd, path, name, sizeof name - 1);
                bool is_comm = false;
                if (n > 0) {
                        name[n] = '\0';
                        name[strcspn(name, "\n")] = '\0';
                        is_comm = comm && strcmp(name, comm) == 0 && atoi(de->d_name) != getpid();
                }
                uint64_t before = u.watches;
                count_process(proc_fd, de->d_name, &u, is_comm);
                if (is_comm && u.watches > before)
                        u.comm_procs++;
        }
        closedir(d);
        *ret = u;
        return 0;
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

/* Walks a cpu list: the cpus into cpus (up to max of them, none when cpus is NULL), their number
 * (each range counted up to 2^20) into *ret_total. -EINVAL for a malformed list, or, when cpus
 * are stored, a cpu past INT_MAX; else how many were stored. */
static int cpulist_walk(const char *list, int *cpus, size_t max, unsigned *ret_total) {
        size_t n = 0;
        unsigned total = 0;

        for (const char *p = list; p && *p && *p != '\n';) {
                char *end;
                unsigned long a = strtoul(p, &end, 10), b = a;
                if (end == p)
                        return -EINVAL;
                if (*end == '-') {
                        p = end + 1;
                        b = strtoul(p, &end, 10);
                        if (end == p || b < a)
                                return -EINVAL;
                }
                if (*end != ',' && *end != '\0' && *end != '\n')
                        return -EINVAL;
                if (cpus && b > INT_MAX)
                        return -EINVAL;
                total += (unsigned) MIN(b - a + 1, 1UL << 20);
                for (unsigned long c = a; cpus && c <= b && n < max; c++)
                        cpus[n++] = (int) c;
                p = *end == ',' ? end + 1 : end;
        }
        if (ret_total)
                *ret_total = total;
        return (int) n;
}

unsigned system_cpulist_count(const char *list) {
        unsigned total = 0;

        return cpulist_walk(list, NULL, 0, &total) < 0 ? 0 : total;
}

int system_cpulist_expand(const char *list, int *cpus, size_t max) {
        return cpulist_walk(list, cpus, max, NULL);
}

static int read_cpus(int root_fd, const char *path, char **ret) {
        const size_t size = 65536;
        char *buf = malloc(size);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        n = read_file_at(root_fd, path, buf, size);
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

int system_read_cpus_possible(int root_fd, char **ret) {
        return read_cpus(root_fd, "sys/devices/system/cpu/possible", ret);
}

int system_read_cpus_online(int root_fd, char **ret) {
        return read_cpus(root_fd, "sys/devices/system/cpu/online", ret);
}
