/* SPDX-License-Identifier: MIT */
/* The floor psidiag's snapshot is measured against: read a cgroup's cgroup.threads and ask
 * taskstats about every thread once (one 28-byte send, one recv), nothing else. Written apart
 * from psidiag's code on purpose (raw netlink, no libnl), so the floor does not share psidiag's
 * costs. Usage: psidiag-bench-floor CGROUP_DIR [--states]. --states also reads /proc/<tid>/task/<tid>/stat
 * of every thread (what procfs scraping adds). Prints "threads answered" to stdout. */
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

int main(int argc, char **argv) {
        int states = argc > 2 && strcmp(argv[2], "--states") == 0;
        char path[4096];
        FILE *f;
        int fd, fam, tid;
        unsigned answered = 0, listed = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CGROUP_DIR [--states]\n", argv[0]);
                return 2;
        }
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
        if (fd < 0 || (fam = family_id(fd)) < 0) {
                perror("taskstats");
                return 1;
        }
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
