/* SPDX-License-Identifier: MIT */
/* The taskstats source on the real kernel's generic netlink, and the exit listener: libnl resolves
 * the family; each request then is one prebuilt 28-byte message, sent alone (send(2), recv(2))
 * or pipelined in batches (one send(2), one recvmmsg(2)) into buffers allocated once, the whole
 * cost floor of the protocol (the kernel answers synchronously from within sendmsg). Replies
 * are parsed by probes/taskstats.c. */
#include <errno.h>
#include <fcntl.h>
#include <linux/cgroupstats.h>
#include <linux/genetlink.h>
#include <linux/sock_diag.h>
#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "base/macro.h"
#include "probes/taskstats.h"

/* Requests pipelined per send(2): their replies (about 600 bytes each, 1.5 KiB of socket buffer
 * with their overhead) must all fit the receive buffer, or the kernel drops the excess. */
#define NETLINK_BATCH 32
#define NETLINK_BATCH_RX 2048 /* room for one reply; larger ones are read one by one */

typedef struct NetlinkTaskstats {
        TaskstatsSource base;
        struct nl_sock *sock;
        int fd;
        uint16_t family;
        uint32_t seq;
        uint8_t *rx;
        size_t rx_size;
        uint8_t *batch_rx; /* NETLINK_BATCH slots of NETLINK_BATCH_RX */
} NetlinkTaskstats;

typedef struct TaskstatsRequest {
        struct nlmsghdr nh;
        struct genlmsghdr gh;
        struct nlattr na;
        uint32_t value;
} TaskstatsRequest;

static TaskstatsRequest make_request(uint16_t family, uint32_t seq, uint8_t cmd, uint16_t attr, uint32_t value) {
        return (TaskstatsRequest) {
                .nh = {
                        .nlmsg_len = sizeof(TaskstatsRequest),
                        .nlmsg_type = family,
                        .nlmsg_flags = NLM_F_REQUEST,
                        .nlmsg_seq = seq,
                },
                .gh = {
                        .cmd = cmd,
                        .version = TASKSTATS_GENL_VERSION,
                },
                .na = {
                        .nla_len = NLA_HDRLEN + sizeof(uint32_t),
                        .nla_type = attr,
                },
                .value = value,
        };
}

static int netlink_transact(NetlinkTaskstats *n, uint8_t cmd, uint16_t attr, uint32_t value,
                            const struct nlmsghdr **ret, size_t *ret_len) {
        TaskstatsRequest req = make_request(n->family, ++n->seq, cmd, attr, value);
        ssize_t k;

        for (;;) {
                k = send(n->fd, &req, sizeof req, 0);
                if (k >= 0 || errno != EINTR)
                        break;
        }
        if (k < 0)
                return negative_errno();

        /* Skip anything that is not the answer to this request (a reply to an earlier request
         * that timed out, for instance). */
        for (;;) {
                const struct nlmsghdr *nlh;

                k = recv(n->fd, n->rx, n->rx_size, MSG_TRUNC);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? -ETIMEDOUT : negative_errno();
                }
                if ((size_t) k > n->rx_size)
                        return -EMSGSIZE;
                nlh = (const struct nlmsghdr *) n->rx;
                if ((size_t) k < sizeof *nlh)
                        return -EBADMSG;
                if (nlh->nlmsg_seq != req.nh.nlmsg_seq)
                        continue;
                *ret = nlh;
                *ret_len = (size_t) k;
                return 0;
        }
}

/* One TASKSTATS_CMD_GET for a thread (ATTR_PID) or a whole process (ATTR_TGID). */
static int netlink_get(TaskstatsSource *s, uint16_t attr, pid_t id, TaskStats *ret) {
        NetlinkTaskstats *n = (NetlinkTaskstats *) s;
        const struct nlmsghdr *nlh;
        size_t len;
        int r;

        r = netlink_transact(n, TASKSTATS_CMD_GET, attr, (uint32_t) id, &nlh, &len);
        if (r < 0)
                return r;
        return taskstats_parse_reply(nlh, len, n->family, ret);
}

/* Up to NETLINK_BATCH requests in one send(2): the kernel answers each inside that call (generic
 * netlink walks every message of the buffer), so the replies are all queued when it returns and
 * one recvmmsg(2) takes them. A reply is matched to its request by sequence number. */
