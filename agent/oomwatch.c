/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/daemon.h"
#include "base/log.h"
#include "base/macro.h"
#include "probes/procfs.h"
#include "probes/system.h"
#include "base/fileio.h"

/* ---- Counting kills without kmsg ------------------------------------------------------------ */

#define OOMC_RECHECK_S 0.1
#define OOMC_RECHECKS_MAX 10

void watch_counter_close(Agent *a, Watch *w) {
        if (!w->has_oomc)
                return;
        if (w->oomc_event_fd >= 0) {
                ev_io_stop(a->loop, &w->oomc_io);
                w->oomc_event_fd = safe_close(w->oomc_event_fd);
                fd_budget_give(&a->fds, 1);
        }
        if (w->oomc_wd >= 0 && a->oomc_watch)
                dirwatch_remove(a->oomc_watch, w->oomc_wd);
        w->oomc_fd = safe_close(w->oomc_fd);
        fd_budget_give(&a->fds, 1);
        w->has_oomc = false;
}

static void oom_counters_scan(Agent *a, bool announced);

static void on_oomc_event(struct ev_loop *loop, ev_io *io, int revents) {
        Watch *w = ASSERT_PTR(io->data);
        uint64_t v;

        (void) read(w->oomc_event_fd, &v, sizeof v);
        oom_counters_scan(w->agent, true);
}

/* Opens the kill counter of a cgroup watch (once per cgroup), when kmsg is closed to us. */
void watch_counter_open(Agent *a, Watch *w) {
        char proc_path[64];
        int r;

        w->oomc_fd = w->oomc_event_fd = w->oomc_wd = -EBADF;
        if (!a->oom_counting || !w->path)
                return;
        for (size_t i = 0; i < a->n_watches; i++)
                if (a->watches[i] != w && a->watches[i]->has_oomc && strcmp(a->watches[i]->path, w->path) == 0)
                        return; /* another config watch of the same cgroup counts it */
        r = fd_budget_take(&a->fds, 2);
        if (r < 0)
                return;
        r = memcg_open_oom_counter(a->rt.sysroot, w->path, &w->oomc_kind, &w->oomc_fd, &w->oomc_event_fd);
        if (r < 0) {
                fd_budget_give(&a->fds, 2);
                log_debug_errno(r, "no oom_kill counter for %s", w->name);
                return;
        }
        w->has_oomc = true;
        if (w->oomc_event_fd < 0)
                fd_budget_give(&a->fds, 1);
        if (memcg_read_oom_kill(w->oomc_fd, &w->oomc_count) < 0)
                w->oomc_count = 0;
        if (w->oomc_kind == MEMCG_COUNTER_EVENTS) {
                snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", w->oomc_fd);
                if (!a->oomc_watch) { /* said once, when it could not be made */
                        watch_counter_close(a, w);
                        return;
                }
                w->oomc_wd = dirwatch_add(a->oomc_watch, proc_path, IN_MODIFY);
                if (w->oomc_wd < 0) {
                        log_warning_errno(w->oomc_wd, "cannot follow the oom_kill counter of %s", w->name);
                        watch_counter_close(a, w);
                        return;
                }
        } else {
                ev_io_init(&w->oomc_io, on_oomc_event, w->oomc_event_fd, EV_READ);
                w->oomc_io.data = w;
                ev_io_start(a->loop, &w->oomc_io);
        }
        log_debug("counting oom kills of %s from %s (now %llu)", w->name, memcg_counter_kind_to_string(w->oomc_kind),
                  (unsigned long long) w->oomc_count);
}

/* The counted watch nearest above w whose counter includes w's kills (cgroup2 counts a kill in
 * every ancestor; v1 memcgs count their own only). NULL when none. */
static const Watch *counter_parent(const Agent *a, const Watch *w) {
        const Watch *best = NULL;

        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *p = a->watches[i];
                if (p == w || !p->has_oomc || p->oomc_kind != MEMCG_COUNTER_EVENTS ||
                    w->oomc_kind != MEMCG_COUNTER_EVENTS || strcmp(p->path, w->path) == 0 ||
                    !history_covers(p->path, w->path))
                        continue;
                if (!best || strlen(p->path) > strlen(best->path))
                        best = p;
        }
        return best;
}

/* Reads every counter; each kill is reported once, in the deepest counted cgroup that saw it.
 * announced: a v1 eventfd said an OOM began, and its kill may not be counted yet. */
static void oom_counters_scan(Agent *a, bool announced) {
        _cleanup_free_ uint64_t *growth = calloc(a->n_watches ? a->n_watches : 1, sizeof *growth);
        _cleanup_free_ uint64_t *own = calloc(a->n_watches ? a->n_watches : 1, sizeof *own);
        bool any = false;

        if (!growth || !own) {
                log_error("out of memory: oom kill counters not read");
                return;
        }
        for (size_t i = 0; i < a->n_watches; i++) {
                Watch *w = a->watches[i];
                uint64_t v;
                if (!w->has_oomc || memcg_read_oom_kill(w->oomc_fd, &v) < 0)
                        continue;
                if (v > w->oomc_count) {
                        growth[i] = own[i] = v - w->oomc_count;
                        any = true;
                }
                w->oomc_count = v;
        }
        for (size_t i = 0; i < a->n_watches; i++) {
                const Watch *p;
                if (growth[i] == 0 || !(p = counter_parent(a, a->watches[i])))
                        continue;
                for (size_t k = 0; k < a->n_watches; k++)
                        if (a->watches[k] == p)
                                own[k] -= MIN(own[k], growth[i]);
        }
        for (size_t i = 0; i < a->n_watches; i++)
                if (own[i] > 0)
                        agent_oom(a, NULL, a->watches[i]->path, memcg_counter_kind_to_string(a->watches[i]->oomc_kind),
                                  own[i]);

        if (any)
                a->oomc_rechecks = 0;
        else if (announced || a->oomc_rechecks > 0) {
                if (a->oomc_rechecks++ < OOMC_RECHECKS_MAX) {
                        ev_timer_set(&a->oomc_recheck, OOMC_RECHECK_S, 0.);
                        ev_timer_start(a->loop, &a->oomc_recheck);
                } else
                        a->oomc_rechecks = 0;
        }
}

