/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "base/cgpath.h"
#include "base/macro.h"
#include "base/text.h"
#include "base/parse.h"
#include "kills/killmarks.h"

const char *killer_kind_to_string(KillerKind k) {
        return killmarks_killer(k)->name;
}

const char *killmark_basis_to_string(KillMarkBasis b) {
        static const char *const names[_KILLMARK_BASIS_MAX] = {
                [KILLMARK_BASIS_LOG_LINE] = "log_line",
                [KILLMARK_BASIS_KMSG] = "kmsg",
                [KILLMARK_BASIS_XATTR] = "xattr",
                [KILLMARK_BASIS_MEMORY_EVENTS] = "memory.events",
                [KILLMARK_BASIS_RUNNING_PROCESS] = "running_process",
                [KILLMARK_BASIS_PREKILL] = "prekill",
        };

        return (unsigned) b < _KILLMARK_BASIS_MAX ? names[b] : "unknown";
}

/* Text scanning over [p, end): nothing here reads outside it or needs a NUL. */

static bool has_prefix(const char *p, const char *end, const char *lit) {
        size_t n = strlen(lit);

        return (size_t) (end - p) >= n && memcmp(p, lit, n) == 0;
}

/* Skips lit at *p; false (and *p unchanged) when it is not there. */
static bool skip(const char **p, const char *end, const char *lit) {
        if (!has_prefix(*p, end, lit))
                return false;
        *p += strlen(lit);
        return true;
}

static const char *find_first(const char *s, const char *end, const char *needle) {
        return s < end ? memmem(s, (size_t) (end - s), needle, strlen(needle)) : NULL;
}

static const char *find_last(const char *s, const char *end, const char *needle) {
        size_t n = strlen(needle);
        const char *found = NULL;

        for (const char *p = s; p && p + n <= end; p++) {
                p = memmem(p, (size_t) (end - p), needle, n);
                if (!p)
                        break;
                found = p;
        }
        return found;
}

/* A decimal with an optional '-'; *p moves past it. */
static bool skip_int(const char **p, const char *end, int64_t *ret) {
        const char *q = *p, *rest;
        bool neg = false;
        uint64_t v;

        if (q < end && *q == '-') {
                neg = true;
                q++;
        }
        if (parse_u64_prefix(q, end, &v, &rest) < 0 || v > INT64_MAX)
                return false;
        if (ret)
                *ret = neg ? -(int64_t) v : (int64_t) v;
        *p = rest;
        return true;
}

static bool skip_pid(const char **p, const char *end, pid_t *ret) {
        const char *rest;
        uint64_t v;

        if (parse_u64_prefix(*p, end, &v, &rest) < 0 || v == 0 || v > INT32_MAX)
                return false;
        *ret = (pid_t) v;
        *p = rest;
        return true;
}

/* A "%.Nf" number: digits, optionally '.' and digits. */
static bool skip_fixed(const char **p, const char *end) {
        const char *q = *p;

        if (!skip_int(&q, end, NULL))
                return false;
        if (q < end && *q == '.') {
                q++;
                if (q >= end || *q < '0' || *q > '9')
                        return false;
                while (q < end && *q >= '0' && *q <= '9')
                        q++;
        }
        *p = q;
        return true;
}

/* The end of a message without its trailing newline(s). */
static const char *trim_end(const char *buf, size_t len) {
        const char *end = buf + len;

        while (end > buf && (end[-1] == '\n' || end[-1] == '\r'))
                end--;
        return end;
}

static KillMark mark_new(KillerKind killer, KillMarkBasis basis) {
        return (KillMark) { .killer = killer, .basis = basis, .uid = -1 };
}

/* earlyoom: what follows the name's closing quote, ": badness %d, VmRSS %lld MiB" (1.7) or
 * ": oom_score %d, [oom_score_adj %d, ]VmRSS %lld MiB, cmdline \"%s\"" (1.8 and later). */
