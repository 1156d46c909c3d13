/* SPDX-License-Identifier: MIT */
/* The marks userspace OOM killers leave (docs/killers.md says where each format was read): earlyoom's
 * and nohang's log lines, systemd-oomd's journal line, Meta oomd's kmsg line, the oomd_* xattrs both
 * oomds set on a cgroup they kill, the kernel's oom_group_kill counter, and the executables of the
 * killers. The parsers are pure (bytes in, never log, never read outside [buf, buf + len));
 * killmarks_read_cgroup_xattrs() is the one call that does I/O. Nothing here reads the journal,
 * syslog or /dev/kmsg, nor decides which mark names an incident's killer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum KillerKind {
        KILLER_UNKNOWN,
        KILLER_EARLYOOM,
        KILLER_NOHANG,
        KILLER_SYSTEMD_OOMD,
        KILLER_OOMD,         /* Meta's (facebookincubator) oomd */
        KILLER_KERNEL_GROUP, /* the kernel OOM killer taking a whole memory.oom.group cgroup */
        _KILLER_MAX,
} KillerKind;

/* "earlyoom", "nohang", "systemd-oomd", "oomd", "kernel-oom-group"; "unknown" for anything else. */
const char *killer_kind_to_string(KillerKind k);

typedef enum KillMarkBasis {
        KILLMARK_BASIS_LOG_LINE,        /* a journal or syslog line of the killer */
        KILLMARK_BASIS_KMSG,            /* a /dev/kmsg record the killer wrote */
        KILLMARK_BASIS_XATTR,           /* an xattr the killer set on the cgroup */
        KILLMARK_BASIS_MEMORY_EVENTS,   /* memory.events oom_group_kill */
        KILLMARK_BASIS_RUNNING_PROCESS, /* only the killer's process running on the node */
        KILLMARK_BASIS_PREKILL,         /* systemd-oomd called the agent's prekill hook (agent/prekillhook.h) */
        _KILLMARK_BASIS_MAX,
} KillMarkBasis;

/* "log_line", "kmsg", "xattr", "memory.events", "running_process", "prekill"; "unknown" out of
 * range. */
const char *killmark_basis_to_string(KillMarkBasis b);

#define KILLMARK_NAME_MAX 64
#define KILLMARK_CGROUP_MAX 512

/* What one mark says. Strings are NUL-terminated, cut to fit, and hold the killer's bytes as it
 * wrote them (not sanitized: a name may hold quotes, parentheses or control characters). */
typedef struct KillMark {
        KillerKind killer;
        KillMarkBasis basis;
        int signal;                       /* SIGTERM or SIGKILL; 0 when the mark does not say */
        pid_t pid;                        /* the victim; 0 when the mark names no process */
        int64_t uid;                      /* the victim's uid; -1 when the mark does not say */
        char name[KILLMARK_NAME_MAX];     /* the victim's comm; "" when not said */
        char cgroup[KILLMARK_CGROUP_MAX]; /* the cgroup killed (oomds) or the victim's (nohang); "" */
        bool dry_run;                     /* oomd's "killer:(dry)": nothing was killed */
} KillMark;

/* One earlyoom message (a journal MESSAGE, or the text after "earlyoom[PID]: " in syslog; a
 * trailing newline is ignored). Reads
 *   1.7:  sending %s to process %d uid %d "%s": badness %d, VmRSS %lld MiB
 *   1.8+: sending %s to process %d uid %d "%s": oom_score %d, [oom_score_adj %d, ]VmRSS %lld MiB,
 *         cmdline "%s"
 * (pid, uid, name, signal) and "escalating to SIGKILL after %.Nf seconds" (signal SIGKILL, pid 0: it
 * follows the sending line of the same process). 0 and *ret filled (basis log line), -ENOMSG when the
 * message is neither (the startup self-test "sending 0 (no-op signal)" included), -EINVAL when it
 * starts like one but is cut or malformed. */
int killmarks_parse_earlyoom_line(const char *buf, size_t len, KillMark *ret);

/* nohang's action is spread over several lines, one journal entry each (it prints multi-line
 * messages to stdout), so this feeds each line of buf (one message, or a whole multi-line block
 * of its separate log file) into *state, a KillMark zeroed with uid -1 before the first call:
 *   "PID: %s, Name: %s, badness: %s"     (Process with highest badness ...)
 *   "PID:       %s, name: %s, state: %s, EUID: %s, SID: ..."   (Victim status ...)
 *   "New victim is cached victim %s (%s)"
 *   "cgroup_v2: %s"                      (the victim's cgroup, after a victim line)
 *   "Sending %s to the victim"           (Implementing a corrective action)
 * A victim line resets *state and fills pid and name (and uid); the sending line sets the signal.
 * Returns the NOHANG_SEEN_* bits of what this call recognized, 0 for none; *state is complete once
 * it has a pid and a signal. */
#define NOHANG_SEEN_VICTIM 1
#define NOHANG_SEEN_CGROUP 2
#define NOHANG_SEEN_SIGNAL 4
int killmarks_feed_nohang(const char *buf, size_t len, KillMark *state);

/* One systemd-oomd journal message (SYSLOG_IDENTIFIER=systemd-oomd, no MESSAGE_ID):
 *   252:      Killed %s due to memory pressure for %s being ... / Killed %s due to memory used (...
 *   upstream: Marked %s for killing due to memory pressure for ... / ... due to memory used (...
 * 0 with the killed cgroup (as systemd writes it, "/system.slice/x.service") and SIGKILL; -ENOMSG. */
