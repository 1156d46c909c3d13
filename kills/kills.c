/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cgpath.h"
#include "base/macro.h"
#include "kills/killtrust.h"
#include "kills/kills.h"

int kill_exit_signal(const TaskStats *t) {
        int sig;

        if (!t->has_exit_code)
                return 0;
        /* A signal death stores the signal in the low 7 bits (0x80: core dumped); an exit(N) stores
         * N << 8, so its low 7 bits are 0 (kernel/exit.c: do_exit(), do_group_exit()). */
        sig = (int) (t->exit_code & 0x7f);
        return sig == SIGKILL || sig == SIGTERM ? sig : 0;
}

static int member_cmp(const void *a, const void *b) {
        pid_t x = ((const KillMember *) a)->pid, y = ((const KillMember *) b)->pid;
        return (x > y) - (x < y);
}

void kill_members_sort(KillMembers *m) {
        if (m->n > 1)
                qsort(m->items, m->n, sizeof *m->items, member_cmp);
}

const KillMember *kill_members_find(const KillMembers *m, pid_t pid) {
        KillMember key = { .pid = pid };
        if (m->n == 0)
                return NULL;
        return bsearch(&key, m->items, m->n, sizeof *m->items, member_cmp);
}

void kill_members_done(KillMembers *m) {
        free(m->items);
        *m = (KillMembers) {};
}

static const KillMember *either_find(const KillMembers *a, const KillMembers *b, pid_t pid) {
        const KillMember *m = a ? kill_members_find(a, pid) : NULL;
        return m ? m : b ? kill_members_find(b, pid) : NULL;
}

const KillMember *kill_members_judge(const KillMembers *before, const KillMembers *after, pid_t tgid, pid_t ppid,
                                     KillMember *placed) {
        const KillMember *m = either_find(after, before, tgid);

        if (m || ppid <= 0 || ppid == tgid)
                return m;
        m = either_find(after, before, ppid);
        if (!m)
                return NULL;
        *placed = (KillMember) { .pid = tgid, .has_cgroup = m->has_cgroup };
        memcpy(placed->cgroup, m->cgroup, sizeof placed->cgroup);
        return placed;
}

void kill_members_mark_heard(KillMembers *m, pid_t pid) {
        KillMember *e = (KillMember *) kill_members_find(m, pid); /* m's own item */

        if (e)
                e->heard = true;
}

bool kill_members_unheard(const KillMember *m, const KillMembers *now, const KillGroup *g) {
        if (m->heard || kill_members_find(now, m->pid))
                return false;
        for (size_t i = 0; g && i < g->n_pids; i++)
                if (g->pids[i] == m->pid)
                        return false;
        return true;
}

int kill_members_merge(KillMembers *into, const KillMembers *from) {
        size_t add = 0;

        for (size_t i = 0; i < from->n; i++)
                add += !kill_members_find(into, from->items[i].pid);
        if (add == 0)
                return 0;
        if (into->n + add > into->cap) {
                KillMember *p = realloc(into->items, (into->n + add) * sizeof *p);
                if (!p)
                        return -ENOMEM;
                into->items = p;
                into->cap = into->n + add;
        }
        size_t n = into->n;
        for (size_t i = 0; i < from->n; i++) {
                KillMembers old = { .items = into->items, .n = n };
                if (!kill_members_find(&old, from->items[i].pid))
                        into->items[into->n++] = from->items[i];
        }
        kill_members_sort(into);
        return 0;
}

void kernel_victims_add(KernelVictims *k, pid_t pid, usec_t now_us) {
        k->pid[k->next] = pid;
        k->at_us[k->next] = now_us;
        k->next = (k->next + 1) % KERNEL_VICTIMS_MAX;
}

bool kernel_victims_has(const KernelVictims *k, pid_t pid, usec_t now_us) {
        for (size_t i = 0; i < KERNEL_VICTIMS_MAX; i++)
                if (k->pid[i] == pid && pid > 0 && now_us >= k->at_us[i] &&
                    now_us - k->at_us[i] <= KERNEL_VICTIM_KEEP_US)
                        return true;
        return false;
}