static bool earlyoom_tail_ok(const char *p, const char *end) {
        if (skip(&p, end, "\": badness ")) {
                if (!skip_int(&p, end, NULL) || !skip(&p, end, ", VmRSS ") || !skip_int(&p, end, NULL) ||
                    !skip(&p, end, " MiB"))
                        return false;
                return p == end;
        }
        if (!skip(&p, end, "\": oom_score ") || !skip_int(&p, end, NULL) || !skip(&p, end, ", "))
                return false;
        if (skip(&p, end, "oom_score_adj ") && (!skip_int(&p, end, NULL) || !skip(&p, end, ", ")))
                return false;
        if (!skip(&p, end, "VmRSS ") || !skip_int(&p, end, NULL) || !skip(&p, end, " MiB"))
                return false;
        /* The cmdline, in quotes, runs to the end of the line whatever it holds. */
        return p == end || skip(&p, end, ", cmdline \"");
}

int killmarks_parse_earlyoom_line(const char *buf, size_t len, KillMark *ret) {
        const char *end = trim_end(buf, len), *p = buf, *name;
        KillMark m = mark_new(KILLER_EARLYOOM, KILLMARK_BASIS_LOG_LINE);
        int64_t uid;

        assert(buf || len == 0);
        assert(ret);

        if (skip(&p, end, "escalating to SIGKILL after ")) {
                if (!skip_fixed(&p, end) || !skip(&p, end, " seconds") || p != end)
                        return -EINVAL;
                m.signal = SIGKILL;
                *ret = m;
                return 0;
        }
        if (!skip(&p, end, "sending "))
                return -ENOMSG;
        if (skip(&p, end, "SIGTERM to process "))
                m.signal = SIGTERM;
        else if (skip(&p, end, "SIGKILL to process "))
                m.signal = SIGKILL;
        else
                return -ENOMSG; /* "0 (no-op signal)": the self-test at startup; "?": never sent */
        if (!skip_pid(&p, end, &m.pid) || !skip(&p, end, " uid ") || !skip_int(&p, end, &uid) || !skip(&p, end, " \""))
                return -EINVAL;
        /* earlyoom 1.8 prints -9999 for a uid it could not read. */
        m.uid = uid >= 0 && uid <= UINT32_MAX ? uid : -1;
        /* The name (the comm) may hold quotes and "\": " itself: its end is the first closing quote
         * after which the rest of the line has earlyoom's shape. */
        name = p;
        for (const char *q = find_first(name, end, "\": "); q; q = find_first(q + 1, end, "\": "))
                if (earlyoom_tail_ok(q, end)) {
                        text_copy_range(m.name, sizeof m.name, name, q);
                        *ret = m;
                        return 0;
                }
        return -EINVAL;
}

/* nohang "PID: %s, Name: %s, badness: %s": the name ends at the last ", badness: " followed by a
 * number and the end of the line. */
static bool nohang_highest(const char *p, const char *end, KillMark *state) {
        const char *name, *b;
        pid_t pid;

        if (!skip_pid(&p, end, &pid) || !skip(&p, end, ", Name: "))
                return false;
        name = p;
        b = find_last(name, end, ", badness: ");
        if (!b)
                return false;
        const char *q = b + strlen(", badness: ");
        if (!skip_int(&q, end, NULL) || q != end)
                return false;
        if (state->pid != pid)
                *state = mark_new(KILLER_NOHANG, KILLMARK_BASIS_LOG_LINE);
        state->pid = pid;
        state->signal = 0;
        text_copy_range(state->name, sizeof state->name, name, b);
        return true;
}

/* nohang "PID:       %s, name: %s, state: %s, EUID: %s, SID: %s (%s), lifetime: %s": the name ends
 * at the first ", state: " followed by a state without a comma, ", EUID: " and a number. */
