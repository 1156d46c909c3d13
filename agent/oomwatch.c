/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/dirwatch.h"
#include "agent/health.h"
#include "agent/killwatch.h"
#include "agent/oom.h"
#include "agent/oomwatch.h"
#include "base/array.h"
#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/kmsg.h"
#include "probes/system.h"

#define OOMC_RECHECK_S 0.1
#define OOMC_RECHECKS_MAX 10
#define KMSG_RECORDS_PER_WAKEUP 256

/* The kill counter of one watched cgroup. Heap-allocated one by one: its ev_io must not move. */
typedef struct OomCounter {
        OomWatch *ow;
        Watch *watch;
        MemcgCounterKind kind;
        int fd, event_fd, wd;
        uint64_t count;
        ev_io io; /* the v1 eventfd */
} OomCounter;

struct OomWatch {
        Agent *a;
        /* /dev/kmsg */
        int kmsg_fd;
        ev_io kmsg_io;
        char *kmsg_buf;    /* KMSG_RECORD_MAX */
        OomKill kmsg_kill; /* the parser's state: an oom-kill: line waits for its Killed process line */
        LogRateLimit kmsg_lost_warned;
        LogRateLimit refused_warned; /* a counter's memory.events not watched: at the limit */
        /* Without it: the memory cgroups' kill counters. */
        bool counting;
        Dirwatch *dirwatch; /* memory.events changes */
        ev_timer recheck;   /* a v1 OOM is announced before its kill: look again shortly */
        unsigned rechecks;
        OomCounter **counters;
        size_t n_counters, cap_counters;
};

ssize_t oomwatch_counter_parent(const OomCounterView *c, size_t n, size_t i) {
        ssize_t best = -1;

        if (c[i].kind != MEMCG_COUNTER_EVENTS)
                return -1;
        for (size_t k = 0; k < n; k++) {
                if (k == i || c[k].kind != MEMCG_COUNTER_EVENTS || strcmp(c[k].path, c[i].path) == 0 ||
                    !cgpath_covers(c[k].path, c[i].path))
                        continue;
                if (best < 0 || strlen(c[k].path) > strlen(c[best].path))
                        best = (ssize_t) k;
        }
        return best;
}

/* ---- Counting kills without kmsg ------------------------------------------------------------ */

static void counter_close(OomWatch *ow, size_t i) {
        Agent *a = ow->a;
        OomCounter *c = ow->counters[i];

        if (c->event_fd >= 0) {
                ev_io_stop(a->loop, &c->io);
                c->event_fd = safe_close(c->event_fd);
                fd_budget_give(&a->fds, 1);
        }
        if (c->wd >= 0 && ow->dirwatch) {
                dirwatch_remove(ow->dirwatch, c->wd);
                a->counters.oom_file_watches--;
        }
        c->fd = safe_close(c->fd);
        fd_budget_give(&a->fds, 1);
        free(c);
        ow->counters[i] = ow->counters[--ow->n_counters];
}

static void counters_scan(OomWatch *ow, bool announced);

static void on_counter_event(struct ev_loop *loop, ev_io *io, int revents) {
        OomCounter *c = ASSERT_PTR(io->data);
        uint64_t v;

        (void) read(c->event_fd, &v, sizeof v);
        counters_scan(c->ow, true);
}

/* Room for one more inotify watch on a memory.events file: the agent's watches (these and
 * discovery's directories) stay within discovery's limit (max_dir_watches, at most a quarter of
 * fs.inotify.max_user_watches); beyond it the counter is refused, counted and said. */
static bool watch_room(OomWatch *ow, const Watch *w) {
        Agent *a = ow->a;
        uint64_t limit = a->counters.dir_watch_limit ? a->counters.dir_watch_limit : a->config->max_dir_watches;

        if (a->counters.dir_watches + a->counters.oom_file_watches < limit)
                return true;
        a->counters.dir_watches_refused++;
        if (log_ratelimit_pass(&ow->refused_warned, now_usec(CLOCK_MONOTONIC)))
                log_warning("oom kills of %s are not counted: its memory.events is not watched, the agent's inotify "
                            "watches are at their limit (%" PRIu64 ": max_dir_watches, at most a quarter of "
                            "fs.inotify.max_user_watches)",
                            w->name, limit);
        return false;
}

