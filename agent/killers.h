/* SPDX-License-Identifier: MIT */
/* The marks a userspace OOM killer leaves, for the kill incidents (agent/killwatch.c): its log files
 * (syslog-style files of the config's kill_log_files, tailed from their end while a kill window is
 * open; kills/kills.h parses the lines), its journal entries (kills/killjournal.h), the
 * oomd_* xattrs it sets on the cgroups (against a window's baseline) and its own process running
 * on the node. Logs at debug level only. */
#pragma once

#include <stddef.h>

#include "config/config.h"
#include "kills/killmarks.h"
#include "probes/sysroot.h"
#include "kills/killjournal.h"
#include "kills/kills.h"

#define KILL_LOG_LINE_MAX 4096 /* a longer line is no killer's mark: dropped */

typedef struct KillLog {
        char *path;
        int fd;
        char buf[KILL_LOG_LINE_MAX];
        size_t len;
        KillLogState state;
} KillLog;

typedef struct KillLogs {
        KillLog logs[CONFIG_KILL_LOG_FILES_MAX];
        size_t n_logs;
        KillJournal *journal; /* the systemd journal's killer entries; NULL without one */
} KillLogs;

/* Opens the config's kill log files (none by default) and the systemd journal at their end: only
 * what is written from now on is read. One that cannot be opened, or is not a regular file of
 * root's that only root may write, is left out (logged at debug level). */
void killers_logs_open(KillLogs *k, const Config *c);
void killers_logs_close(KillLogs *k);

/* Reads what was appended to the log files and the journal (bounded per call) and calls mark() for each line that
 * names a kill. */
void killers_logs_drain(KillLogs *k, void (*mark)(const KillMark *m, void *userdata), void *userdata);

/* The oomd_* xattrs of the cgroups of a kill window (the watch's and its members'), read once each
 * at the window's start: the baseline against which a killer's new xattr shows. */
#define KILLERS_XATTR_CGROUPS_MAX 16
typedef struct KillXattrBases {
        struct {
                char path[KILL_CGROUP_MAX];
                CgroupKillXattrs x;
        } items[KILLERS_XATTR_CGROUPS_MAX];
        size_t n;
} KillXattrBases;

/* Reads the baseline of cgroup path's xattrs, once (past KILLERS_XATTR_CGROUPS_MAX: not at all). A NULL
 * path (a node-wide watch) has none. */
void killers_xattrs_note(KillXattrBases *b, const Sysroot *s, const char *path);

/* Whose oomd_* xattr grew since the baseline, on cgroup (the victims') or an ancestor up to
 * watch_path (NULL node-wide: the cgroup alone); its name in name. KILLER_UNKNOWN when none grew
 * or cgroup is NULL. */
KillerKind killers_xattrs_grew(const KillXattrBases *b, const Sysroot *s, const char *cgroup, const char *watch_path,
                               char *name, size_t size);

/* The known killers whose process runs now (kills/killtrust.h: by its executable, root's in a
 * system directory, or its systemd unit; never its comm), at most max, each once. 0 when /proc
 * cannot be listed. */
size_t killers_running(const Sysroot *s, KillerKind *ret, size_t max);