static bool nohang_status(const char *p, const char *end, KillMark *state) {
        const char *name;
        pid_t pid;

        if (!skip_pid(&p, end, &pid) || !skip(&p, end, ", name: "))
                return false;
        name = p;
        for (const char *s = find_first(name, end, ", state: "); s; s = find_first(s + 1, end, ", state: ")) {
                const char *st = s + strlen(", state: "), *e = find_first(st, end, ", EUID: "), *q;
                int64_t uid;

                if (!e || memchr(st, ',', (size_t) (e - st)))
                        continue;
                q = e + strlen(", EUID: ");
                if (!skip_int(&q, end, &uid) || !has_prefix(q, end, ", SID: "))
                        continue;
                if (state->pid != pid)
                        *state = mark_new(KILLER_NOHANG, KILLMARK_BASIS_LOG_LINE);
                state->pid = pid;
                state->signal = 0;
                state->uid = uid >= 0 && uid <= UINT32_MAX ? uid : -1;
                text_copy_range(state->name, sizeof state->name, name, s);
                return true;
        }
        return false;
}

static int nohang_line(const char *p, const char *end, KillMark *state) {
        pid_t pid;

        /* nohang indents the lines after a message's first with two or more spaces. */
        while (p < end && *p == ' ')
                p++;
        if (skip(&p, end, "PID:")) {
                while (p < end && *p == ' ')
                        p++;
                const char *q = p;
                if (skip_pid(&q, end, &pid) && has_prefix(q, end, ", Name: "))
                        return nohang_highest(p, end, state) ? NOHANG_SEEN_VICTIM : 0;
                return nohang_status(p, end, state) ? NOHANG_SEEN_VICTIM : 0;
        }
        if (skip(&p, end, "New victim is cached victim ")) {
                if (!skip_pid(&p, end, &pid) || !skip(&p, end, " (") || p >= end || end[-1] != ')')
                        return 0;
                if (state->pid != pid)
                        *state = mark_new(KILLER_NOHANG, KILLMARK_BASIS_LOG_LINE);
                state->pid = pid;
                state->signal = 0;
                text_copy_range(state->name, sizeof state->name, p, end - 1);
                return NOHANG_SEEN_VICTIM;
        }
        if (skip(&p, end, "cgroup_v2: ")) {
                if (state->pid == 0)
                        return 0;
                text_copy_range(state->cgroup, sizeof state->cgroup, p, end);
                return NOHANG_SEEN_CGROUP;
        }
        if (skip(&p, end, "Sending ")) {
                int sig;

                if (skip(&p, end, "SIGTERM"))
                        sig = SIGTERM;
                else if (skip(&p, end, "SIGKILL"))
                        sig = SIGKILL;
                else
                        return 0;
                if (!skip(&p, end, " to the victim") || p != end)
                        return 0;
                state->killer = KILLER_NOHANG;
                state->basis = KILLMARK_BASIS_LOG_LINE;
                state->signal = sig;
                return NOHANG_SEEN_SIGNAL;
        }
        return 0;
}

int killmarks_feed_nohang(const char *buf, size_t len, KillMark *state) {
        const char *p = buf, *end = buf + len;
        int seen = 0;

        assert(buf || len == 0);
        assert(state);

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *le = nl ? nl : end;

                seen |= nohang_line(p, le > p && le[-1] == '\r' ? le - 1 : le, state);
                p = nl ? nl + 1 : end;
        }
        return seen;
}

