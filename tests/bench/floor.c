/* SPDX-License-Identifier: MIT */
/* The floors psidiag's snapshot is measured against. Written apart from psidiag's code on purpose
 * (raw netlink, no libnl, no psidiag source), so a floor does not share psidiag's costs.
 *
 * psidiag-bench-floor CGROUP_DIR [--states]: the per-thread floor. Reads the cgroup's
 * cgroup.threads and asks taskstats about every thread once (one 28-byte send, one recv), nothing
 * else; --states also reads /proc/<tid>/task/<tid>/stat of every thread (what procfs scraping
 * adds). Prints "threads answered".
 *
 * psidiag-bench-floor CGROUP_DIR --process-first [TOP [STATES]]: the kernel calls a process-first
 * `snapshot --sample-ms 0` of a cgroup without children cannot do without, and nothing else:
 * cgroup.procs; one stat of each /proc/<pid>/task (the thread count); one TGID query per process;
 * (queries 32 to a send(2), their replies in one recvmmsg(2), as psidiag asks);
 * STATES (default 256) thread states evenly spaced over all the threads (/proc/<pid>/task seeked to each, its stat
 * read); then, for the TOP (default 10) processes with the most cpu delay, a listing of their
 * threads and one query per thread, and their comm, cmdline, status and cgroup. Prints "processes
 * threads states-read threads-queried". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char rx[16384] __attribute__((aligned(8)));

struct req {
        struct nlmsghdr n;
        struct genlmsghdr g;
        struct nlattr a;
        uint32_t v;
        char pad[16];
};

static int family_id(int fd) {
        struct {
                struct nlmsghdr n;
                struct genlmsghdr g;
                struct nlattr a;
                char name[12];
        } q = {
                .n = { .nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_HDRLEN + sizeof TASKSTATS_GENL_NAME),
                       .nlmsg_type = GENL_ID_CTRL,
                       .nlmsg_flags = NLM_F_REQUEST },
                .g = { .cmd = CTRL_CMD_GETFAMILY, .version = 1 },
                .a = { .nla_len = NLA_HDRLEN + sizeof TASKSTATS_GENL_NAME, .nla_type = CTRL_ATTR_FAMILY_NAME },
        };
        memcpy(q.name, TASKSTATS_GENL_NAME, sizeof TASKSTATS_GENL_NAME);
        if (send(fd, &q, q.n.nlmsg_len, 0) < 0)
                return -1;
        ssize_t k = recv(fd, rx, sizeof rx, 0);
        struct nlmsghdr *n = (struct nlmsghdr *) rx;
        if (k < (ssize_t) NLMSG_HDRLEN || n->nlmsg_type == NLMSG_ERROR)
                return -1;
        char *p = (char *) NLMSG_DATA(n) + GENL_HDRLEN, *end = rx + n->nlmsg_len;
        while (p + NLA_HDRLEN <= end) {
                struct nlattr *a = (struct nlattr *) p;
                if (a->nla_len < NLA_HDRLEN)
                        break;
                if (a->nla_type == CTRL_ATTR_FAMILY_ID)
                        return *(uint16_t *) (p + NLA_HDRLEN);
                p += NLA_ALIGN(a->nla_len);
        }
        return -1;
}

/* Asks about ids[0..n) (n <= 32) by type, the way psidiag does: every request in one send(2),
 * the replies in one recvmmsg(2) (a reply for each, in order). Replies land in replies[i], their
 * lengths in lens[i] (-1: an error). */
#define BATCH 32
static char replies[BATCH][2048] __attribute__((aligned(8)));

