/* SPDX-License-Identifier: MIT */
/* The decisions of `kill` incidents (docs/killers.md), without a loop and without I/O: whether an exit
 * record is a kill (its signal), whether its process was a watched cgroup's member and not the
 * kernel's OOM victim, how the victims of one cgroup are grouped, which log lines are a killer's
 * marks (kills/killmarks.h parses them), and which mark names the killer. The agent (agent/killwatch.c)
 * reads the kernel and the logs and hands the facts in; nothing here reads a file or logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/timeutil.h"
#include "kills/killmarks.h"
#include "probes/taskstats.h"

/* The signal an exit record says ended the task (exit_code & 0x7f, kernel/exit.c do_group_exit()),
 * when it is SIGKILL or SIGTERM; 0 for any other end (an exit status, another signal, no code). */
int kill_exit_signal(const TaskStats *t);

#define KILL_CMDLINE_MAX 512
#define KILL_CGROUP_MAX 512

/* What was known of a watched cgroup's process while it lived (read at the last refresh): its
 * command line and cgroup are gone by the time its exit record arrives. */
typedef struct KillMember {
        pid_t pid;
        uint64_t rss_kib; /* VmRSS at the refresh */
        bool has_rss;
        char cmdline[KILL_CMDLINE_MAX]; /* arguments joined by spaces (proc_read_cmdline()) */
        size_t cmdline_len;
        bool has_cmdline;
        char cgroup[KILL_CGROUP_MAX]; /* "a/b" relative to the cgroup2 mount */
        bool has_cgroup;
        bool heard; /* an exit record of it came (of any end) */
} KillMember;

/* A watched cgroup's members, sorted by pid. */
typedef struct KillMembers {
        KillMember *items;
        size_t n, cap;
} KillMembers;

/* Sorts items[0..n) by pid (after the owner filled them). */
void kill_members_sort(KillMembers *m);
/* The member pid, or NULL. */
const KillMember *kill_members_find(const KillMembers *m, pid_t pid);
void kill_members_done(KillMembers *m);

/* Whose exit record this is, judged while a refresh replaces before with after (either NULL): the
 * member tgid of either listing; else, for a process born since the last listing (in neither),
 * its parent ppid's, as sampling/exits.h places a short-lived process: *placed is filled as the
 * parent's member (its cgroup) with the child's pid and nothing the child's own /proc would have
 * said, and returned. NULL when neither knows it. */
const KillMember *kill_members_judge(const KillMembers *before, const KillMembers *after, pid_t tgid, pid_t ppid,
                                     KillMember *placed);
typedef struct KillGroup KillGroup; /* below */

/* Notes that an exit record of pid came (kill_members_unheard() leaves it out). */
void kill_members_mark_heard(KillMembers *m, pid_t pid);
/* After exit records were lost: whether member m, absent from the listing now, ended unheard (no
 * record of it came, and the group in flight, when any, does not have it). */
bool kill_members_unheard(const KillMember *m, const KillMembers *now, const KillGroup *g);
/* Adds from's members that into lacks (a kill in flight keeps its members and gains the newborn);
 * into stays sorted. 0 or -ENOMEM (into unchanged). */
int kill_members_merge(KillMembers *into, const KillMembers *from);

/* The kernel OOM killer's recent victims (from /dev/kmsg), so that none of them also becomes a
 * kill incident. Ring of KERNEL_VICTIMS_MAX, each remembered for KERNEL_VICTIM_KEEP_US. */
#define KERNEL_VICTIMS_MAX 64
#define KERNEL_VICTIM_KEEP_US (30 * USEC_PER_SEC)
typedef struct KernelVictims {
        pid_t pid[KERNEL_VICTIMS_MAX];
        usec_t at_us[KERNEL_VICTIMS_MAX];
        size_t next;
} KernelVictims;

void kernel_victims_add(KernelVictims *k, pid_t pid, usec_t now_us);
bool kernel_victims_has(const KernelVictims *k, pid_t pid, usec_t now_us);

/* One victim of a kill incident (signal 0: it ended while exit records were lost). */
typedef struct KillVictim {
        pid_t pid;
        int signal;
        char comm[TASKSTATS_COMM_MAX + 1]; /* from the exit record */
        int64_t uid;                       /* -1 unknown */
        uint64_t rss_kib;                  /* the member's VmRSS at the last refresh, else its peak */
        bool has_rss;
        const char *rss_source; /* "status" (VmRSS at the last refresh) or "peak" (hiwater_rss) */
        uint64_t delay_ns[_TASK_DELAY_MAX];
        uint32_t present;
        KillMember member; /* has_cmdline/has_cgroup false when the refresh did not see it */
        bool has_member;
} KillVictim;

/* The victims of one watched cgroup killed within KILL_GROUP_DELAY_US of the first: one incident.
 * Every victim is counted; the KILL_VICTIMS_LISTED largest (by rss) are listed. */
#define KILL_GROUP_DELAY_US (500 * USEC_PER_MSEC)
#define KILL_VICTIMS_LISTED 8
#define KILL_GROUP_PIDS_MAX 4096
struct KillGroup {
        KillVictim listed[KILL_VICTIMS_LISTED]; /* largest first */
        size_t n_listed;
        uint64_t total;        /* processes killed */
        uint64_t unheard;      /* of them, ended while exit records were lost: how, unknown (signal 0) */
        bool sigkill, sigterm; /* signals seen */
        usec_t first_mono_us;
        pid_t pids[KILL_GROUP_PIDS_MAX]; /* the processes counted, for threads of one (unsorted) */
        size_t n_pids;
};

