/* SPDX-License-Identifier: MIT */
/* /dev/kmsg records and the kernel's OOM kill messages. The parsers are pure (bytes in, never
 * logs); kmsg_open_end() and kmsg_read_record() are the two calls the agent reads the device with.
 *
 * A record is "PRIO,SEQ,TIMESTAMP_US,FLAGS[,...];MESSAGE\n" optionally followed by continuation
 * lines (" KEY=VALUE\n"). An OOM kill is two messages (since 4.19/5.0):
 *   oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/a,
 *            task_memcg=/a/b,task=COMM,pid=PID,uid=UID
 *   Memory cgroup out of memory: Killed process PID (COMM) total-vm:NkB, anon-rss:NkB,
 *            file-rss:NkB, shmem-rss:NkB, UID:N pgtables:NkB oom_score_adj:N
 * ("Out of memory: Killed process ..." for a global OOM; older kernels lack "UID:" and what
 * follows). COMM and cgroup names are arbitrary bytes, commas and parentheses included, so
 * fields are found from the fixed text around them, the last occurrence where that matters. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct KmsgRecord {
        unsigned priority; /* facility * 8 + level, as the kernel writes it */
        uint64_t seq;
        uint64_t timestamp_us; /* since boot */
        const char *message;   /* points into the buffer; not NUL-terminated */
        size_t message_len;
} KmsgRecord;

/* Larger than any record the kernel hands out (a read with a smaller buffer fails with EINVAL). */
#define KMSG_RECORD_MAX 16384

/* Opens path (/dev/kmsg) non-blocking for reading, positioned after the newest record: only what
 * the kernel logs from now on is read. fd or -errno (EPERM: dmesg_restrict without CAP_SYSLOG). */
int kmsg_open_end(const char *path);

/* What an open of /dev/kmsg that failed with err says, to follow its strerror(): EPERM with
 * CAP_SYSLOG (has_syslog > 0) is not kernel.dmesg_restrict but a container's device cgroup (the
 * file given as a bind mount, not as a device) or an LSM; EPERM without it (0) is dmesg_restrict;
 * "" for another error or when the capability is not known (< 0). A static string. */
const char *kmsg_open_why(int err, int has_syslog);

/* Reads the next record into buf (KMSG_RECORD_MAX bytes). Returns its length, -EAGAIN when none is
 * waiting, -EPIPE when the ring overwrote records before they were read (the next read goes on
 * with the oldest record kept; the ones in between are lost), or another -errno. */
ssize_t kmsg_read_record(int fd, char *buf, size_t size);

/* Parses one record read from /dev/kmsg (one read(2) returns one record). 0 or -EINVAL. */
int kmsg_parse_record(const char *buf, size_t len, KmsgRecord *ret);

#define OOM_COMM_MAX 64
#define OOM_CGROUP_MAX 512

typedef struct OomKill {
        bool has_header; /* the oom-kill: line was seen */
        char constraint[32];
        char oom_memcg[OOM_CGROUP_MAX];  /* the memcg whose limit was hit; "" for a global OOM */
        char task_memcg[OOM_CGROUP_MAX]; /* the victim's memcg */
        pid_t pid;
        int64_t uid; /* -1: unknown */
        char comm[OOM_COMM_MAX];
        size_t comm_len;
        bool killed; /* the "Killed process" line was seen */
        bool global; /* "Out of memory:" rather than "Memory cgroup out of memory:" */
        bool has_rss;
        uint64_t total_vm_kib, anon_rss_kib, file_rss_kib, shmem_rss_kib;
} OomKill;

typedef enum OomLine {
        OOM_LINE_NONE,   /* not an OOM kill message */
        OOM_LINE_HEADER, /* an oom-kill: line; *state was reset and filled */
        OOM_LINE_KILLED, /* a Killed process line; merged into *state (reset first when its pid differs) */
} OomLine;

/* Feeds one kmsg message (the part after ';'). Returns what it was. */
OomLine oom_parse_message(const char *msg, size_t len, OomKill *state);