static void query_batch(int fd, int fam, int type, const uint32_t *ids, unsigned n, int *lens) {
        struct req qs[BATCH];
        struct mmsghdr mm[BATCH];
        struct iovec iov[BATCH];
        char out[BATCH * 32] = { 0 };

        if (n == 0 || n > BATCH)
                return;
        for (unsigned i = 0; i < n; i++) {
                qs[i] = (struct req) {
                        .n = { .nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_HDRLEN + 4),
                               .nlmsg_type = (uint16_t) fam,
                               .nlmsg_flags = NLM_F_REQUEST,
                               .nlmsg_seq = i },
                        .g = { .cmd = TASKSTATS_CMD_GET, .version = TASKSTATS_GENL_VERSION },
                        .a = { .nla_len = NLA_HDRLEN + 4, .nla_type = (uint16_t) type },
                        .v = ids[i],
                };
                lens[i] = -1;
        }
        /* struct req is padded past nlmsg_len: pack the requests back to back. */
        size_t len = NLMSG_ALIGN(qs[0].n.nlmsg_len), used = 0;
        for (unsigned i = 0; i < n; i++, used += len)
                memcpy(out + used, &qs[i], len);
        if (send(fd, out, used, 0) < 0)
                return;
        for (unsigned got = 0; got < n;) {
                for (unsigned i = 0; i < n - got; i++) {
                        iov[i] = (struct iovec) { .iov_base = replies[got + i], .iov_len = sizeof replies[0] };
                        mm[i] = (struct mmsghdr) { .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
                }
                int k = recvmmsg(fd, mm, n - got, MSG_WAITFORONE, NULL);
                if (k <= 0)
                        return;
                for (int i = 0; i < k; i++) {
                        struct nlmsghdr *h = (struct nlmsghdr *) replies[got + (unsigned) i];
                        lens[got + (unsigned) i] = h->nlmsg_type == fam ? (int) mm[i].msg_len : -1;
                }
                got += (unsigned) k;
        }
}

/* cpu_delay_total of the struct taskstats in rx (a reply of k bytes), or 0. */
static uint64_t cpu_delay_of(char *buf, int k) {
        char *p = buf + NLMSG_HDRLEN + GENL_HDRLEN, *end = buf + k;
        while (p + NLA_HDRLEN <= end) {
                struct nlattr *a = (struct nlattr *) p;
                if (a->nla_len < NLA_HDRLEN)
                        break;
                if (a->nla_type == TASKSTATS_TYPE_AGGR_TGID || a->nla_type == TASKSTATS_TYPE_AGGR_PID) {
                        p += NLA_HDRLEN; /* into the nest */
                        continue;
                }
                if (a->nla_type == TASKSTATS_TYPE_STATS &&
                    a->nla_len >= NLA_HDRLEN + offsetof(struct taskstats, cpu_delay_total) + 8) {
                        uint64_t v;
                        memcpy(&v, p + NLA_HDRLEN + offsetof(struct taskstats, cpu_delay_total), sizeof v);
                        return v;
                }
                p += NLA_ALIGN(a->nla_len);
        }
        return 0;
}

static void read_small(int dirfd, const char *name) {
        char buf[4096];
        int s = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (s >= 0) {
                (void) !read(s, buf, sizeof buf);
                close(s);
        }
}

#define PROCS_MAX 65536

