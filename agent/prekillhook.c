/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/health.h"
#include "agent/killwatch.h"
#include "agent/prekillhook.h"
#include "kills/varlink.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/testhold.h"
#include "config/keys.h"

/* At most this many clients at once: systemd-oomd opens one per kill it announces, one at a time
 * per cgroup (oomd-util.c oomd_cgroup_kill_mark() queues a cgroup once). One more makes room by
 * hanging up on the client that has been quiet longest (counted as busy): a pile of silent
 * clients never keeps systemd-oomd's call out. */
#define PREKILL_CONNS_MAX 16
/* A client that has not sent a whole message this long after its last one is hung up on
 * (counted as idle): systemd-oomd sends its call right after it connects. */
#define PREKILL_IDLE_S 5.0
/* Replies not yet taken by a client that does not read: past this, it is hung up on. */
#define PREKILL_OUT_MAX (64 * 1024)
/* Connections waiting to be taken (the kernel caps it at net.core.somaxconn), and how many are
 * taken per wakeup. */
#define PREKILL_BACKLOG 256
#define PREKILL_ACCEPT_BATCH 64

/* Measures at once: one per cgroup systemd-oomd is about to kill. Beyond it, a Notify is answered
 * at once and its cgroup not measured. */
#define PREKILL_JOBS_MAX 8
/* The share of prekill_reply_ms each step may take, in tenths: the first reading until half of
 * it, the second reading (the delays' window) from 6 to 9 tenths, then the answer, at 9 tenths
 * whatever is measured by then. */
#define PREKILL_FIRST_TENTHS 5
#define PREKILL_SECOND_TENTHS 6
#define PREKILL_ANSWER_TENTHS 9
/* Measuring goes a slice of this long at a time, between the loop's events: no client, trigger or
 * sample waits longer for it. */
#define PREKILL_SLICE_US (5 * USEC_PER_MSEC)
/* The user systemd-oomd runs as (systemd's units/systemd-oomd.service: User=systemd-oom, with
 * CAP_DAC_OVERRIDE, which lets it connect to a socket of mode 0600 that root owns): seen in the
 * sid guest, systemd 262, whose Notify came from uid systemd-oom, not root. */
#define PREKILL_OOMD_USER "systemd-oom"

typedef struct PrekillConn PrekillConn;

/* One Notify being measured. */
typedef struct PrekillJob {
        AgentPrekill *p;
        PrekillConn *conn; /* the caller until it is answered (NULL: gone, or oneway) */
        PrekillMeasure *m;
        bool answered;
        ev_timer second; /* at 6 tenths: the second reading begins */
        ev_timer answer; /* at 9 tenths: the answer, measured or not */
        ev_idle step;    /* the measuring, a slice at a time */
} PrekillJob;

struct AgentPrekill {
        Agent *a;
        int fd;
        ev_io io;
        char *path; /* the socket made, removed at stop */
        dev_t dev;
        ino_t ino;
        uid_t oomd_uid; /* PREKILL_OOMD_USER's, or 0 (root alone) when there is no such user */
        PrekillConn *conns[PREKILL_CONNS_MAX];
        size_t n_conns;
        PrekillJob *jobs[PREKILL_JOBS_MAX];
        size_t n_jobs;
};

struct PrekillConn {
        AgentPrekill *p;
        int fd;
        ev_io io;
        ev_timer idle;
        bool closing; /* hang up once out is sent */
        char in[VARLINK_MESSAGE_MAX];
        size_t n_in;
        char *out;
        size_t n_out, out_cap;
        usec_t active_us; /* accepted, or its last read */
        PrekillJob *job;  /* its Notify, until answered: nothing more is read meanwhile */
};

static void count(AgentPrekill *p, CountersPrekill what) {
        p->a->counters.prekill[what]++;
        health_update(p->a);
}

static void conn_free(PrekillConn *c) {
        AgentPrekill *p = c->p;

        ev_io_stop(p->a->loop, &c->io);
        ev_timer_stop(p->a->loop, &c->idle);
        if (c->job)
                c->job->conn = NULL; /* measured all the same; the answer goes nowhere */
        safe_close(c->fd);
        free(c->out);
        for (size_t i = 0; i < p->n_conns; i++)
                if (p->conns[i] == c) {
                        p->conns[i] = p->conns[--p->n_conns];
                        break;
                }
        free(c);
}