static int netlink_batch(NetlinkTaskstats *n, uint16_t attr, const pid_t *ids, size_t k, TaskStats *ret, int *errs) {
        TaskstatsRequest req[NETLINK_BATCH];
        struct mmsghdr msgs[NETLINK_BATCH];
        struct iovec iov[NETLINK_BATCH];
        uint32_t first = n->seq + 1;
        size_t answered = 0;
        ssize_t w;

        for (size_t i = 0; i < k; i++) {
                req[i] = make_request(n->family, ++n->seq, TASKSTATS_CMD_GET, attr, (uint32_t) ids[i]);
                errs[i] = -ETIMEDOUT;
        }
        do
                w = send(n->fd, req, k * sizeof req[0], 0);
        while (w < 0 && errno == EINTR);
        if (w < 0)
                return negative_errno();

        while (answered < k) {
                int got;

                for (size_t i = 0; i < k - answered; i++) {
                        iov[i] = (struct iovec) { n->batch_rx + i * NETLINK_BATCH_RX, NETLINK_BATCH_RX };
                        msgs[i] = (struct mmsghdr) { .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
                }
                got = recvmmsg(n->fd, msgs, (unsigned) (k - answered), MSG_WAITFORONE, NULL);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        /* EAGAIN: the 1 s receive timeout; the rest stay -ETIMEDOUT. Anything
                         * else (ENOBUFS: the kernel dropped replies) leaves the rest to be asked
                         * again one by one. */
                        if (errno != EAGAIN)
                                for (size_t i = 0; i < k; i++)
                                        if (errs[i] == -ETIMEDOUT)
                                                errs[i] = -EAGAIN;
                        return 0;
                }
                for (int j = 0; j < got; j++) {
                        const struct nlmsghdr *nlh = iov[j].iov_base;
                        size_t len = msgs[j].msg_len;

                        /* Not an answer of this batch (a late one of an earlier call); unsigned
                         * arithmetic keeps this right when the sequence numbers wrap. */
                        if (len < sizeof *nlh || (uint32_t) (nlh->nlmsg_seq - first) >= k)
                                continue;
                        size_t i = nlh->nlmsg_seq - first;
                        if (errs[i] != -ETIMEDOUT)
                                continue;
                        errs[i] = msgs[j].msg_hdr.msg_flags & MSG_TRUNC
                                          ? -EMSGSIZE
                                          : taskstats_parse_reply(nlh, len, n->family, &ret[i]);
                        answered++;
                }
        }
        return 0;
}

static int netlink_get_many(TaskstatsSource *s, bool tgid, const pid_t *ids, size_t count, TaskStats *ret, int *errs) {
        NetlinkTaskstats *n = (NetlinkTaskstats *) s;
        uint16_t attr = tgid ? TASKSTATS_CMD_ATTR_TGID : TASKSTATS_CMD_ATTR_PID;

        for (size_t done = 0; done < count;) {
                size_t k = MIN(count - done, (size_t) NETLINK_BATCH);
                int r = netlink_batch(n, attr, ids + done, k, ret + done, errs + done);

                if (r < 0) {
                        for (size_t i = done; i < count; i++)
                                errs[i] = r;
                        return r;
                }
                /* A reply too large for a batch slot (a future struct taskstats), or one the
                 * kernel dropped: asked alone. */
                for (size_t i = done; i < done + k; i++)
                        if (errs[i] == -EMSGSIZE || errs[i] == -EAGAIN)
                                errs[i] = netlink_get(s, attr, ids[i], &ret[i]);
                done += k;
        }
        return 0;
}

static int netlink_get_tid(TaskstatsSource *s, pid_t tid, TaskStats *ret) {
        return netlink_get(s, TASKSTATS_CMD_ATTR_PID, tid, ret);
}

static int netlink_get_tgid(TaskstatsSource *s, pid_t tgid, TaskStats *ret) {
        return netlink_get(s, TASKSTATS_CMD_ATTR_TGID, tgid, ret);
}

static int netlink_cgroupstats(TaskstatsSource *s, int cgroup_fd, TaskStateCounts *ret) {
        NetlinkTaskstats *n = (NetlinkTaskstats *) s;
        const struct nlmsghdr *nlh;
        size_t len;
        int r;

        r = netlink_transact(n, CGROUPSTATS_CMD_GET, CGROUPSTATS_CMD_ATTR_FD, (uint32_t) cgroup_fd, &nlh, &len);
        if (r < 0)
                return r;
        return cgroupstats_parse_reply(nlh, len, n->family, ret);
}