static int process_first(int fd, int fam, const char *cgroup, unsigned top, unsigned states_max) {
        static int pids[PROCS_MAX], counts[PROCS_MAX];
        static uint64_t delay[PROCS_MAX];
        char path[4096];
        unsigned n = 0, read_states = 0, queried = 0;
        uint64_t total = 0;
        int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        FILE *f;

        snprintf(path, sizeof path, "%s/cgroup.procs", cgroup);
        f = fopen(path, "re");
        if (!f || proc < 0) {
                perror(path);
                return 1;
        }
        while (n < PROCS_MAX && fscanf(f, "%d", &pids[n]) == 1)
                n++;
        fclose(f);
        for (unsigned i = 0; i < n; i++) {
                struct stat st;
                snprintf(path, sizeof path, "%d/task", pids[i]);
                counts[i] = fstatat(proc, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_nlink >= 2
                                    ? (int) st.st_nlink - 2
                                    : 0;
                total += (uint64_t) counts[i];
        }
        for (unsigned i = 0; i < n; i += BATCH) {
                uint32_t ids[BATCH];
                int lens[BATCH];
                unsigned c = n - i < BATCH ? n - i : BATCH;
                for (unsigned b = 0; b < c; b++)
                        ids[b] = (uint32_t) pids[i + b];
                query_batch(fd, fam, TASKSTATS_CMD_ATTR_TGID, ids, c, lens);
                for (unsigned b = 0; b < c; b++)
                        delay[i + b] = lens[b] > 0 ? cpu_delay_of(replies[b], lens[b]) : 0;
        }
        /* The states: position j is thread (j + 1/2) * total / want of all, process after process. */
        uint64_t want = total < states_max ? total : states_max, start = 0, j = 0;
        for (unsigned i = 0; i < n && j < want; i++) {
                uint64_t end = start + (uint64_t) counts[i];
                int d = -1;
                for (uint64_t p;
                     j < want && (p = (uint64_t) (((double) j + 0.5) * (double) total / (double) want)) < end; j++) {
                        union {
                                struct dirent64 de;
                                char raw[sizeof(struct dirent64)];
                        } u;
                        if (d < 0) {
                                snprintf(path, sizeof path, "%d/task", pids[i]);
                                d = openat(proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                                if (d < 0)
                                        break;
                        }
                        if (lseek(d, (off_t) (p - start) + 2, SEEK_SET) < 0 || getdents64(d, u.raw, 40) <= 0)
                                continue;
                        snprintf(path, sizeof path, "%s/stat", u.de.d_name);
                        read_small(d, path);
                        read_states++;
                }
                if (d >= 0)
                        close(d);
                start = end;
        }
        /* The top processes by cpu delay: their threads, one query each, and who they are. */
        for (unsigned t = 0; t < top && t < n; t++) {
                unsigned best = t;
                for (unsigned i = t + 1; i < n; i++)
                        if (delay[i] > delay[best])
                                best = i;
                int tmp = pids[t];
                uint64_t dt = delay[t];
                pids[t] = pids[best], delay[t] = delay[best];
                pids[best] = tmp, delay[best] = dt;
                snprintf(path, sizeof path, "%d/task", pids[t]);
                int d = openat(proc, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (d >= 0) {
                        char buf[32768] __attribute__((aligned(8)));
                        uint32_t ids[BATCH];
                        int lens[BATCH];
                        unsigned c = 0;
                        ssize_t k;
                        while ((k = getdents64(d, buf, sizeof buf)) > 0)
                                for (ssize_t o = 0; o < k;) {
                                        struct dirent64 *e = (struct dirent64 *) (buf + o);
                                        if (e->d_name[0] != '.')
                                                ids[c++] = (uint32_t) atoi(e->d_name);
                                        if (c == BATCH || (c > 0 && o + e->d_reclen >= k)) {
                                                query_batch(fd, fam, TASKSTATS_CMD_ATTR_PID, ids, c, lens);
                                                for (unsigned b = 0; b < c; b++)
                                                        queried += lens[b] > 0;
                                                c = 0;
                                        }
                                        o += e->d_reclen;
                                }
                        close(d);
                }
                static const char *const files[] = { "comm", "cmdline", "status", "cgroup" };
                for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
                        snprintf(path, sizeof path, "%d/%s", pids[t], files[i]);
                        read_small(proc, path);
                }
        }
        close(proc);
        printf("%u %llu %u %u\n", n, (unsigned long long) total, read_states, queried);
        return 0;
}

int main(int argc, char **argv) {
        int states = argc > 2 && strcmp(argv[2], "--states") == 0;
        char path[4096];
        FILE *f;
        int fd, fam, tid;
        unsigned answered = 0, listed = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CGROUP_DIR [--states | --process-first [TOP [STATES]]]\n", argv[0]);
                return 2;
        }
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
        if (fd < 0 || (fam = family_id(fd)) < 0) {
                perror("taskstats");
                return 1;
        }
        if (argc > 2 && strcmp(argv[2], "--process-first") == 0)
                return process_first(fd, fam, argv[1], argc > 3 ? (unsigned) atoi(argv[3]) : 10,
                                     argc > 4 ? (unsigned) atoi(argv[4]) : 256);
        snprintf(path, sizeof path, "%s/cgroup.threads", argv[1]);
        f = fopen(path, "re");
        if (!f) {
                perror(path);
                return 1;
        }
        struct req q = {
                .n = { .nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN + NLA_HDRLEN + 4),
                       .nlmsg_type = (uint16_t) fam,
                       .nlmsg_flags = NLM_F_REQUEST },
                .g = { .cmd = TASKSTATS_CMD_GET, .version = TASKSTATS_GENL_VERSION },
                .a = { .nla_len = NLA_HDRLEN + 4, .nla_type = TASKSTATS_CMD_ATTR_PID },
        };
        while (fscanf(f, "%d", &tid) == 1) {
                listed++;
                q.v = (uint32_t) tid;
                if (send(fd, &q, q.n.nlmsg_len, 0) < 0)
                        continue;
                ssize_t k = recv(fd, rx, sizeof rx, 0);
                if (k > 0 && ((struct nlmsghdr *) rx)->nlmsg_type == fam)
                        answered++;
                if (states) {
                        char sp[64], buf[1024];
                        snprintf(sp, sizeof sp, "/proc/%d/task/%d/stat", tid, tid);
                        int s = open(sp, O_RDONLY | O_CLOEXEC);
                        if (s >= 0) {
                                (void) !read(s, buf, sizeof buf);
                                close(s);
                        }
                }
        }
        fclose(f);
        printf("%u %u\n", listed, answered);
        return 0;
}
