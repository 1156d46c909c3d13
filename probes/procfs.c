/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/cgns.h"
#include "probes/procfs.h"

/* Fields 2 and 3: the comm between the first '(' and the last ')' (a comm may hold either, and
 * spaces), then the state. *ret_p: the space before field 4. */
static int stat_parse_comm_state(const char *buf, size_t len, ProcStat *st, const char **ret_p) {
        const char *end = buf + len, *open, *close = NULL, *p;
        size_t clen;

        open = memchr(buf, '(', len);
        if (!open)
                return -EINVAL;
        for (const char *q = end; q > open; q--)
                if (q[-1] == ')') {
                        close = q - 1;
                        break;
                }
        if (!close)
                return -EINVAL;
        clen = (size_t) (close - open - 1);
        st->comm_len = MIN(clen, sizeof st->comm - 1);
        memcpy(st->comm, open + 1, st->comm_len);
        st->comm[st->comm_len] = '\0';

        /* ") S 1 ..." : state is the field after the last ')'. */
        p = close + 1;
        if (end - p < 3 || p[0] != ' ')
                return -EINVAL;
        st->state = p[1];
        if (p[2] != ' ')
                return -EINVAL;
        *ret_p = p + 3;
        return 0;
}

/* Fields 4 (ppid) to 22 (starttime) from p, the first digit of field 4. */
static int stat_parse_ppid_to_starttime(const char *p, const char *end, ProcStat *st, const char **ret_p) {
        uint64_t v;

        if (parse_u64_prefix(p, end, &v, &p) < 0)
                return -EINVAL;
        st->ppid = (pid_t) v;
        /* Fields 5..21 (pgrp .. itrealvalue; some may be negative) are skipped as tokens but for
         * field 9, flags, and field 12, majflt; field 22 is starttime. */
        for (int field = 5; field <= 22; field++) {
                if (p >= end || *p != ' ')
                        return -EINVAL;
                p++;
                if (field == 9) {
                        if (parse_u64_prefix(p, end, &v, &p) < 0 || v > UINT32_MAX)
                                return -EINVAL;
                        st->flags = (uint32_t) v;
                        continue;
                }
                if (field == 12) {
                        if (parse_u64_prefix(p, end, &v, &p) < 0)
                                return -EINVAL;
                        st->majflt = v;
                        continue;
                }
                if (field == 22)
                        break;
                while (p < end && *p != ' ')
                        p++;
        }
        if (parse_u64_prefix(p, end, &v, &p) < 0)
                return -EINVAL;
        st->starttime_ticks = v;
        *ret_p = p;
        return 0;
}

/* Field 23 vsize, field 24 rss (pages) and field 39, processor, from p, right after field 22; a
 * record cut short before them has none of them, and is not wrong. */
static void stat_parse_rss_processor(const char *p, const char *end, ProcStat *st) {
        uint64_t v;

        if (!(p < end && *p == ' ' && parse_u64_prefix(p + 1, end, &v, &p) >= 0 && p < end && *p == ' ' &&
              parse_u64_prefix(p + 1, end, &v, &p) >= 0))
                return;
        st->rss_pages = v;
        st->has_rss = true;
        /* Fields 25..38 skipped (some may be negative); field 39, processor: the cpu it last ran
         * on, whose clock a sleeping thread's se.exec_start is in (kernel-facts.md: blocked-since). */
        int field = 25;
        for (; field <= 39 && p < end && *p == ' '; field++) {
                p++;
                if (field == 39)
                        break;
                while (p < end && *p != ' ' && *p != '\n')
                        p++;
        }
        if (field == 39 && parse_u64_prefix(p, end, &v, &p) >= 0 && v < INT32_MAX) {
                st->processor = (int) v;
                st->has_processor = true;
        }
}

int proc_stat_parse_buf(const char *buf, size_t len, ProcStat *ret) {
        const char *end = buf + len, *p;
        ProcStat st = {};

        if (stat_parse_comm_state(buf, len, &st, &p) < 0 || stat_parse_ppid_to_starttime(p, end, &st, &p) < 0)
                return -EINVAL;
        stat_parse_rss_processor(p, end, &st);
        *ret = st;
        return 0;
}

