/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/killers.h"
#include "base/cgpath.h"
#include "base/fileio.h"
#include "base/log.h"
#include "base/macro.h"
#include "kills/killtrust.h"
#include "probes/tasks.h"

/* A kill log file is only as trusted as whoever may write it: a regular file of root's that no one
 * else may write, its group's write bit allowed for group root alone (a file made under umask 002)
 * (/var/log/syslog's own lines are anyone's still: docs/killers.md). */
static bool log_file_ok(int fd) {
        struct stat st;

        return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & S_IWOTH) &&
               (!(st.st_mode & S_IWGRP) || st.st_gid == 0);
}

void killers_logs_open(KillLogs *k, const Config *c) {
        /* None by default: a syslog file's header is the client's to write (logger -t earlyoom). */
        size_t n = c->has_kill_log_files ? c->n_kill_log_files : 0;

        for (size_t i = 0; i < n && k->n_logs < CONFIG_KILL_LOG_FILES_MAX; i++) {
                const char *p = c->kill_log_files[i];
                int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        log_debug_errno(-errno, "cannot read kill log file %s", p);
                        continue;
                }
                if (!log_file_ok(fd)) {
                        log_debug("kill log file %s is not a regular file of root's that only root may write: "
                                  "not read",
                                  p);
                        safe_close(fd);
                        continue;
                }
                /* Only what is written from now on: the kill window's lines. */
                (void) lseek(fd, 0, SEEK_END);
                KillLog *l = &k->logs[k->n_logs];
                *l = (KillLog) { .path = strdup(p), .fd = fd };
                kill_log_state_init(&l->state);
                k->n_logs++;
        }
        int r = kill_journal_open(&k->journal);
        if (r < 0)
                log_debug_errno(r, "cannot read the journal for killers' lines");
}

void killers_logs_close(KillLogs *k) {
        for (size_t i = 0; i < k->n_logs; i++) {
                safe_close(k->logs[i].fd);
                free(k->logs[i].path);
        }
        k->n_logs = 0;
        k->journal = kill_journal_close(k->journal);
}

void killers_logs_drain(KillLogs *k, void (*mark)(const KillMark *m, void *userdata), void *userdata) {
        kill_journal_drain(k->journal, mark, userdata);
        for (size_t i = 0; i < k->n_logs; i++) {
                KillLog *l = &k->logs[i];
                for (unsigned round = 0; round < 64; round++) {
                        ssize_t n = read(l->fd, l->buf + l->len, sizeof l->buf - l->len);
                        size_t start = 0;
                        if (n <= 0)
                                break;
                        l->len += (size_t) n;
                        for (size_t j = 0; j < l->len; j++) {
                                KillMark m;
                                if (l->buf[j] != '\n')
                                        continue;
                                if (kill_log_parse_line(l->buf + start, j - start, &l->state, &m) > 0) {
                                        log_debug("%s: a kill by %s of pid %d (%s)", l->path,
                                                  killer_kind_to_string(m.killer), (int) m.pid, m.name);
                                        mark(&m, userdata);
                                }
                                start = j + 1;
                        }
                        if (start == 0 && l->len == sizeof l->buf)
                                l->len = 0; /* a line longer than any mark: dropped */
                        else {
                                memmove(l->buf, l->buf + start, l->len - start);
                                l->len -= start;
                        }
                }
        }
}

size_t killers_running(const Sysroot *s, KillerKind *ret, size_t max) {
        TidList l = {};
        size_t n = 0;

        if (proc_list_processes(s->proc_fd, &l) < 0) {
                tid_list_done(&l);
                return 0;
        }
        for (size_t i = 0; i < l.n; i++) {
                /* By its executable or its unit, never its comm (cp /bin/sleep ~/earlyoom). */
                KillerKind kind = killtrust_process(s, l.tids[i], 0);

                if (kind == KILLER_UNKNOWN || kind == KILLER_KERNEL_GROUP)
                        continue;
                bool have = false;
                for (size_t j = 0; j < n; j++)
                        have = have || ret[j] == kind;
                if (!have && n < max)
                        ret[n++] = kind;
        }
        tid_list_done(&l);
        return n;
}

void killers_xattrs_note(KillXattrBases *b, const Sysroot *s, const char *path) {
        int fd;

        /* A node-wide watch awaiting a kill systemd-oomd announced refreshes its members with no
         * path of its own: nothing to note (and no strcmp() of NULL). */
        if (!path)
                return;
        for (size_t i = 0; i < b->n; i++)
                if (strcmp(b->items[i].path, path) == 0)
                        return;
        if (b->n >= KILLERS_XATTR_CGROUPS_MAX || sysroot_open_cgroup(s, path, &fd) < 0)
                return;
        snprintf(b->items[b->n].path, sizeof b->items[b->n].path, "%s", path);
        if (killmarks_read_cgroup_xattrs(fd, 0, &b->items[b->n].x) < 0)
                b->items[b->n].x = (CgroupKillXattrs) {};
        b->n++;
        safe_close(fd);
}

KillerKind killers_xattrs_grew(const KillXattrBases *b, const Sysroot *s, const char *cgroup, const char *watch_path,
                               char *name, size_t size) {
        char p[KILL_CGROUP_MAX];

        if (!cgroup)
                return KILLER_UNKNOWN;
        snprintf(p, sizeof p, "%s", cgroup);
        for (;;) {
                int fd;
                CgroupKillXattrs now = {};
                const CgroupKillXattrs *base = NULL;

                for (size_t i = 0; i < b->n; i++)
                        if (strcmp(b->items[i].path, p) == 0)
                                base = &b->items[i].x;
                if (sysroot_open_cgroup(s, p, &fd) >= 0) {
                        (void) killmarks_read_cgroup_xattrs(fd, 0, &now);
                        safe_close(fd);
                }
                for (KillXattr x = 0; x < _KILL_XATTR_MAX; x++) {
                        bool grew = now.present[x] &&
                                    (!base || !base->present[x] ||
                                     (now.has_count[x] && base->has_count[x] && now.count[x] > base->count[x]) ||
                                     strcmp(now.value[x], base->value[x]) != 0);
                        if (grew) {
                                snprintf(name, size, "%s", kill_xattr_name(x));
                                return killmarks_xattrs_killer(&now);
                        }
                }
                if (!watch_path || strcmp(p, watch_path) == 0 || !cgpath_parent(p))
                        return KILLER_UNKNOWN;
        }
}