/* Opens the kill counter of a cgroup watch (once per cgroup), when kmsg is closed to us. */
static void counter_open(Watch *w, void *userdata) {
        OomWatch *ow = userdata;
        Agent *a = ow->a;
        OomCounter *c;
        char proc_path[64];
        int r;

        if (!ow->counting || !w->path)
                return;
        for (size_t i = 0; i < ow->n_counters; i++)
                if (strcmp(ow->counters[i]->watch->path, w->path) == 0)
                        return; /* another config watch of the same cgroup counts it */
        if (array_grow((void **) &ow->counters, &ow->cap_counters, ow->n_counters, 8, sizeof *ow->counters) < 0 ||
            !(c = calloc(1, sizeof *c))) {
                log_debug("out of memory: no oom_kill counter for %s", w->name);
                return;
        }
        *c = (OomCounter) { .ow = ow, .watch = w, .fd = -EBADF, .event_fd = -EBADF, .wd = -EBADF };
        r = fd_budget_take(&a->fds, 2);
        if (r >= 0) {
                r = memcg_open_oom_counter(a->rt.sysroot, w->path, &c->kind, &c->fd, &c->event_fd);
                if (r < 0) {
                        fd_budget_give(&a->fds, 2);
                        log_debug_errno(r, "no oom_kill counter for %s", w->name);
                }
        }
        if (r < 0) {
                free(c);
                return;
        }
        ow->counters[ow->n_counters++] = c;
        if (c->event_fd < 0)
                fd_budget_give(&a->fds, 1);
        if (memcg_read_oom_kill(c->fd, &c->count) < 0)
                c->count = 0;
        if (c->kind == MEMCG_COUNTER_EVENTS) {
                snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", c->fd);
                if (!ow->dirwatch) { /* said once, when it could not be made */
                        counter_close(ow, ow->n_counters - 1);
                        return;
                }
                if (!watch_room(ow, w)) {
                        counter_close(ow, ow->n_counters - 1);
                        return;
                }
                c->wd = dirwatch_add(ow->dirwatch, proc_path, IN_MODIFY);
                if (c->wd < 0) {
                        log_warning_errno(c->wd, "cannot follow the oom_kill counter of %s", w->name);
                        counter_close(ow, ow->n_counters - 1);
                        return;
                }
                a->counters.oom_file_watches++;
        } else {
                ev_io_init(&c->io, on_counter_event, c->event_fd, EV_READ);
                c->io.data = c;
                ev_io_start(a->loop, &c->io);
        }
        log_debug("counting oom kills of %s from %s (now %llu)", w->name, memcg_counter_kind_to_string(c->kind),
                  (unsigned long long) c->count);
}

static void counter_forget(Watch *w, void *userdata) {
        OomWatch *ow = userdata;

        for (size_t i = 0; i < ow->n_counters; i++)
                if (ow->counters[i]->watch == w) {
                        counter_close(ow, i);
                        return;
                }
}

/* Reads every counter; each kill is reported once, in the deepest counted cgroup that saw it.
 * announced: a v1 eventfd said an OOM began, and its kill may not be counted yet. */