static uint64_t victim_size(const KillVictim *v) {
        return v->has_rss ? v->rss_kib : 0;
}

int kill_group_add(KillGroup *g, const KillVictim *v) {
        size_t at;

        for (size_t i = 0; i < g->n_pids; i++)
                if (g->pids[i] == v->pid)
                        return 0;
        if (g->n_pids < KILL_GROUP_PIDS_MAX)
                g->pids[g->n_pids++] = v->pid;
        g->total++;
        g->unheard += v->signal == 0;
        g->sigkill = g->sigkill || v->signal == SIGKILL;
        g->sigterm = g->sigterm || v->signal == SIGTERM;
        /* Largest first; ties keep the order they died in. */
        for (at = 0; at < g->n_listed && victim_size(&g->listed[at]) >= victim_size(v); at++)
                ;
        if (at >= KILL_VICTIMS_LISTED)
                return 1;
        if (g->n_listed < KILL_VICTIMS_LISTED)
                g->n_listed++;
        memmove(&g->listed[at + 1], &g->listed[at], (g->n_listed - 1 - at) * sizeof *g->listed);
        g->listed[at] = *v;
        return 1;
}

void kill_log_state_init(KillLogState *s) {
        for (KillerKind k = 0; k < _KILLER_MAX; k++)
                s->state[k] = (KillMark) { .uid = -1 };
}

/* The message of a syslog-style line whose header names ident, or NULL. The header ends at the
 * line's first ": " (its timestamp, "Dec  2 16:38:11" or RFC 3339's, has none) and its last word is
 * "ident" or "ident[pid]": an ident later in the line is another program's message quoting it (a
 * user name in sshd's "Invalid user earlyoom[1]: sending ..."), never a header. */
static const char *after_ident(const char *line, size_t len, const char *ident, size_t *ret_len) {
        const char *end = line + len, *colon = memmem(line, len, ": ", 2), *word, *w;
        size_t n = strlen(ident);

        if (!colon)
                return NULL;
        for (word = colon; word > line && word[-1] != ' ';)
                word--;
        if ((size_t) (colon - word) < n || memcmp(word, ident, n) != 0)
                return NULL;
        w = word + n;
        if (w < colon) {
                /* "[pid]" and nothing else before the colon */
                if (*w != '[' || colon[-1] != ']' || colon - w < 3)
                        return NULL;
                for (const char *d = w + 1; d < colon - 1; d++)
                        if (*d < '0' || *d > '9')
                                return NULL;
        }
        *ret_len = (size_t) (end - colon - 2);
        return colon + 2;
}

bool kill_journal_from_killer(const KillJournalSender *from, KillerKind k) {
        const char *exe;

        /* journald sets the fields with a leading '_' itself, from the sender's credentials and
         * cgroup, and drops them from what a client sends (journald-native.c, valid_user_field()).
         * Only root puts a process in a system unit's cgroup; root's own processes are trusted,
         * with the name they give themselves. */
        if (from->unit && killtrust_unit_killer(from->unit, strlen(from->unit)) == k)
                return true;
        if (from->uid != 0)
                return false;
        exe = from->exe ? strrchr(from->exe, '/') : NULL;
        return (exe && killmarks_known_executable(exe + 1) == k) || killmarks_known_executable(from->comm) == k;
}

int kill_journal_parse_entry(const KillJournalSender *from, const char *ident, size_t ident_len, const char *msg,
                             size_t len, KillLogState *s, KillMark *ret) {
        while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
                len--;
        for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                const KillerInfo *i = killmarks_killer(k);
                if (i->log_ident && ident_len == strlen(i->log_ident) && memcmp(ident, i->log_ident, ident_len) == 0)
                        /* SYSLOG_IDENTIFIER is the client's to choose (logger -t earlyoom): it picks
                         * the parser, the sender's own fields decide. */
                        return kill_journal_from_killer(from, k) ? i->log_parser(msg, len, &s->state[k], ret) : 0;
        }
        return 0;
}