static void on_oomc_recheck(struct ev_loop *loop, ev_timer *t, int revents) {
        oom_counters_scan(ASSERT_PTR(t->data), false);
}

/* A counter changed: which one does not matter, the scan reads them all once per burst. */
static void on_oomc_event_file(Dirwatch *d, const struct inotify_event *e, void *userdata) {
        if (!e)
                oom_counters_scan(ASSERT_PTR(userdata), false);
}

/* kmsg is closed to us: count kills from the watched cgroups' memory counters instead. */
static void oom_counting_start(Agent *a) {
        unsigned n = 0;

        a->oom_counting = true;
        int r = dirwatch_new(a->loop, on_oomc_event_file, a, &a->oomc_watch);
        if (r < 0) {
                a->oomc_watch = NULL; /* v1 counters still come through their eventfds */
                log_warning_errno(r, "cannot follow cgroup2 memory.events (inotify): kills there are not counted");
        }
        ev_timer_init(&a->oomc_recheck, on_oomc_recheck, 0., 0.);
        a->oomc_recheck.data = a;
        for (size_t i = 0; i < a->n_watches; i++) {
                watch_counter_open(a, a->watches[i]);
                n += a->watches[i]->has_oomc;
        }
        if (n > 0)
                log_info("counting oom kills from the memory cgroups of %u watch%s instead (no victim details; "
                         "node-wide watches are not covered)",
                         n, n == 1 ? "" : "es");
}

static void on_kmsg_io(struct ev_loop *loop, ev_io *io, int revents) {
        Agent *a = ASSERT_PTR(io->data);

        /* Bounded per wakeup, so a flood of kernel messages cannot starve the triggers. */
        for (unsigned i = 0; i < 256; i++) {
                KmsgRecord rec;
                ssize_t n = kmsg_read_record(a->kmsg_fd, a->kmsg_buf, KMSG_RECORD_MAX);

                if (n == -EAGAIN)
                        return;
                if (n == -EPIPE) {
                        /* The ring overwrote records we had not read: an oom-kill: line may be
                         * among them, so the next Killed process line stands alone. */
                        usec_t now = now_usec(CLOCK_MONOTONIC);
                        a->kmsg_lost++;
                        a->kmsg_kill.has_header = false;
                        agent_metrics_update(a);
                        /* Once a minute at most; psidiag_kmsg_lost_total counts them all. */
                        if (log_ratelimit_pass(&a->kmsg_lost_warned, now))
                                log_warning("kernel messages were overwritten before psidiag read them; an oom kill "
                                            "among them is not reported");
                        continue;
                }
                if (n < 0) {
                        log_error_errno((int) n, "cannot read /dev/kmsg; oom kills are no longer reported");
                        ev_io_stop(a->loop, &a->kmsg_io);
                        a->kmsg_fd = safe_close(a->kmsg_fd);
                        return;
                }
                if (kmsg_parse_record(a->kmsg_buf, (size_t) n, &rec) < 0)
                        continue;
                kills_kmsg_message(a, rec.message, rec.message_len);
                if (oom_parse_message(rec.message, rec.message_len, &a->kmsg_kill) != OOM_LINE_KILLED)
                        continue;
                /* Both clocks count from boot (suspend aside): how late the kill is read. */
                log_debug("oom kill of pid %d read %lld us after the kernel logged it", (int) a->kmsg_kill.pid,
                          (long long) now_usec(CLOCK_MONOTONIC) - (long long) rec.timestamp_us);
                kills_kernel_victim(a, a->kmsg_kill.pid);
                _cleanup_free_ char *cg = oom_victim_cgroup(a, &a->kmsg_kill);
                agent_oom(a, &a->kmsg_kill, cg, "kmsg", 1);
                a->kmsg_kill = (OomKill) {};
        }
}

void oom_watch_start(Agent *a) {
        int fd = kmsg_open_end("/dev/kmsg");

        if (fd < 0) {
                log_warning_errno(fd, "cannot read /dev/kmsg%s: oom kills are not read from the kernel log",
                                  fd == -EPERM ? " (kernel.dmesg_restrict is set and CAP_SYSLOG is missing)" : "");
                oom_counting_start(a);
                return;
        }
        a->kmsg_buf = malloc(KMSG_RECORD_MAX);
        if (!a->kmsg_buf) {
                log_error("out of memory: oom kills are not reported");
                safe_close(fd);
                return;
        }
        a->kmsg_fd = fd;
        ev_io_init(&a->kmsg_io, on_kmsg_io, fd, EV_READ);
        a->kmsg_io.data = a;
        ev_io_start(a->loop, &a->kmsg_io);
}

void oom_watch_stop(Agent *a) {
        oom_flush(a);
        for (size_t i = 0; i < a->n_watches; i++)
                watch_counter_close(a, a->watches[i]);
        if (a->oom_counting) {
                ev_timer_stop(a->loop, &a->oomc_recheck);
                a->oomc_watch = dirwatch_free(a->oomc_watch);
        }
        if (a->kmsg_fd >= 0) {
                ev_io_stop(a->loop, &a->kmsg_io);
                a->kmsg_fd = safe_close(a->kmsg_fd);
        }
        free(a->kmsg_buf);
        a->kmsg_buf = NULL;
}