static void counters_scan(OomWatch *ow, bool announced) {
        Agent *a = ow->a;
        size_t n = ow->n_counters;
        _cleanup_free_ uint64_t *growth = calloc(MAX(n, (size_t) 1), sizeof *growth);
        _cleanup_free_ uint64_t *own = calloc(MAX(n, (size_t) 1), sizeof *own);
        _cleanup_free_ OomCounterView *views = calloc(MAX(n, (size_t) 1), sizeof *views);
        bool any = false;

        if (!growth || !own || !views) {
                log_error("out of memory: oom kill counters not read");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                OomCounter *c = ow->counters[i];
                uint64_t v;

                views[i] = (OomCounterView) { .path = c->watch->path, .kind = c->kind };
                if (memcg_read_oom_kill(c->fd, &v) < 0)
                        continue;
                if (v > c->count) {
                        growth[i] = own[i] = v - c->count;
                        any = true;
                }
                c->count = v;
        }
        for (size_t i = 0; i < n; i++) {
                ssize_t p;
                if (growth[i] == 0 || (p = oomwatch_counter_parent(views, n, i)) < 0)
                        continue;
                own[p] -= MIN(own[p], growth[i]);
        }
        /* oom_report() neither adds nor removes watches: the counters stay where they are. */
        for (size_t i = 0; i < n; i++)
                if (own[i] > 0)
                        oom_report(a, NULL, ow->counters[i]->watch->path,
                                   memcg_counter_kind_to_string(ow->counters[i]->kind), own[i]);

        if (any)
                ow->rechecks = 0;
        else if (announced || ow->rechecks > 0) {
                if (ow->rechecks++ < OOMC_RECHECKS_MAX) {
                        ev_timer_set(&ow->recheck, OOMC_RECHECK_S, 0.);
                        ev_timer_start(a->loop, &ow->recheck);
                } else
                        ow->rechecks = 0;
        }
}

static void on_recheck(struct ev_loop *loop, ev_timer *t, int revents) {
        counters_scan(ASSERT_PTR(t->data), false);
}

/* A counter changed: which one does not matter, the scan reads them all once per burst. */
static void on_counter_file(Dirwatch *d, const struct inotify_event *e, void *userdata) {
        if (!e)
                counters_scan(ASSERT_PTR(userdata), false);
}

/* kmsg is closed to us: count kills from the watched cgroups' memory counters instead. */
static void counting_start(OomWatch *ow) {
        Agent *a = ow->a;

        ow->counting = true;
        int r = dirwatch_new(a->loop, on_counter_file, ow, &ow->dirwatch);
        if (r < 0) {
                ow->dirwatch = NULL; /* v1 counters still come through their eventfds */
                log_warning_errno(r, "cannot follow cgroup2 memory.events (inotify): kills there are not counted");
        }
        ev_timer_init(&ow->recheck, on_recheck, 0., 0.);
        ow->recheck.data = ow;
        if (core_hooks_add(a, &(WatchHooks) { .userdata = ow, .added = counter_open, .removed = counter_forget }) < 0)
                log_error("too many modules follow the watches: oom kills of new cgroups are not counted");
        for (size_t i = 0; i < a->n_watches; i++)
                counter_open(a->watches[i], ow);
        if (ow->n_counters > 0)
                log_info("counting oom kills from the memory cgroups of %zu watch%s instead (no victim details; "
                         "node-wide watches are not covered)",
                         ow->n_counters, ow->n_counters == 1 ? "" : "es");
}

/* ---- /dev/kmsg ------------------------------------------------------------------------------ */