int killmarks_parse_systemd_oomd_line(const char *buf, size_t len, KillMark *ret) {
        const char *end = trim_end(buf, len), *p = buf, *x, *occ, *being;
        KillMark m = mark_new(KILLER_SYSTEMD_OOMD, KILLMARK_BASIS_LOG_LINE);
        const char *pressure, *swap;

        assert(buf || len == 0);
        assert(ret);

        if (skip(&p, end, "Killed ")) {
                pressure = " due to memory pressure for ";
                swap = " due to memory used (";
        } else if (skip(&p, end, "Marked ")) {
                pressure = " for killing due to memory pressure for ";
                swap = " for killing due to memory used (";
        } else
                return -ENOMSG;
        x = p;
        m.signal = SIGKILL;

        /* "... due to memory used (%lu) / total ...": only numbers follow, so the last one. */
        occ = find_last(x, end, swap);
        if (occ) {
                const char *q = occ + strlen(swap);
                if (!skip_int(&q, end, NULL) || !has_prefix(q, end, ") / total ("))
                        return -EINVAL;
                text_copy_range(m.cgroup, sizeof m.cgroup, x, occ);
                *ret = m;
                return 0;
        }
        /* "... due to memory pressure for Y being %lu.%02lu%% > ...": Y ends at the last " being "
         * (only numbers and a timespan follow); X at the marker after which Y covers X, both as
         * written: systemd-oomd picks candidates under Y's path (oomd_sort_cgroup_contexts() with Y
         * as prefix), and an empty Y names no cgroup it monitors. */
        being = find_last(x, end, " being ");
        if (!being)
                return -ENOMSG;
        const char *q = being + strlen(" being ");
        if (!skip_fixed(&q, end) || !has_prefix(q, end, "% > "))
                return -EINVAL;
        for (occ = find_first(x, being, pressure); occ; occ = find_first(occ + 1, being, pressure)) {
                const char *y = occ + strlen(pressure);
                if (being > y && cgpath_covers_range(y, (size_t) (being - y), x, (size_t) (occ - x))) {
                        text_copy_range(m.cgroup, sizeof m.cgroup, x, occ);
                        *ret = m;
                        return 0;
                }
        }
        return find_first(x, being, pressure) ? -EINVAL : -ENOMSG;
}

/* A token of a "%.2f" (digits and '.', or "nan", "inf" and a sign) and the space after it. */
static bool skip_float_token(const char **p, const char *end) {
        const char *q = *p;

        while (q < end && *q != '\0' && strchr("0123456789.-+naif", *q))
                q++;
        if (q == *p || q >= end || *q != ' ')
                return false;
        *p = q + 1;
        return true;
}

int killmarks_parse_oomd_kmsg(const char *msg, size_t len, KillMark *ret) {
        const char *end = trim_end(msg, len), *p = msg, *path, *rs, *u, *k;
        KillMark m = mark_new(KILLER_OOMD, KILLMARK_BASIS_KMSG);

        assert(msg || len == 0);
        assert(ret);

        if (!skip(&p, end, "oomd kill: "))
                return -ENOMSG;
        for (int i = 0; i < 3; i++)
                if (!skip_float_token(&p, end))
                        return -EINVAL;
        path = p;
        /* The ruleset and detector group names come from oomd's config; the cgroup path can be any
         * name a delegated user chose, so the last " ruleset:[" is oomd's. */
        rs = find_last(path, end, " ruleset:[");
        if (!rs)
                return -EINVAL;
        u = rs;
        while (u > path && u[-1] >= '0' && u[-1] <= '9')
                u--;
        if (u == rs || u == path || u[-1] != ' ')
                return -EINVAL;
        k = find_last(rs, end, " killer:");
        if (!k)
                return -EINVAL;
        m.dry_run = has_prefix(k + strlen(" killer:"), end, "(dry)");
        m.signal = SIGKILL;
        text_copy_range(m.cgroup, sizeof m.cgroup, path, u - 1);
        *ret = m;
        return 0;
}

int killmarks_parse_memory_events_group_kill(const char *buf, size_t len, uint64_t *ret) {
        const char *p, *le;

        assert(buf || len == 0);
        assert(ret);

        if (line_find(buf, len, "oom_group_kill ", &p, &le) < 0)
                return -ENOENT;
        return parse_u64_exact(p, (size_t) (le - p), ret) < 0 ? -EINVAL : 0;
}