/* Adds v (one exit record's process: several threads of one process count once). Returns 1 when
 * counted, 0 when the process was already. */
int kill_group_add(KillGroup *g, const KillVictim *v);

/* The state each killer's log parser keeps across lines (a nohang block). */
typedef struct KillLogState {
        KillMark state[_KILLER_MAX]; /* by KillerKind (kills/killmarks.h's KillerInfo) */
} KillLogState;

void kill_log_state_init(KillLogState *s);

/* One line of a killer's log: a syslog line ("... earlyoom[123]: sending SIGTERM ..."), a
 * journal-export style "IDENT[PID]: MESSAGE", or the killer's own output line with no header
 * (its stdout or stderr captured to a file), read by the parser of the killer whose log_ident
 * the header names (the last word before the line's first ": "), or without one by each killer's
 * in the table's order (those whose mark spans lines last). A syslog header is the client's to
 * write (`logger -t earlyoom` by anyone): such a file is trusted only as far as whoever may write
 * to it (docs/killers.md). 1 with *ret filled when the line completes a mark
 * (an earlyoom kill line, the signal line of a nohang block, a systemd-oomd Killed line); 0 when
 * it is no mark or only part of one (kept in *s). */
int kill_log_parse_line(const char *line, size_t len, KillLogState *s, KillMark *ret);

/* Who sent a journal entry, in the fields journald sets itself (a client cannot): _COMM, _EXE,
 * _SYSTEMD_UNIT (NULL when absent) and _UID (-1 when absent). */
typedef struct KillJournalSender {
        const char *comm, *exe, *unit;
        int64_t uid;
} KillJournalSender;

/* Whether the entry from comes from killer k: its _SYSTEMD_UNIT is one of k's units
 * (KillerInfo.units), or it is root's (_UID 0) and its _EXE's basename or its _COMM is k's
 * executable. Never by SYSLOG_IDENTIFIER or the message. Pure. */
bool kill_journal_from_killer(const KillJournalSender *from, KillerKind k);

/* One journal entry of a killer: its sender, its SYSLOG_IDENTIFIER (earlyoom, nohang,
 * systemd-oomd; any other is no mark) and MESSAGE, without their "FIELD=" prefixes. 1 with *ret
 * filled when the entry completes a mark, as kill_log_parse_line() for the same message, and
 * kill_journal_from_killer() says the identifier's killer sent it; 0 otherwise (a forged entry
 * feeds no state). */
int kill_journal_parse_entry(const KillJournalSender *from, const char *ident, size_t ident_len, const char *msg,
                             size_t len, KillLogState *s, KillMark *ret);

/* The facts about one group's killer, as the agent gathered them. */
#define KILL_MARKS_MAX 16
typedef struct KillEvidence {
        const KillMark *marks; /* log lines and kmsg records of the kill window (oldest first) */
        size_t n_marks;
        const char *victim_cgroup; /* "a/b" of the victims (the deepest seen), NULL unknown */
        KillerKind xattr_killer;   /* whose oomd_* xattr grew on the victims' cgroup (or an ancestor) */
        char xattr_name[64];       /* which one ("user.oomd_kill") */
        /* The listed victims' comms: a killer in another PID namespace (a container, or the tests')
         * names its victim by a pid of its own namespace, so a line naming a victim's comm counts when
         * none names its pid. */
        const char *const *comms;
        size_t n_comms;
        const KillerKind *running; /* killers whose process runs on the node */
        size_t n_running;
} KillEvidence;

typedef struct KillerChoice {
        KillerKind killer; /* KILLER_UNKNOWN: null in the incident */
        KillMarkBasis basis;
        char mark[256]; /* what named it, in a few words (the log line's victim, the xattr name) */
} KillerChoice;

/* Which mark names the killer of victims (pids[0..n)): a log line or kmsg record naming one of the
 * victims' pids; else one naming a victim's comm (e->comms); else one naming the victims' cgroup (oomds: the killed
 * cgroup is the victims' or an ancestor; nohang: its cgroup_v2 line); else an oomd_* xattr that grew; else exactly one
 * known killer running (basis running_process: it could have, nothing says it did). Marks of dry
 * runs never count. ret->killer KILLER_UNKNOWN when nothing names one. */
void kill_choose_killer(const KillEvidence *e, const pid_t *pids, size_t n, KillerChoice *ret);

/* How long a kill group waits for a late mark when none names its killer yet (none at all, or only
 * a known killer running): Meta oomd 0.5.0 writes its kmsg line after it has waited for the killed
 * cgroup to empty, seen in the VM (tests/vm) a second after the kill. From the first victim. */
#define KILL_MARK_WAIT_US (2500 * USEC_PER_MSEC)

/* The time left for the group whose first victim died at first_mono_us to wait for a mark, given
 * the killer chosen now (c); 0 when it is to be written now: a mark names the killer, or the wait
 * is over. */
usec_t kill_mark_wait_us(const KillerChoice *c, usec_t first_mono_us, usec_t now);