static void netlink_free(TaskstatsSource *s) {
        NetlinkTaskstats *n = (NetlinkTaskstats *) s;

        nl_socket_free(n->sock);
        free(n->rx);
        free(n->batch_rx);
        free(n);
}

static const TaskstatsSourceOps netlink_ops = {
        .get_tid = netlink_get_tid,
        .get_tgid = netlink_get_tgid,
        .get_many = netlink_get_many,
        .cgroupstats = netlink_cgroupstats,
        .free = netlink_free,
};

/* A generic netlink socket connected and resolved to the taskstats family, close-on-exec, with
 * a receive buffer of rx_size. 0, -ENOMEM, -EPROTONOSUPPORT (no generic netlink or no taskstats
 * family), -EIO. */
static int taskstats_socket_open(bool seq_check, size_t rx_size, struct nl_sock **ret_sock, int *ret_fd,
                                 uint16_t *ret_family, uint8_t **ret_rx) {
        struct nl_sock *sock = nl_socket_alloc();
        uint8_t *rx = malloc(rx_size);
        int r, fd;

        if (!sock || !rx) {
                r = -ENOMEM;
                goto fail;
        }
        if (!seq_check)
                nl_socket_disable_seq_check(sock);
        if (genl_connect(sock) < 0) {
                r = -EPROTONOSUPPORT;
                goto fail;
        }
        fd = nl_socket_get_fd(sock);
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        r = genl_ctrl_resolve(sock, TASKSTATS_GENL_NAME);
        if (r < 0) {
                r = r == -NLE_OBJ_NOTFOUND ? -EPROTONOSUPPORT : -EIO;
                goto fail;
        }
        *ret_family = (uint16_t) r;
        *ret_sock = sock;
        *ret_fd = fd;
        *ret_rx = rx;
        return 0;
fail:
        nl_socket_free(sock);
        free(rx);
        return r;
}