/* Sends what is queued; watches for writability while some is left. 0, or -errno: hang up. */
static int conn_flush(PrekillConn *c) {
        while (c->n_out > 0) {
                ssize_t n = send(c->fd, c->out, c->n_out, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0)
                        return -errno; /* EPIPE, ECONNRESET: the client left, its kill goes on */
                memmove(c->out, c->out + n, c->n_out - (size_t) n);
                c->n_out -= (size_t) n;
        }
        /* Hanging up: nothing more is read (what waits unread would wake the loop for ever). */
        ev_io_stop(c->p->a->loop, &c->io);
        ev_io_set(&c->io, c->fd, (c->closing ? 0 : EV_READ) | (c->n_out > 0 ? EV_WRITE : 0));
        ev_io_start(c->p->a->loop, &c->io);
        return 0;
}

/* Queues one reply (NUL included in len) and sends what it can. 0, or -errno: hang up. */
static int conn_reply(PrekillConn *c, const char *msg, size_t len) {
        if (c->n_out + len > PREKILL_OUT_MAX)
                return -ENOBUFS;
        if (c->n_out + len > c->out_cap) {
                char *o = realloc(c->out, c->n_out + len);
                if (!o)
                        return -ENOMEM;
                c->out = o;
                c->out_cap = c->n_out + len;
        }
        memcpy(c->out + c->n_out, msg, len);
        c->n_out += len;
        return conn_flush(c);
}

static int conn_handle(PrekillConn *c, usec_t read_us);

static void job_free(PrekillJob *j) {
        AgentPrekill *p = j->p;

        ev_timer_stop(p->a->loop, &j->second);
        ev_timer_stop(p->a->loop, &j->answer);
        ev_idle_stop(p->a->loop, &j->step);
        if (j->conn)
                j->conn->job = NULL;
        prekill_measure_free(j->m);
        for (size_t i = 0; i < p->n_jobs; i++)
                if (p->jobs[i] == j) {
                        p->jobs[i] = p->jobs[--p->n_jobs];
                        break;
                }
        free(j);
}

/* Measured: the kill windows take it. */
static void job_done(PrekillJob *j) {
        PrekillMeasure *m = TAKE_PTR(j->m);

        prekill_measure_rank(m);
        log_debug("prekill hook: %s measured, %zu of %llu processes, %llu us after the call", m->cgroup, m->n_procs,
                  (unsigned long long) m->processes_total,
                  (unsigned long long) (now_usec(CLOCK_MONOTONIC) - m->notified_mono_us));
        test_hold("prekill-done");
        kills_prekill(j->p->a, m);
        job_free(j);
}

/* Answers the caller (if it still waits), then reads what it sent next. */
static void job_answer(PrekillJob *j) {
        PrekillConn *c = TAKE_PTR(j->conn);
        usec_t now = now_usec(CLOCK_MONOTONIC);
        size_t len;
        const char *empty = varlink_reply_empty(&len);

        j->answered = true;
        ev_timer_stop(j->p->a->loop, &j->second);
        ev_timer_stop(j->p->a->loop, &j->answer);
        j->m->replied_mono_us = now;
        log_info("systemd-oomd is about to kill %s: answered in %llu us, %zu of %llu processes measured", j->m->cgroup,
                 (unsigned long long) (now - j->m->notified_mono_us), j->m->next_first,
                 (unsigned long long) j->m->processes_total);
        if (!c)
                return;
        c->job = NULL;
        if (conn_reply(c, empty, len) < 0 || conn_handle(c, now) < 0 || (c->closing && c->n_out == 0))
                conn_free(c);
}

/* When tenths of prekill_reply_ms have passed since the call. */
static usec_t job_at(const PrekillJob *j, unsigned tenths) {
        return j->m->notified_mono_us + (usec_t) j->p->a->config->prekill_reply_ms * USEC_PER_MSEC * tenths / 10;
}

/* One slice: the first reading until 5 tenths, the second from 6 (job_on_second()) to 9 and then
 * the answer; after the answer, whatever is left. */