int kill_log_parse_line(const char *line, size_t len, KillLogState *s, KillMark *ret) {
        const char *msg;
        size_t n;

        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
        for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                const KillerInfo *i = killmarks_killer(k);
                if (i->log_ident && (msg = after_ident(line, len, i->log_ident, &n)))
                        return i->log_parser(msg, n, &s->state[k], ret);
        }
        /* No header: the killer's own output. Which killer is told by the line's shape: the
         * one-line marks first, so that a line which is one never feeds a block. */
        for (int stateful = 0; stateful < 2; stateful++)
                for (KillerKind k = 0; k < _KILLER_MAX; k++) {
                        const KillerInfo *i = killmarks_killer(k);
                        if (i->log_parser && i->log_stateful == stateful && i->log_parser(line, len, &s->state[k], ret))
                                return 1;
                }
        return 0;
}

static bool names_pid(const KillMark *m, const pid_t *pids, size_t n) {
        for (size_t i = 0; m->pid > 0 && i < n; i++)
                if (pids[i] == m->pid)
                        return true;
        return false;
}

static void choose(KillerChoice *ret, KillerKind k, KillMarkBasis b, const char *mark) {
        ret->killer = k;
        ret->basis = b;
        snprintf(ret->mark, sizeof ret->mark, "%s", mark);
}

static void describe(const KillMark *m, char *buf, size_t size) {
        if (m->pid > 0)
                snprintf(buf, size, "%s to pid %d (%.63s)", m->signal == SIGKILL ? "SIGKILL" : "SIGTERM", (int) m->pid,
                         m->name);
        else
                snprintf(buf, size, "killed cgroup %.200s", m->cgroup);
}

usec_t kill_mark_wait_us(const KillerChoice *c, usec_t first_mono_us, usec_t now) {
        usec_t until = first_mono_us + KILL_MARK_WAIT_US;

        if (c->killer != KILLER_UNKNOWN && c->basis != KILLMARK_BASIS_RUNNING_PROCESS)
                return 0;
        return now < until ? until - now : 0;
}

void kill_choose_killer(const KillEvidence *e, const pid_t *pids, size_t n, KillerChoice *ret) {
        char buf[sizeof ret->mark];

        *ret = (KillerChoice) { .killer = KILLER_UNKNOWN };
        /* Newest first: a killer that acted twice named the latest victims last. */
        for (size_t i = e->n_marks; i-- > 0;) {
                const KillMark *m = &e->marks[i];
                if (!m->dry_run && names_pid(m, pids, n)) {
                        describe(m, buf, sizeof buf);
                        choose(ret, m->killer, m->basis, buf);
                        return;
                }
        }
        for (size_t i = e->n_marks; i-- > 0;) {
                const KillMark *m = &e->marks[i];
                for (size_t j = 0; !m->dry_run && m->pid > 0 && m->name[0] && j < e->n_comms; j++)
                        if (e->comms[j] && strcmp(e->comms[j], m->name) == 0) {
                                describe(m, buf, sizeof buf);
                                choose(ret, m->killer, m->basis, buf);
                                return;
                        }
        }
        for (size_t i = e->n_marks; e->victim_cgroup && i-- > 0;) {
                const KillMark *m = &e->marks[i];
                if (!m->dry_run && m->pid <= 0 && m->cgroup[0] &&
                    cgpath_covers_untrimmed(m->cgroup, e->victim_cgroup)) {
                        describe(m, buf, sizeof buf);
                        choose(ret, m->killer, m->basis, buf);
                        return;
                }
        }
        if (e->xattr_killer != KILLER_UNKNOWN) {
                snprintf(buf, sizeof buf, "%.63s grew", e->xattr_name);
                choose(ret, e->xattr_killer, KILLMARK_BASIS_XATTR, buf);
                return;
        }
        if (e->n_running == 1) {
                snprintf(buf, sizeof buf, "%s running", killer_kind_to_string(e->running[0]));
                choose(ret, e->running[0], KILLMARK_BASIS_RUNNING_PROCESS, buf);
        }
}