/* The first number after key on its status line, at most max. 0 or -EINVAL. */
static int status_field(const char *buf, size_t len, const char *key, uint64_t max, uint64_t *ret) {
        const char *q, *le;
        uint64_t v;

        if (line_find(buf, len, key, &q, &le) < 0)
                return -EINVAL;
        while (q < le && (*q == '\t' || *q == ' '))
                q++;
        if (parse_u64_prefix(q, le, &v, NULL) < 0 || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int proc_status_parse_uid(const char *buf, size_t len, uid_t *ret) {
        uint64_t v;
        int r = status_field(buf, len, "Uid:", 0xffffffffULL, &v);

        if (r >= 0)
                *ret = (uid_t) v;
        return r;
}

int proc_status_parse_tgid(const char *buf, size_t len, pid_t *ret) {
        uint64_t v;
        int r = status_field(buf, len, "Tgid:", INT32_MAX, &v);

        if (r >= 0)
                *ret = (pid_t) v;
        return r;
}

/* One line of /proc/<pid>/cgroup as the kernel writes it (proc_cgroup_show() in
 * kernel/cgroup/cgroup.c): "ID:CONTROLLERS:PATH", ID decimal, PATH absolute. */
static bool cgroup_line_ok(const char *p, const char *le) {
        const char *c1 = memchr(p, ':', (size_t) (le - p)), *c2;

        if (!c1 || c1 == p)
                return false;
        for (const char *q = p; q < c1; q++)
                if (*q < '0' || *q > '9')
                        return false;
        c2 = memchr(c1 + 1, ':', (size_t) (le - c1 - 1));
        return c2 && c2 + 1 < le && c2[1] == '/';
}

int proc_cgroup_parse_unified(const char *buf, size_t len, char *out, size_t size) {
        const char *p = NULL, *le = NULL, *end = buf + len;
        size_t n;

        /* The kernel escapes nothing in a cgroup's name: a name holding a newline (any user may
         * make one in a subtree delegated to them) adds a line of the user's choosing, a second
         * "0::" line naming someone else's cgroup or one cut short. A record with a line that is
         * not the kernel's, or with two "0::" lines, is refused whole. */
        for (const char *q = buf; q < end;) {
                const char *nl = memchr(q, '\n', (size_t) (end - q)), *e = nl ? nl : end;

                if (!cgroup_line_ok(q, e))
                        return -EBADMSG;
                if ((size_t) (e - q) >= 3 && memcmp(q, "0::", 3) == 0) {
                        if (p)
                                return -EBADMSG;
                        p = q + 3;
                        le = e;
                }
                q = nl ? nl + 1 : end;
        }
        if (!p)
                return -ENOENT;
        n = (size_t) (le - p);
        if (n + 1 > size)
                return -ENOBUFS;
        memcpy(out, p, n);
        out[n] = '\0';
        return 0;
}

/* Reads /proc/<pid>/<name> into buf. A task that exited between listing and reading has lost its
 * /proc directory (ENOENT) or is losing it (ESRCH): both come back as -ESRCH, which callers count
 * as exits, not errors. */
static ssize_t read_pid_file(int proc_fd, pid_t pid, const char *name, char *buf, size_t size) {
        char path[64];
        ssize_t n;

        snprintf(path, sizeof path, "%d/%s", (int) pid, name);
        n = read_file_at(proc_fd, path, buf, size);
        return n == -ENOENT ? -ESRCH : n;
}

/* One procfs record (a stat or status) in one read: it comes whole, and a sample reads hundreds
 * of them. A task that ended is -ESRCH. */
static ssize_t read_task_record(int dirfd, const char *name, char *buf, size_t size) {
        ssize_t n = read_record_at(dirfd, name, buf, size);

        return n == -ENOENT ? -ESRCH : n;
}

/* A stat record dirfd/name (a thread's or a process's), parsed. */
static int read_stat_record(int dirfd, const char *name, ProcStat *ret) {
        char buf[1024];
        ssize_t n = read_task_record(dirfd, name, buf, sizeof buf);

        return n < 0 ? (int) n : proc_stat_parse_buf(buf, (size_t) n, ret);
}

int proc_read_stat(int proc_fd, pid_t tid, ProcStat *ret) {
        char name[48];

        /* <tid>/task/<tid>/stat, not <tid>/stat: the latter sums cpu times over the whole thread
         * group, so reading it for every thread of a 4,000-thread process cost 380 us each (O(n^2),
         * 1.5 s in all on 6.18); the per-thread file costs about 12 us. */
        snprintf(name, sizeof name, "%d/task/%d/stat", (int) tid, (int) tid);
        return read_stat_record(proc_fd, name, ret);
}

int proc_read_task_stat(int task_fd, pid_t tid, ProcStat *ret) {
        char name[32];

        snprintf(name, sizeof name, "%d/stat", (int) tid);
        return read_stat_record(task_fd, name, ret);
}

int proc_read_process_stat(int proc_fd, pid_t pid, ProcStat *ret) {
        char name[32];

        snprintf(name, sizeof name, "%d/stat", (int) pid);
        return read_stat_record(proc_fd, name, ret);
}

int proc_io_parse_buf(const char *buf, size_t len, ProcIo *ret) {
        const char *q, *le;
        uint64_t r, w, c = 0;

        if (line_find(buf, len, "read_bytes: ", &q, &le) < 0 || parse_u64_exact(q, (size_t) (le - q), &r) < 0 ||
            line_find(buf, len, "write_bytes: ", &q, &le) < 0 || parse_u64_exact(q, (size_t) (le - q), &w) < 0)
                return -EINVAL;
        /* Absent without CONFIG_TASK_IO_ACCOUNTING's full set; then nothing was cancelled. */
        if (line_find(buf, len, "cancelled_write_bytes: ", &q, &le) >= 0 &&
            parse_u64_exact(q, (size_t) (le - q), &c) < 0)
                return -EINVAL;
        *ret = (ProcIo) { .read_bytes = r, .write_bytes = w, .cancelled_write_bytes = c };
        return 0;
}

int proc_read_io(int proc_fd, pid_t pid, ProcIo *ret) {
        char buf[512], name[32];
        ssize_t n;

        snprintf(name, sizeof name, "%d/io", (int) pid);
        n = read_task_record(proc_fd, name, buf, sizeof buf);
        return n < 0 ? (int) n : proc_io_parse_buf(buf, (size_t) n, ret);
}

int proc_status_parse_memory(const char *buf, size_t len, ProcMemory *ret) {
        ProcMemory m = {};
        uint64_t uid;

        if (status_field(buf, len, "VmRSS:", UINT64_MAX, &m.rss_kib) < 0 ||
            status_field(buf, len, "RssAnon:", UINT64_MAX, &m.anon_kib) < 0 ||
            status_field(buf, len, "RssFile:", UINT64_MAX, &m.file_kib) < 0 ||
            status_field(buf, len, "RssShmem:", UINT64_MAX, &m.shmem_kib) < 0 ||
            status_field(buf, len, "VmSwap:", UINT64_MAX, &m.swap_kib) < 0 ||
            status_field(buf, len, "Uid:", 0xffffffffULL, &uid) < 0)
                return -EINVAL;
        m.uid = (uid_t) uid;
        *ret = m;
        return 0;
}

int proc_read_memory(int proc_fd, pid_t pid, ProcMemory *ret) {
        char buf[8192];
        ssize_t n = read_pid_file(proc_fd, pid, "status", buf, sizeof buf);

        return n < 0 ? (int) n : proc_status_parse_memory(buf, (size_t) n, ret);
}

int proc_read_uid(int proc_fd, pid_t pid, uid_t *ret) {
        char buf[4096];
        ssize_t n = read_pid_file(proc_fd, pid, "status", buf, sizeof buf);

        return n < 0 ? (int) n : proc_status_parse_uid(buf, (size_t) n, ret);
}

int proc_read_tgid(int proc_fd, pid_t tid, pid_t *ret) {
        char buf[4096], name[48];
        ssize_t n;

        /* /proc/<tid> answers for any thread (hidden from listings, not from lookups); its
         * status's Tgid line names the thread's process. */
        snprintf(name, sizeof name, "%d/status", (int) tid);
        n = read_task_record(proc_fd, name, buf, sizeof buf);
        return n < 0 ? (int) n : proc_status_parse_tgid(buf, (size_t) n, ret);
}

/* Our cgroup namespace's root relative to the cgroup2 mount, once found (probes/cgns.h); set
 * before any sample runs, read by every thread after. */
static char namespace_root[1024];
static bool namespace_resolves;

void proc_cgroup_set_namespace_root(const char *root) {
        namespace_resolves = root != NULL;
        snprintf(namespace_root, sizeof namespace_root, "%s", root ? root : "");
}

int proc_read_cgroup(int proc_fd, pid_t pid, char *out, size_t size) {
        char buf[4096], ns_path[4096];
        ssize_t n = read_pid_file(proc_fd, pid, "cgroup", buf, sizeof buf);
        int r;

        if (n < 0)
                return (int) n;
        if (!namespace_resolves)
                return proc_cgroup_parse_unified(buf, (size_t) n, out, size);
        r = proc_cgroup_parse_unified(buf, (size_t) n, ns_path, sizeof ns_path);
        if (r < 0)
                return r;
        /* A path that climbs above the mount (it cannot, if the root was found right) is left as
         * the kernel wrote it: the incident then says it is outside our namespace. */
        if (cgns_resolve(namespace_root, ns_path, out, size) < 0) {
                if (strlen(ns_path) >= size)
                        return -ENOBUFS;
                strcpy(out, ns_path);
        }
        return 0;
}

int proc_cgroup_namespace_locate(const Sysroot *s, CgroupNamespace *ret) {
        char buf[4096], self[1024];
        ssize_t n = read_pid_file(s->proc_fd, getpid(), "cgroup", buf, sizeof buf);
        int r;

        if (n < 0)
                return (int) n;
        /* As the kernel writes it, whatever proc_cgroup_set_namespace_root() said before. */
        r = proc_cgroup_parse_unified(buf, (size_t) n, self, sizeof self);
        if (r < 0)
                return r;
        cgns_locate(s, self, ret);
        return 0;
}

bool proc_cgroup_outside_namespace(const char *path) {
        return strncmp(path, "/..", 3) == 0 && (path[3] == '\0' || path[3] == '/');
}

static int read_ns_link(int proc_fd, const char *name, char *buf, size_t size) {
        ssize_t n = readlinkat(proc_fd, name, buf, size - 1);

        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        return 0;
}

int proc_cgroup_namespace_read(int proc_fd, unsigned max_scan, ProcCgroupNamespace *ret) {
        ProcCgroupNamespace ns = {};
        char self[64], init[64];
        struct dirent *de;
        DIR *d;
        int r;

        r = read_ns_link(proc_fd, "self/ns/cgroup", self, sizeof self);
        if (r < 0)
                return r;
        /* Another user's pid 1 (or hidepid) hides its link: nothing to compare, no verdict. */
        ns.differs_from_init = read_ns_link(proc_fd, "1/ns/cgroup", init, sizeof init) >= 0 && strcmp(self, init) != 0;

        r = opendir_at(proc_fd, ".", &d);
        if (r < 0)
                return r;
        while (ns.scanned < max_scan && (de = readdir(d))) {
                char path[1024];
                uint64_t u;
                pid_t pid;

                if (parse_uint64(de->d_name, &u) < 0 || u == 0 || u > INT32_MAX)
                        continue;
                pid = (pid_t) u;
                /* A process that exited meanwhile (-ESRCH) or has no cgroup2 line is not counted. */
                if (proc_read_cgroup(proc_fd, pid, path, sizeof path) < 0)
                        continue;
                ns.scanned++;
                if (proc_cgroup_outside_namespace(path)) {
                        ns.outside++;
                        if (ns.outside_pid == 0)
                                ns.outside_pid = pid;
                }
        }
        closedir(d);
        *ret = ns;
        return 0;
}

int proc_read_rss_kib(int proc_fd, pid_t pid, uint64_t *ret) {
        char buf[256];
        ssize_t n = read_pid_file(proc_fd, pid, "statm", buf, sizeof buf - 1);
        const char *p, *end;
        uint64_t pages;

        if (n < 0)
                return (int) n;
        buf[n] = '\0';
        p = strchr(buf, ' ');
        if (!p)
                return -EINVAL;
        p++;
        end = p + strcspn(p, " \n");
        if (parse_u64_exact(p, (size_t) (end - p), &pages) < 0)
                return -EINVAL;
        *ret = pages * (uint64_t) (sysconf(_SC_PAGESIZE) / 1024);
        return 0;
}

int proc_cpu_time_us(pid_t pid, uint64_t *ret) {
        struct timespec ts;
        clockid_t clk;
        int r;

        r = clock_getcpuclockid(pid, &clk);
        if (r != 0)
                return -r;
        if (clock_gettime(clk, &ts) < 0)
                return -errno;
        *ret = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
        return 0;
}

ssize_t proc_read_comm(int proc_fd, pid_t pid, char *out, size_t size) {
        ssize_t n = read_pid_file(proc_fd, pid, "comm", out, size);

        if (n > 0 && out[n - 1] == '\n')
                out[--n] = '\0';
        return n;
}

ssize_t proc_read_cmdline(int proc_fd, pid_t pid, char *out, size_t size) {
        ssize_t n = read_pid_file(proc_fd, pid, "cmdline", out, size);

        if (n < 0)
                return n;
        while (n > 0 && out[n - 1] == '\0')
                n--;
        for (ssize_t i = 0; i < n; i++)
                if (out[i] == '\0')
                        out[i] = ' ';
        out[n] = '\0';
        return n;
}