static void job_on_step(struct ev_loop *loop, ev_idle *idle, int revents) {
        PrekillJob *j = ASSERT_PTR(idle->data);
        Agent *a = j->p->a;
        PrekillMeasure *m = j->m;
        usec_t now = now_usec(CLOCK_MONOTONIC), end = now + PREKILL_SLICE_US;

        if (j->answered) {
                if (prekill_measure_first(m, a->rt.sysroot, a->rt.taskstats, end) &&
                    prekill_measure_last(m, a->rt.taskstats, end))
                        job_done(j);
        } else if (now < job_at(j, PREKILL_SECOND_TENTHS)) {
                /* Read whole, or its time is up: the rest comes after the answer. */
                if (prekill_measure_first(m, a->rt.sysroot, a->rt.taskstats,
                                          MIN(end, job_at(j, PREKILL_FIRST_TENTHS))) ||
                    now >= job_at(j, PREKILL_FIRST_TENTHS))
                        ev_idle_stop(loop, idle);
        } else if (prekill_measure_last(m, a->rt.taskstats, MIN(end, job_at(j, PREKILL_ANSWER_TENTHS)))) {
                job_answer(j);
                if (m->next_first == m->n_procs)
                        job_done(j);
        }
}

static void job_on_second(struct ev_loop *loop, ev_timer *t, int revents) {
        PrekillJob *j = ASSERT_PTR(t->data);

        ev_idle_start(loop, &j->step);
}

/* The bound: answered now, whatever is measured; the rest goes on after. */
static void job_on_answer(struct ev_loop *loop, ev_timer *t, int revents) {
        PrekillJob *j = ASSERT_PTR(t->data);

        job_answer(j);
        ev_idle_start(loop, &j->step);
}

static void job_timer(PrekillJob *j, ev_timer *t, unsigned tenths) {
        usec_t at = job_at(j, tenths), now = now_usec(CLOCK_MONOTONIC);

        ev_timer_set(t, at > now ? (double) (at - now) / USEC_PER_SEC : 0., 0.);
        ev_timer_start(j->p->a->loop, t);
}

/* A Notify: the cgroup systemd-oomd is about to kill, its message read at read_us. Measured within
 * prekill_reply_ms, then answered (unless oneway). 0, or -errno: hang up. */
static int conn_notify(PrekillConn *c, const VarlinkCall *call, usec_t read_us) {
        AgentPrekill *p = c->p;
        Agent *a = p->a;
        PrekillJob *j = p->n_jobs < PREKILL_JOBS_MAX ? calloc(1, sizeof *j) : NULL;

        count(p, COUNTERS_PREKILL_NOTIFY);
        kills_prekill_listen(a, call->cgroup);
        if (!j || prekill_measure_new(call->cgroup, read_us, &j->m) < 0 ||
            prekill_measure_cgroup(j->m, a->rt.sysroot, a->rt.limits) < 0) {
                size_t len;
                const char *empty = varlink_reply_empty(&len);

                if (j)
                        prekill_measure_free(j->m);
                free(j);
                log_warning("systemd-oomd is about to kill %s: not measured (%s)", call->cgroup,
                            p->n_jobs == PREKILL_JOBS_MAX ? "too many at once" : "out of memory");
                return call->oneway ? 0 : conn_reply(c, empty, len);
        }
        j->p = p;
        ev_timer_init(&j->second, job_on_second, 0., 0.);
        ev_timer_init(&j->answer, job_on_answer, 0., 0.);
        ev_idle_init(&j->step, job_on_step);
        j->second.data = j->answer.data = j->step.data = j;
        p->jobs[p->n_jobs++] = j;
        if (!call->oneway) {
                j->conn = c;
                c->job = j;
        }
        /* libev times from the loop's cached now, which listing the cgroup has left behind. */
        ev_now_update(a->loop);
        if (j->m->n_procs == 0) {
                /* Gone or empty: nothing to read twice, and the kill need not wait. Answered from the
                 * loop, not from here: answering reads the client's next message. */
                job_timer(j, &j->answer, 0);
                return 0;
        }
        job_timer(j, &j->second, PREKILL_SECOND_TENTHS);
        job_timer(j, &j->answer, PREKILL_ANSWER_TENTHS);
        ev_idle_start(a->loop, &j->step);
        return 0;
}