const char *kill_xattr_name(KillXattr x) {
        static const char *const names[_KILL_XATTR_MAX] = {
                [KILL_XATTR_USER_OOMD_OOMS] = "user.oomd_ooms",
                [KILL_XATTR_USER_OOMD_KILL] = "user.oomd_kill",
                [KILL_XATTR_USER_OOMD_KILL_UUID] = "user.oomd_kill_uuid",
                [KILL_XATTR_TRUSTED_OOMD_OOMS] = "trusted.oomd_ooms",
                [KILL_XATTR_TRUSTED_OOMD_KILL] = "trusted.oomd_kill",
                [KILL_XATTR_TRUSTED_OOMD_KILL_UUID] = "trusted.oomd_kill_uuid",
        };

        return (unsigned) x < _KILL_XATTR_MAX ? names[x] : NULL;
}

static bool xattr_is_counter(KillXattr x) {
        return x != KILL_XATTR_USER_OOMD_KILL_UUID && x != KILL_XATTR_TRUSTED_OOMD_KILL_UUID;
}

static bool xattr_is_user(KillXattr x) {
        return x == KILL_XATTR_USER_OOMD_OOMS || x == KILL_XATTR_USER_OOMD_KILL || x == KILL_XATTR_USER_OOMD_KILL_UUID;
}

int killmarks_read_cgroup_xattrs(int cgroup_fd, uid_t trusted_owner, CgroupKillXattrs *ret) {
        CgroupKillXattrs x = {};
        struct stat st;
        bool user_ok;
        int n = 0;

        assert(ret);

        if (fstat(cgroup_fd, &st) < 0)
                return -errno;
        /* The kernel lets whoever may write an inode set its user.* xattrs (fs/xattr.c
         * xattr_permission()): on a cgroup delegated to a user, that user. */
        user_ok = st.st_uid == trusted_owner && !(st.st_mode & (S_IWGRP | S_IWOTH));
        for (KillXattr i = 0; i < _KILL_XATTR_MAX; i++) {
                char buf[KILL_XATTR_VALUE_MAX];
                ssize_t l = fgetxattr(cgroup_fd, kill_xattr_name(i), buf, sizeof buf - 1);

                if (l < 0) {
                        /* ENODATA: not set (and what trusted.* reads as without CAP_SYS_ADMIN);
                         * ENOTSUP: no xattrs of that namespace here (user.* on cgroupfs before 5.7). */
                        if (errno == ENODATA || errno == ENOTSUP)
                                continue;
                        if (errno != ERANGE)
                                return -errno;
                        /* Longer than any counter or uuid the killers write: present, value unknown. */
                        if (xattr_is_user(i) && !user_ok) {
                                x.user_ignored = true;
                                continue;
                        }
                        x.present[i] = true;
                        n++;
                        continue;
                }
                buf[l] = '\0';
                if (xattr_is_user(i) && !user_ok) {
                        x.user_ignored = true;
                        continue;
                }
                x.present[i] = true;
                n++;
                if (memchr(buf, '\0', (size_t) l))
                        continue; /* not text */
                memcpy(x.value[i], buf, (size_t) l + 1);
                if (xattr_is_counter(i) && parse_u64_exact(buf, (size_t) l, &x.count[i]) == 0)
                        x.has_count[i] = true;
        }
        *ret = x;
        return n;
}

KillerKind killmarks_xattrs_killer(const CgroupKillXattrs *x) {
        assert(x);

        /* Meta oomd 0.5.0 sets trusted.* only; later versions add the same names under user.*, which
         * systemd-oomd also uses, but always with user.oomd_kill_uuid, which systemd-oomd never sets. */
        if (x->present[KILL_XATTR_TRUSTED_OOMD_OOMS] || x->present[KILL_XATTR_TRUSTED_OOMD_KILL] ||
            x->present[KILL_XATTR_TRUSTED_OOMD_KILL_UUID] || x->present[KILL_XATTR_USER_OOMD_KILL_UUID])
                return KILLER_OOMD;
        if (x->present[KILL_XATTR_USER_OOMD_OOMS] || x->present[KILL_XATTR_USER_OOMD_KILL])
                return KILLER_SYSTEMD_OOMD;
        return KILLER_UNKNOWN;
}

