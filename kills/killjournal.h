/* SPDX-License-Identifier: MIT */
/* The systemd journal as a source of killers' marks, read beside the kill log files while a kill
 * window is open: the entries of every killer whose row of the killers' table (kills/killmarks.h,
 * KillerInfo) has a log identifier (by SYSLOG_IDENTIFIER) written since it was opened, each parsed
 * by kill_journal_parse_entry() (kills/kills.h), which the same rows drive, and counted only
 * when journald's own fields of the sender (_SYSTEMD_UNIT, _UID, _EXE, _COMM) say the killer sent
 * it: anyone may log with SYSLOG_IDENTIFIER=earlyoom. systemd-oomd's
 * xattrs vanish with the cgroup it kills, which systemd removes within 100 ms; its journal line is
 * the mark that lasts (docs/killers.md). libsystemd is loaded with dlopen on first use, as the
 * journal output loads it: without it, or without a journal, there is no reader. Never logs. */
#pragma once

#include <stddef.h>

#include "kills/killmarks.h"

typedef struct KillJournal KillJournal;

#define KILL_JOURNAL_MATCH_MAX 64

/* The journal's matches: "SYSLOG_IDENTIFIER=" and the log_ident of each killer of the killers'
 * table that has one, in table order, so that a killer whose lines are parsed is also read. */
typedef struct KillJournalMatches {
        char match[_KILLER_MAX][KILL_JOURNAL_MATCH_MAX];
        size_t n;
} KillJournalMatches;

/* Fills *ret from the killers' table. Pure. */
void kill_journal_matches(KillJournalMatches *ret);

/* Opens the local system journal at its end: only entries written from now on are read. 0 and
 * *ret; -EOPNOTSUPP without journal support or libsystemd.so.0; -errno of sd_journal_open(). */
int kill_journal_open(KillJournal **ret);

/* Closes j (NULL is fine); returns NULL. */
KillJournal *kill_journal_close(KillJournal *j);

/* Reads the entries written since the last call (at most 256 per call) and calls mark() for each
 * that completes a mark. Returns how many did; 0 for j NULL. */
size_t kill_journal_drain(KillJournal *j, void (*mark)(const KillMark *m, void *userdata), void *userdata);