/* Handles every whole message in c->in. 0, or -errno: hang up. */
static int conn_handle(PrekillConn *c, usec_t read_us) {
        char *nul;

        while (!c->job && (nul = memchr(c->in, '\0', c->n_in))) {
                size_t len = (size_t) (nul - c->in), n_reply = 0;
                _cleanup_free_ char *reply = NULL;
                VarlinkCall *call = malloc(sizeof *call);
                int r;

                if (!call)
                        return -ENOMEM;
                r = varlink_handle(c->in, len, call, &reply, &n_reply);
                memmove(c->in, nul + 1, c->n_in - len - 1);
                c->n_in -= len + 1;
                if (r == VARLINK_NOTIFY)
                        r = conn_notify(c, call, read_us);
                else if (r >= 0) {
                        count(c->p, r == VARLINK_ANSWERED ? COUNTERS_PREKILL_ANSWERED : COUNTERS_PREKILL_REFUSED);
                        if (r == VARLINK_REFUSED)
                                log_debug("prekill hook: refused a call: %s", reply ? reply : "(oneway)");
                        r = reply ? conn_reply(c, reply, n_reply) : 0;
                }
                free(call);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void conn_on_io(struct ev_loop *loop, ev_io *io, int revents) {
        PrekillConn *c = ASSERT_PTR(io->data);
        int r = 0;

        if (revents & EV_WRITE) {
                r = conn_flush(c);
                if (r < 0 || (c->closing && c->n_out == 0)) {
                        conn_free(c);
                        return;
                }
        }
        if (!(revents & EV_READ) || c->closing)
                return;
        ssize_t n = recv(c->fd, c->in + c->n_in, sizeof c->in - c->n_in, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) { /* the client hung up (or reset): nothing is owed to it */
                conn_free(c);
                return;
        }
        c->n_in += (size_t) n;
        c->active_us = now_usec(CLOCK_MONOTONIC);
        ev_timer_again(loop, &c->idle);
        r = conn_handle(c, now_usec(CLOCK_MONOTONIC));
        if (r >= 0 && !c->job && c->n_in == sizeof c->in) {
                /* A whole buffer without a NUL: no message of ours is that long. */
                size_t len;
                const char *e = varlink_reply_oversized(&len);

                count(c->p, COUNTERS_PREKILL_REFUSED);
                log_debug("prekill hook: a message longer than %d bytes, hanging up", VARLINK_MESSAGE_MAX);
                c->closing = true;
                r = conn_reply(c, e, len);
        }
        if (r < 0 || (c->closing && c->n_out == 0))
                conn_free(c);
}

static void conn_on_idle(struct ev_loop *loop, ev_timer *t, int revents) {
        PrekillConn *c = ASSERT_PTR(t->data);

        count(c->p, COUNTERS_PREKILL_IDLE);
        log_debug("prekill hook: a client sent nothing for %.0f s, hanging up", PREKILL_IDLE_S);
        conn_free(c);
}

/* Root and systemd-oomd's user only: the socket's mode keeps others from connecting (systemd-oomd
 * passes it by CAP_DAC_OVERRIDE), and this keeps them out should the mode be changed (a hook
 * learns which cgroup is about to be killed, and delays the kill). */
static bool peer_allowed(const AgentPrekill *p, int fd) {
        struct ucred cred;
        socklen_t len = sizeof cred;

        return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred &&
               (cred.uid == 0 || cred.uid == p->oomd_uid);
}

/* PREKILL_OOMD_USER's uid, or 0 when it has none (no systemd-oomd here, or another name). */
static uid_t oomd_uid(void) {
        struct passwd pw, *hit = NULL;
        char buf[1024];

        return getpwnam_r(PREKILL_OOMD_USER, &pw, buf, sizeof buf, &hit) == 0 && hit ? hit->pw_uid : 0;
}

/* Takes one connection. 0, or -EAGAIN when none is waiting. */
static int accept_one(AgentPrekill *p) {
        struct ev_loop *loop = p->a->loop;
        int fd = accept4(p->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
                if (errno == EAGAIN)
                        return -EAGAIN;
                if (errno != EINTR && errno != ECONNABORTED)
                        log_debug_errno(-errno, "prekill hook: accept");
                return 0;
        }
        if (!peer_allowed(p, fd)) {
                count(p, COUNTERS_PREKILL_DENIED);
                log_debug("prekill hook: a caller that is neither root nor %s, hanging up", PREKILL_OOMD_USER);
                safe_close(fd);
                return 0;
        }
        if (p->n_conns == PREKILL_CONNS_MAX) {
                /* Not one that waits for its answer: that is systemd-oomd. */
                PrekillConn *quiet = NULL;
                for (size_t i = 0; i < p->n_conns; i++)
                        if (!p->conns[i]->job && (!quiet || p->conns[i]->active_us < quiet->active_us))
                                quiet = p->conns[i];
                if (!quiet) {
                        count(p, COUNTERS_PREKILL_BUSY);
                        safe_close(fd);
                        return 0;
                }
                count(p, COUNTERS_PREKILL_BUSY);
                log_debug("prekill hook: %zu clients already, hanging up on the quietest", p->n_conns);
                conn_free(quiet);
        }
        PrekillConn *c = calloc(1, sizeof *c);
        if (!c) {
                log_error("out of memory: a call to the prekill hook is not taken");
                safe_close(fd);
                return 0;
        }
        *c = (PrekillConn) { .p = p, .fd = fd, .active_us = now_usec(CLOCK_MONOTONIC) };
        ev_io_init(&c->io, conn_on_io, fd, EV_READ);
        c->io.data = c;
        ev_io_start(loop, &c->io);
        ev_init(&c->idle, conn_on_idle);
        c->idle.repeat = PREKILL_IDLE_S;
        c->idle.data = c;
        ev_timer_again(loop, &c->idle);
        p->conns[p->n_conns++] = c;
        return 0;
}

static void on_accept(struct ev_loop *loop, ev_io *io, int revents) {
        AgentPrekill *p = ASSERT_PTR(io->data);

        /* The backlog drained, a bounded batch at a time: systemd-oomd's connect does not wait (a
         * full backlog makes it skip the hook), and a flood takes turns with the rest of the loop. */
        for (unsigned i = 0; i < PREKILL_ACCEPT_BATCH && accept_one(p) == 0; i++)
                ;
}

/* The socket at path, bound with mode 0600 and listening. 0 or -errno (not logged). */
static int socket_make(AgentPrekill *p, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;
        int fd;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        /* A socket left by an agent that did not stop: nobody listens there. Anything else is not
         * ours to remove. */
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                if (unlink(path) < 0)
                        return -errno;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* Not listening yet: nobody can connect before the mode is 0600. */
        if (bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || chmod(path, 0600) < 0 || lstat(path, &st) < 0 ||
            listen(fd, PREKILL_BACKLOG) < 0) {
                int r = -errno;
                (void) unlink(path);
                safe_close(fd);
                return r;
        }
        p->fd = fd;
        p->dev = st.st_dev;
        p->ino = st.st_ino;
        return 0;
}

void prekill_start(Agent *a) {
        const char *path = a->config->prekill_socket;
        _cleanup_free_ char *dir = NULL;
        AgentPrekill *p;
        struct stat st;
        int r;

        if (!path || !path[0])
                return;
        dir = strndup(path, (size_t) (strrchr(path, '/') - path));
        if (!dir) {
                log_error("out of memory: systemd-oomd's prekill hook is not served");
                return;
        }
        /* No directory: no systemd-oomd that calls hooks (systemd 260 and later make it). Nothing
         * is made, nothing costs. */
        if (stat(dir[0] ? dir : "/", &st) < 0 || !S_ISDIR(st.st_mode)) {
                /* The usual case on a node without such a systemd-oomd: `psidiag check` says it; a
                 * path the operator chose is news. */
                log_internal(strcmp(path, config_keys_find("prekill_socket")->def_string) == 0 ? LOG_LEVEL_DEBUG
                                                                                               : LOG_LEVEL_INFO,
                             0, "prekill hook not served: %s is not there (systemd-oomd's hooks need it)", dir);
                return;
        }
        p = calloc(1, sizeof *p);
        if (!p || !(p->path = strdup(path))) {
                free(p);
                log_error("out of memory: systemd-oomd's prekill hook is not served");
                return;
        }
        p->a = a;
        p->oomd_uid = oomd_uid();
        r = socket_make(p, path);
        if (r < 0) {
                log_error_errno(r, "cannot serve systemd-oomd's prekill hook at %s", path);
                free(p->path);
                free(p);
                return;
        }
        ev_io_init(&p->io, on_accept, p->fd, EV_READ);
        p->io.data = p;
        ev_io_start(a->loop, &p->io);
        a->prekill = p;
        log_info("serving systemd-oomd's prekill hook at %s (answers within %u ms)", path, a->config->prekill_reply_ms);
}

void prekill_stop(Agent *a) {
        AgentPrekill *p = a->prekill;
        struct stat st;

        if (!p)
                return;
        while (p->n_jobs > 0)
                job_free(p->jobs[p->n_jobs - 1]);
        while (p->n_conns > 0)
                conn_free(p->conns[p->n_conns - 1]);
        ev_io_stop(a->loop, &p->io);
        safe_close(p->fd);
        /* Another agent may have made its own since: only ours is removed. */
        if (lstat(p->path, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino)
                (void) unlink(p->path);
        free(p->path);
        free(p);
        a->prekill = NULL;
}