int taskstats_netlink_new(TaskstatsSource **ret) {
        /* A reply never times out in practice (the kernel answers inside sendmsg); the bound only
         * keeps a broken kernel from hanging the agent's loop. */
        struct timeval tv = { .tv_sec = 1 };
        NetlinkTaskstats *n;
        int r;

        n = calloc(1, sizeof *n);
        if (!n)
                return -ENOMEM;
        n->base.ops = &netlink_ops;
        n->rx_size = 16384;
        r = taskstats_socket_open(true, n->rx_size, &n->sock, &n->fd, &n->family, &n->rx);
        if (r < 0)
                goto fail;
        if (setsockopt(n->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
                r = negative_errno();
                goto fail;
        }
        /* Room for a whole batch of replies (NETLINK_BATCH); RCVBUFFORCE needs CAP_NET_ADMIN,
         * which taskstats needs anyway. */
        int rcvbuf = 256 * 1024;
        if (setsockopt(n->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0)
                (void) setsockopt(n->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        n->batch_rx = malloc(NETLINK_BATCH * NETLINK_BATCH_RX);
        if (!n->batch_rx) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = &n->base;
        return 0;
fail:
        netlink_free(&n->base);
        return r;
}

#define EXIT_PENDING_MAX 64 /* records read before the registration's ack, kept for the first drain */

struct TaskstatsExitListener {
        struct nl_sock *sock;
        int fd;
        uint16_t family;
        char *cpumask;
        uint8_t *rx;
        size_t rx_size;
        uint32_t drops; /* SK_MEMINFO_DROPS when last read */
        bool congested; /* ENOBUFS seen, the queue not read empty since */
        struct {
                uint8_t *data;
                size_t len;
        } pending[EXIT_PENDING_MAX];
        size_t n_pending;
};

/* Sends the (de)registration for l's cpus with NLM_F_ACK; its sequence number in *ret_seq. */
static int exit_listener_register(TaskstatsExitListener *l, int attr, uint32_t *ret_seq) {
        struct nl_msg *msg =
                nlmsg_alloc_size(NLMSG_SPACE(GENL_HDRLEN + NLA_ALIGN(strlen(l->cpumask) + 1) + NLA_HDRLEN + 64));
        int r = -ENOMEM;

        if (!msg)
                return r;
        if (genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, l->family, 0, NLM_F_ACK, TASKSTATS_CMD_GET,
                        TASKSTATS_GENL_VERSION) &&
            nla_put_string(msg, attr, l->cpumask) >= 0) {
                r = nl_send_auto(l->sock, msg) < 0 ? -EIO : 0;
                if (r >= 0 && ret_seq)
                        *ret_seq = nlmsg_hdr(msg)->nlmsg_seq;
        }
        nlmsg_free(msg);
        return r;
}

/* Reads until the kernel's answer to the registration seq (generic netlink answers inside the
 * send, so it is queued already): 0, or the kernel's refusal (-EINVAL: a cpu outside the possible
 * ones; -EPERM). Exit records that came first are kept for the first drain. */
static int exit_listener_await_ack(TaskstatsExitListener *l, uint32_t seq) {
        for (;;) {
                ssize_t k = recv(l->fd, l->rx, l->rx_size, MSG_TRUNC);
                bool record = false;

                if (k < 0) {
                        if (errno == EINTR || errno == ENOBUFS)
                                continue;
                        return errno == EAGAIN ? -ETIMEDOUT : negative_errno();
                }
                if ((size_t) k > l->rx_size)
                        continue;
                for (const struct nlmsghdr *nlh = (const struct nlmsghdr *) l->rx; NLMSG_OK(nlh, (size_t) k);
                     nlh = NLMSG_NEXT(nlh, k)) {
                        if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_seq == seq &&
                            nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                return ((const struct nlmsgerr *) NLMSG_DATA(nlh))->error;
                        record = true;
                }
                if (record && l->n_pending < EXIT_PENDING_MAX) {
                        uint8_t *d = malloc((size_t) k);
                        if (d) {
                                memcpy(d, l->rx, (size_t) k);
                                l->pending[l->n_pending].data = d;
                                l->pending[l->n_pending++].len = (size_t) k;
                        }
                }
        }
}

/* The socket's count of dropped messages (sk_drops: netlink_overrun() adds one per message it
 * could not queue). 0 or -errno (-ENOPROTOOPT before 4.12). */
static int exit_listener_read_drops(const TaskstatsExitListener *l, uint32_t *ret) {
        uint32_t mem[SK_MEMINFO_VARS] = {};
        socklen_t len = sizeof mem;

        if (getsockopt(l->fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0)
                return negative_errno();
        if (len < (SK_MEMINFO_DROPS + 1) * sizeof(uint32_t))
                return -EPROTO;
        *ret = mem[SK_MEMINFO_DROPS];
        return 0;
}

/* The records dropped since the last count, into *lost; without the counter, one per ENOBUFS. */
static void exit_listener_count_drops(TaskstatsExitListener *l, bool enobufs, unsigned *lost) {
        uint32_t d;

        if (exit_listener_read_drops(l, &d) >= 0) {
                uint32_t n = d - l->drops; /* unsigned: right across a wrap */
                l->drops = d;
                *lost += n > 0 ? n : enobufs;
        } else if (enobufs)
                (*lost)++;
}

static TaskstatsExitListener *exit_listener_free_unregistered(TaskstatsExitListener *l) {
        nl_socket_free(l->sock);
        for (size_t i = 0; i < l->n_pending; i++)
                free(l->pending[i].data);
        free(l->cpumask);
        free(l->rx);
        free(l);
        return NULL;
}

int taskstats_exit_listener_new(const char *cpumask, TaskstatsExitListener **ret) {
        TaskstatsExitListener *l = calloc(1, sizeof *l);
        struct timeval tv = { .tv_sec = 1 }, none = {};
        int r, size = 4 * 1024 * 1024;
        uint32_t seq = 0;

        if (!l)
                return -ENOMEM;
        l->cpumask = strdup(cpumask);
        l->rx_size = 16384;
        /* Records arrive unasked: no sequence numbers to check. */
        r = l->cpumask ? taskstats_socket_open(false, l->rx_size, &l->sock, &l->fd, &l->family, &l->rx) : -ENOMEM;
        if (r < 0)
                goto fail;
        /* Room for bursts of exits; beyond it records are lost and counted. RCVBUFFORCE needs
         * CAP_NET_ADMIN, which taskstats needs anyway. */
        if (setsockopt(l->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
                (void) setsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        (void) exit_listener_read_drops(l, &l->drops);
        if (setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) {
                r = negative_errno();
                goto fail;
        }
        r = exit_listener_register(l, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, &seq);
        if (r >= 0)
                r = exit_listener_await_ack(l, seq);
        if (r < 0)
                goto fail;
        if (setsockopt(l->fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none) < 0 ||
            fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK) < 0) {
                r = negative_errno();
                (void) exit_listener_register(l, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, NULL);
                goto fail;
        }
        *ret = l;
        return 0;
fail:
        exit_listener_free_unregistered(l);
        return r;
}

int taskstats_exit_listener_fd(const TaskstatsExitListener *l) {
        return l->fd;
}

int taskstats_exit_listener_set_rcvbuf(TaskstatsExitListener *l, size_t bytes, size_t *ret_bytes) {
        /* The kernel doubles what it is asked (sock_setsockopt(): room for its own overhead) and
         * compares that with the records' truesize: half of bytes is asked. */
        int ask = (int) MIN(bytes / 2, (size_t) INT32_MAX / 2), got = 0;
        socklen_t len = sizeof got;

        if (setsockopt(l->fd, SOL_SOCKET, SO_RCVBUFFORCE, &ask, sizeof ask) < 0 &&
            setsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &ask, sizeof ask) < 0)
                return negative_errno();
        if (getsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &got, &len) < 0)
                return negative_errno();
        *ret_bytes = got > 0 ? (size_t) got : 0;
        return 0;
}

/* The messages of one datagram: exit records to cb. 0, or the kernel's error (a refusal). */
static int exit_listener_parse(const TaskstatsExitListener *l, const uint8_t *buf, size_t len, TaskstatsExitFn cb,
                               void *userdata) {
        size_t k = len;

        for (const struct nlmsghdr *nlh = (const struct nlmsghdr *) buf; NLMSG_OK(nlh, k); nlh = NLMSG_NEXT(nlh, k)) {
                TaskStats thread, process;
                bool has_process;

                /* An error for a request (a deregistration's, sent even without NLM_F_ACK when
                 * there is an error); acks (error 0) are skipped. */
                if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct nlmsgerr))) {
                        const struct nlmsgerr *e = NLMSG_DATA(nlh);
                        if (e->error < 0)
                                return e->error;
                        continue;
                }
                if (taskstats_parse_exit(nlh, nlh->nlmsg_len, l->family, &thread, &process, &has_process) == 0)
                        cb(&thread, has_process ? &process : NULL, userdata);
        }
        return 0;
}