KillerKind killmarks_known_executable(const char *name) {
        if (!name)
                return KILLER_UNKNOWN;
        for (KillerKind k = 0; k < _KILLER_MAX; k++)
                for (size_t i = 0; i < ELEMENTSOF(killmarks_killer(k)->executables); i++) {
                        const char *e = killmarks_killer(k)->executables[i];
                        if (!e)
                                break;
                        if (strcmp(name, e) == 0)
                                return k;
                }
        return KILLER_UNKNOWN;
}

/* ---- the table -------------------------------------------------------------------------------- */

static int earlyoom_log(const char *msg, size_t len, KillMark *state, KillMark *ret) {
        KillMark m;

        /* The escalation line (pid 0) completes nothing: its sending line was the mark. */
        if (killmarks_parse_earlyoom_line(msg, len, &m) == 0 && m.pid > 0) {
                *ret = m;
                return 1;
        }
        return 0;
}

static int nohang_log(const char *msg, size_t len, KillMark *state, KillMark *ret) {
        if (killmarks_feed_nohang(msg, len, state) & NOHANG_SEEN_SIGNAL && state->pid > 0) {
                *ret = *state;
                ret->killer = KILLER_NOHANG;
                *state = (KillMark) { .uid = -1 };
                return 1;
        }
        return 0;
}

static int systemd_oomd_log(const char *msg, size_t len, KillMark *state, KillMark *ret) {
        KillMark m;

        if (killmarks_parse_systemd_oomd_line(msg, len, &m) == 0) {
                *ret = m;
                return 1;
        }
        return 0;
}

/* Debian 12's executables: /usr/bin/earlyoom, /usr/sbin/nohang (Python: the comm is "nohang", the
 * exe python3), /lib/systemd/systemd-oomd, /usr/bin/oomd; its units: earlyoom.service,
 * nohang.service and nohang-desktop.service, systemd-oomd.service, oomd.service. Meta oomd writes its mark to /dev/kmsg
 * (killmarks_parse_oomd_kmsg()), the kernel's group kill to memory.events: neither logs a line. */
static const KillerInfo killers[_KILLER_MAX] = {
        [KILLER_UNKNOWN] = { KILLER_UNKNOWN, "unknown", {}, NULL, NULL, false, {} },
        [KILLER_EARLYOOM] = { KILLER_EARLYOOM,
                              "earlyoom",
                              { "earlyoom" },
                              "earlyoom",
                              earlyoom_log,
                              false,
                              { "earlyoom.service" } },
        [KILLER_NOHANG] = { KILLER_NOHANG,
                            "nohang",
                            { "nohang" },
                            "nohang",
                            nohang_log,
                            true,
                            { "nohang.service", "nohang-desktop.service" } },
        [KILLER_SYSTEMD_OOMD] = { KILLER_SYSTEMD_OOMD,
                                  "systemd-oomd",
                                  { "systemd-oomd" },
                                  "systemd-oomd",
                                  systemd_oomd_log,
                                  false,
                                  { "systemd-oomd.service" } },
        [KILLER_OOMD] = { KILLER_OOMD, "oomd", { "oomd" }, NULL, NULL, false, { "oomd.service" } },
        [KILLER_KERNEL_GROUP] = { KILLER_KERNEL_GROUP, "kernel-oom-group", {}, NULL, NULL, false, {} },
};

const KillerInfo *killmarks_killer(KillerKind k) {
        return &killers[(unsigned) k < _KILLER_MAX ? k : KILLER_UNKNOWN];
}
