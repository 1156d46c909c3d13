/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/text.h"
#include "probes/kmsg.h"

int kmsg_parse_record(const char *buf, size_t len, KmsgRecord *ret) {
        const char *end = buf + len, *p, *semi, *nl;
        uint64_t prio, seq, ts;

        semi = memchr(buf, ';', len);
        if (!semi)
                return -EINVAL;
        if (parse_u64_prefix(buf, semi, &prio, &p) < 0 || p >= semi || *p != ',' ||
            parse_u64_prefix(p + 1, semi, &seq, &p) < 0 || p >= semi || *p != ',' ||
            parse_u64_prefix(p + 1, semi, &ts, &p) < 0 || p >= semi || *p != ',' || prio > 1023)
                return -EINVAL;
        nl = memchr(semi + 1, '\n', (size_t) (end - semi - 1));
        *ret = (KmsgRecord) {
                .priority = (unsigned) prio,
                .seq = seq,
                .timestamp_us = ts,
                .message = semi + 1,
                .message_len = (size_t) ((nl ? nl : end) - semi - 1),
        };
        return 0;
}

/* The last occurrence of needle in [s, end). */
static const char *find_last(const char *s, const char *end, const char *needle) {
        size_t n = strlen(needle);
        const char *found = NULL;

        for (const char *p = s; p + n <= end; p++) {
                p = memmem(p, (size_t) (end - p), needle, n);
                if (!p)
                        break;
                found = p;
        }
        return found;
}

static OomLine parse_header(const char *msg, const char *end, OomKill *o) {
        const char *task, *pid, *uid, *oom_memcg, *task_memcg, *p;
        uint64_t v;

        /* Fixed order: ...,oom_memcg=X,task_memcg=Y,task=COMM,pid=N,uid=N. From the end, since COMM
         * and the cgroup names may hold anything. */
        uid = find_last(msg, end, ",uid=");
        pid = uid ? find_last(msg, uid, ",pid=") : NULL;
        task = pid ? find_last(msg, pid, ",task=") : NULL;
        if (!task)
                return OOM_LINE_NONE;
        *o = (OomKill) { .has_header = true, .uid = -1 };
        if (parse_u64_prefix(pid + 5, uid, &v, &p) < 0 || p != uid || v == 0 || v > INT32_MAX)
                return OOM_LINE_NONE;
        o->pid = (pid_t) v;
        if (parse_u64_prefix(uid + 5, end, &v, &p) == 0 && v <= UINT32_MAX)
                o->uid = (int64_t) v;
        text_copy_range(o->comm, sizeof o->comm, task + 6, pid);
        o->comm_len = strnlen(o->comm, sizeof o->comm);
        const char *c = memmem(msg, (size_t) (task - msg), "constraint=", 11);
        if (c) {
                const char *comma = memchr(c, ',', (size_t) (task - c));
                text_copy_range(o->constraint, sizeof o->constraint, c + 11, comma ? comma : task);
        }
        oom_memcg = memmem(msg, (size_t) (task - msg), ",oom_memcg=", 11);
        task_memcg = find_last(msg, task, ",task_memcg=");
        if (oom_memcg && task_memcg && oom_memcg < task_memcg)
                text_copy_range(o->oom_memcg, sizeof o->oom_memcg, oom_memcg + 11, task_memcg);
        if (task_memcg)
                text_copy_range(o->task_memcg, sizeof o->task_memcg, task_memcg + 12, task);
        return OOM_LINE_HEADER;
}

/* "NAME:NkB" after start, e.g. "anon-rss:32256kB". */
static bool kib_after(const char *s, const char *end, const char *name, uint64_t *ret) {
        const char *p = memmem(s, (size_t) (end - s), name, strlen(name));
        const char *q;

        return p && parse_u64_prefix(p + strlen(name), end, ret, &q) == 0 && end - q >= 2 && q[0] == 'k' && q[1] == 'B';
}

static OomLine parse_killed(const char *msg, const char *end, OomKill *o) {
        static const char killed[] = "Killed process ";
        const char *k = memmem(msg, (size_t) (end - msg), killed, sizeof killed - 1), *p, *open, *close;
        uint64_t pid;

        if (!k || parse_u64_prefix(k + sizeof killed - 1, end, &pid, &p) < 0 || pid == 0 || pid > INT32_MAX ||
            end - p < 2 || p[0] != ' ' || p[1] != '(')
                return OOM_LINE_NONE;
        open = p + 2;
        close = find_last(open, end, ") total-vm:");
        if (!close)
                return OOM_LINE_NONE;
        /* A Killed line for another victim than the header's: start afresh (the header was lost). */
        if (!o->has_header || o->pid != (pid_t) pid)
                *o = (OomKill) { .uid = -1 };
        o->pid = (pid_t) pid;
        o->killed = true;
        o->global = memmem(msg, (size_t) (k - msg), "Memory cgroup", 13) == NULL;
        if (!o->has_header) {
                text_copy_range(o->comm, sizeof o->comm, open, close);
                o->comm_len = strnlen(o->comm, sizeof o->comm);
        }
        o->has_rss = kib_after(close, end, "total-vm:", &o->total_vm_kib) &&
                     kib_after(close, end, "anon-rss:", &o->anon_rss_kib) &&
                     kib_after(close, end, "file-rss:", &o->file_rss_kib) &&
                     kib_after(close, end, "shmem-rss:", &o->shmem_rss_kib);
        const char *u = find_last(close, end, "UID:");
        uint64_t uid;
        if (o->uid < 0 && u && parse_u64_prefix(u + 4, end, &uid, NULL) == 0 && uid <= UINT32_MAX)
                o->uid = (int64_t) uid;
        return OOM_LINE_KILLED;
}

OomLine oom_parse_message(const char *msg, size_t len, OomKill *state) {
        const char *end = msg + len;

        if (len >= 9 && memcmp(msg, "oom-kill:", 9) == 0)
                return parse_header(msg, end, state);
        /* "Memory cgroup out of memory: Killed process ..." or "Out of memory: Killed process ..." */
        if (memmem(msg, len, "Killed process ", 15) &&
            (memmem(msg, len, "out of memory", 13) || memmem(msg, len, "Out of memory", 13)))
                return parse_killed(msg, end, state);
        return OOM_LINE_NONE;
}

int kmsg_open_end(const char *path) {
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        /* SEEK_END on /dev/kmsg moves this reader past every record logged so far. */
        if (lseek(fd, 0, SEEK_END) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

const char *kmsg_open_why(int err, int has_syslog) {
        if (err != -EPERM || has_syslog < 0)
                return "";
        return has_syslog ? " although CAP_SYSLOG is present: a container's device cgroup refuses it (give /dev/kmsg "
                            "as a device, not a bind mount: docker, podman --device /dev/kmsg) or an LSM does"
                          : " (CAP_SYSLOG is needed while kernel.dmesg_restrict=1)";
}

ssize_t kmsg_read_record(int fd, char *buf, size_t size) {
        for (;;) {
                ssize_t n = read(fd, buf, size);
                if (n >= 0)
                        return n;
                if (errno != EINTR)
                        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        }
}