int killmarks_parse_systemd_oomd_line(const char *buf, size_t len, KillMark *ret);

/* The message of one /dev/kmsg record (KmsgRecord.message) Meta oomd wrote:
 *   oomd kill: %.2f %.2f %.2f CGROUP USAGE ruleset:[R] detectorgroup:[D] killer:[(dry)]NAME v2
 * 0 with the cgroup (relative to oomd's cgroup root, no leading '/'), SIGKILL and dry_run; -ENOMSG
 * for any other message, -EINVAL for one cut or malformed after the prefix. */
int killmarks_parse_oomd_kmsg(const char *msg, size_t len, KillMark *ret);

/* The "oom_group_kill N" line of a cgroup2 memory.events: the times the kernel OOM killer took the
 * whole memory.oom.group cgroup (counted once per group kill, hierarchically). 0, -ENOENT when the
 * line is missing (older kernels), -EINVAL when malformed. */
int killmarks_parse_memory_events_group_kill(const char *buf, size_t len, uint64_t *ret);

typedef enum KillXattr {
        KILL_XATTR_USER_OOMD_OOMS,         /* systemd-oomd; oomd after 0.5.0 */
        KILL_XATTR_USER_OOMD_KILL,         /* systemd-oomd; oomd after 0.5.0 */
        KILL_XATTR_USER_OOMD_KILL_UUID,    /* oomd after 0.5.0 */
        KILL_XATTR_TRUSTED_OOMD_OOMS,      /* oomd */
        KILL_XATTR_TRUSTED_OOMD_KILL,      /* oomd */
        KILL_XATTR_TRUSTED_OOMD_KILL_UUID, /* oomd */
        _KILL_XATTR_MAX,
} KillXattr;

/* "user.oomd_ooms", ...; NULL out of range. */
const char *kill_xattr_name(KillXattr x);

#define KILL_XATTR_VALUE_MAX 64

typedef struct CgroupKillXattrs {
        bool present[_KILL_XATTR_MAX];
        char value[_KILL_XATTR_MAX][KILL_XATTR_VALUE_MAX]; /* "" when longer than fits */
        bool has_count[_KILL_XATTR_MAX];                   /* *_ooms, *_kill: the value is a decimal counter */
        uint64_t count[_KILL_XATTR_MAX];
        bool user_ignored; /* a user.oomd_* was there, on a directory not root's alone: not read */
} CgroupKillXattrs;

/* Reads the known xattrs of cgroup_fd (a cgroup directory opened O_RDONLY|O_DIRECTORY) with
 * fgetxattr(). Absent ones (ENODATA; ENOTSUP on a filesystem or kernel without them; trusted.*
 * read without CAP_SYS_ADMIN, which the kernel reports as ENODATA) are left unset. user.* is
 * writable by whoever may write the directory, the user a subtree is delegated to included: those
 * are read only when the directory (fstat of cgroup_fd) is owned by trusted_owner (root: 0; a unit
 * test passes its own uid) and writable by no one else, and otherwise left unset, with
 * user_ignored set when one was there. trusted.* needs CAP_SYS_ADMIN to set: always read. Returns
 * how many are read as present, or -errno (EBADF...). Never logs. */
int killmarks_read_cgroup_xattrs(int cgroup_fd, uid_t trusted_owner, CgroupKillXattrs *ret);

/* Who set the xattrs: KILLER_OOMD when any trusted.* or a kill uuid is present (Meta oomd), else
 * KILLER_SYSTEMD_OOMD for user.oomd_ooms or user.oomd_kill alone, else KILLER_UNKNOWN. */
KillerKind killmarks_xattrs_killer(const CgroupKillXattrs *x);

/* A parser of one killer's log messages (after their "ident[pid]: " header, or a headerless line of
 * its own output): 1 with *ret filled when msg completes a mark, 0 when it is none or only part of
 * one, kept in *state (the killer's own, {.uid = -1} to begin with and after each mark). Pure. */
typedef int (*KillerLogParser)(const char *msg, size_t len, KillMark *state, KillMark *ret);

/* One killer: everything psidiag knows of it, in one row (docs/killers.md says where each fact was
 * read). A new killer is one more KillerKind, one more row, its parser and its docs. */
typedef struct KillerInfo {
        KillerKind kind;
        const char *name;           /* the incident's killer.name and the metrics' killer label */
        const char *executables[2]; /* its executable's basename (a script's: its comm), NULL-ended */
        const char *log_ident;      /* its syslog identifier; NULL: no log line of it is read */
        KillerLogParser log_parser; /* NULL with log_ident */
        bool log_stateful;          /* a mark spans lines: on a headerless line, tried after the others */
        const char *units[3];       /* the systemd units it runs as (Debian's), NULL-ended */
} KillerInfo;

/* The row of k; KILLER_UNKNOWN's for anything out of range. */
const KillerInfo *killmarks_killer(KillerKind k);

/* The killer whose executables[] holds name (a basename: "earlyoom", "systemd-oomd", "oomd";
 * "nohang", a Python script whose /proc/PID/exe is the interpreter, so only its comm or its
 * journal entries' _COMM say it). KILLER_UNKNOWN for any other name or NULL. A name says what a
 * process calls itself, not who it is: kills/killtrust.h tells that. */
KillerKind killmarks_known_executable(const char *name);
