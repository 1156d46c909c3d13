/* SPDX-License-Identifier: MIT */
/* The marks a userspace OOM killer leaves outside the killed cgroup, for the kill incidents
 * (agent/kills.c): its log files (syslog-style files of the config's kill_log_files, tailed from
 * their end while a kill window is open; sampling/kills.h parses the lines), its journal entries
 * (sampling/killjournal.h) and its own process running on the node. Logs at debug level only. */
#pragma once

#include <stddef.h>

#include "config/config.h"
#include "probes/killmarks.h"
#include "probes/sysroot.h"
#include "sampling/killjournal.h"
#include "sampling/kills.h"

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

/* Opens the config's kill log files (or the defaults that exist) and the systemd journal at their
 * end: only what is written from now on is read. One that cannot be opened is left out (logged at
 * debug level when configured). */
void kill_logs_open(KillLogs *k, const Config *c);
void kill_logs_close(KillLogs *k);

/* Reads what was appended to the log files and the journal (bounded per call) and calls mark() for each line that
 * names a kill. */
void kill_logs_drain(KillLogs *k, void (*mark)(const KillMark *m, void *userdata), void *userdata);

/* The known killers whose process runs now (comm, or the exe's basename), at most max, each once.
 * 0 when /proc cannot be listed. */
size_t kill_running_killers(const Sysroot *s, KillerKind *ret, size_t max);
