/* SPDX-License-Identifier: MIT */
/* Incidents to the systemd journal (output "journal"), when psidiag is built with libsystemd
 * (meson -Djournal=enabled, or auto when it is found). Each incident is one journal entry: a
 * one-line MESSAGE for journalctl, a stable MESSAGE_ID per incident type, and the whole incident
 * line in PSIDIAG_INCIDENT, so a pipeline can read the JSON back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* MESSAGE_IDs (journalctl MESSAGE_ID=...), stable across releases. */
#define JOURNAL_MESSAGE_ID_PRESSURE "4199463274cb4675aec11f7d33e6b6d9"
#define JOURNAL_MESSAGE_ID_SNAPSHOT "4c51017f4ed14fa79f2a1f07fb2c88b0"
#define JOURNAL_MESSAGE_ID_OOM "415ccd0b999341d2b81872b5e553b339"
#define JOURNAL_MESSAGE_ID_OTHER "6b7e8aade658436896ff3b7584d57122"

/* True when built with journal support and libsystemd.so.0 can be loaded (dlopen, on first use). */
bool journal_supported(void);

/* Builds the one-line summary of an incident line ("pressure on /demo \"cpu some 20% 2s\":
 * api-worker[7570] cpu 1.03s, ...", "oom in /demo: killed hog[7702], 2 related: ..."), with
 * control characters replaced. Returns type's MESSAGE_ID
 * and writes the summary, type and incident id into the buffers. -EINVAL for a line that is not
 * an incident. */
int journal_summary(const char *line, size_t len, char *message, size_t message_size, char *type, size_t type_size,
                    char *id, size_t id_size, const char **ret_message_id);

/* Sends one incident line. 0, -errno from the journal socket, or -EOPNOTSUPP when built without
 * libsystemd. */
int journal_send_incident(const char *line, size_t len);