int taskstats_exit_listener_drain(TaskstatsExitListener *l, size_t max, TaskstatsExitFn cb, void *userdata,
                                  unsigned *lost) {
        int n = 0, r;

        for (size_t i = 0; i < l->n_pending; i++) {
                (void) exit_listener_parse(l, l->pending[i].data, l->pending[i].len, cb, userdata);
                free(l->pending[i].data);
                n++;
        }
        l->n_pending = 0;
        for (;;) {
                if (max > 0 && (size_t) n >= max) {
                        if (l->congested)
                                exit_listener_count_drops(l, false, lost);
                        return n;
                }
                ssize_t k = recv(l->fd, l->rx, l->rx_size, MSG_TRUNC);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) { /* the kernel dropped records: count, keep reading */
                                l->congested = true;
                                exit_listener_count_drops(l, true, lost);
                                continue;
                        }
                        if (errno != EAGAIN)
                                return negative_errno();
                        /* Read empty: the kernel queues again (netlink_rcv_wake()); what it dropped
                         * until now is counted. */
                        if (l->congested)
                                exit_listener_count_drops(l, false, lost);
                        l->congested = false;
                        return n;
                }
                n++;
                if ((size_t) k > l->rx_size)
                        continue; /* larger than any record: not ours */
                r = exit_listener_parse(l, l->rx, (size_t) k, cb, userdata);
                if (r < 0)
                        return r;
        }
}

TaskstatsExitListener *taskstats_exit_listener_free(TaskstatsExitListener *l) {
        if (!l)
                return NULL;
        (void) exit_listener_register(l, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, NULL);
        return exit_listener_free_unregistered(l);
}