static void on_kmsg_io(struct ev_loop *loop, ev_io *io, int revents) {
        OomWatch *ow = ASSERT_PTR(io->data);
        Agent *a = ow->a;

        /* Bounded per wakeup, so a flood of kernel messages cannot starve the triggers. */
        for (unsigned i = 0; i < KMSG_RECORDS_PER_WAKEUP; i++) {
                KmsgRecord rec;
                ssize_t n = kmsg_read_record(ow->kmsg_fd, ow->kmsg_buf, KMSG_RECORD_MAX);

                if (n == -EAGAIN)
                        return;
                if (n == -EPIPE) {
                        /* The ring overwrote records we had not read: an oom-kill: line may be
                         * among them, so the next Killed process line stands alone. */
                        usec_t now = now_usec(CLOCK_MONOTONIC);
                        a->counters.kmsg_lost++;
                        ow->kmsg_kill.has_header = false;
                        health_update(a);
                        /* Once a minute at most; psidiag_kmsg_lost_total counts them all. */
                        if (log_ratelimit_pass(&ow->kmsg_lost_warned, now))
                                log_warning("kernel messages were overwritten before psidiag read them; an oom kill "
                                            "among them is not reported");
                        continue;
                }
                if (n < 0) {
                        log_error_errno((int) n, "cannot read /dev/kmsg; oom kills are no longer reported");
                        ev_io_stop(a->loop, &ow->kmsg_io);
                        ow->kmsg_fd = safe_close(ow->kmsg_fd);
                        return;
                }
                if (kmsg_parse_record(ow->kmsg_buf, (size_t) n, &rec) < 0)
                        continue;
                kills_kmsg_message(a, rec.message, rec.message_len);
                if (oom_parse_message(rec.message, rec.message_len, &ow->kmsg_kill) != OOM_LINE_KILLED)
                        continue;
                /* Both clocks count from boot (suspend aside): how late the kill is read. */
                log_debug("oom kill of pid %d read %lld us after the kernel logged it", (int) ow->kmsg_kill.pid,
                          (long long) now_usec(CLOCK_MONOTONIC) - (long long) rec.timestamp_us);
                kills_kernel_victim(a, ow->kmsg_kill.pid);
                _cleanup_free_ char *cg = oom_victim_cgroup(a, &ow->kmsg_kill);
                oom_report(a, &ow->kmsg_kill, cg, "kmsg", 1);
                ow->kmsg_kill = (OomKill) {};
        }
}

void oomwatch_start(Agent *a) {
        OomWatch *ow = calloc(1, sizeof *ow);
        int fd;

        if (!ow) {
                log_error("out of memory: oom kills are not reported");
                return;
        }
        *ow = (OomWatch) { .a = a,
                           .kmsg_fd = -EBADF,
                           .kmsg_lost_warned.interval_us = 60 * USEC_PER_SEC,
                           .refused_warned.interval_us = 60 * USEC_PER_SEC };
        a->oomwatch = ow;
        fd = kmsg_open_end("/dev/kmsg");
        if (fd < 0) {
                /* A container given /dev/kmsg as a bind mount has CAP_SYSLOG and still gets EPERM,
                 * from its device cgroup: the reason is check's (probes/kmsg.c). */
                uint64_t caps = 0;
                int syslog =
                        system_read_cap_eff(a->rt.sysroot->proc_fd, &caps) < 0 ? -1 : !!(caps & CAP_BIT(CAP_SYSLOG));
                log_warning_errno(fd, "cannot read /dev/kmsg%s: oom kills are not read from the kernel log",
                                  kmsg_open_why(fd, syslog));
                counting_start(ow);
                return;
        }
        ow->kmsg_buf = malloc(KMSG_RECORD_MAX);
        if (!ow->kmsg_buf) {
                log_error("out of memory: oom kills are not reported");
                safe_close(fd);
                return;
        }
        ow->kmsg_fd = fd;
        ev_io_init(&ow->kmsg_io, on_kmsg_io, fd, EV_READ);
        ow->kmsg_io.data = ow;
        ev_io_start(a->loop, &ow->kmsg_io);
}

void oomwatch_stop(Agent *a) {
        OomWatch *ow = a->oomwatch;

        if (!ow)
                return;
        while (ow->n_counters > 0)
                counter_close(ow, ow->n_counters - 1);
        free(ow->counters);
        core_hooks_remove(a, ow);
        if (ow->counting) {
                ev_timer_stop(a->loop, &ow->recheck);
                ow->dirwatch = dirwatch_free(ow->dirwatch);
        }
        if (ow->kmsg_fd >= 0) {
                ev_io_stop(a->loop, &ow->kmsg_io);
                ow->kmsg_fd = safe_close(ow->kmsg_fd);
        }
        free(ow->kmsg_buf);
        free(ow);
        a->oomwatch = NULL;
}
