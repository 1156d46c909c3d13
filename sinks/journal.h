/* SPDX-License-Identifier: MIT */
/* The journal sink kind (sink.h, output "journal"), when psidiag is built with libsystemd
 * (meson -Djournal=enabled, or auto when it is found). Each incident is one journal entry built
 * from the incident's json_t: a one-line MESSAGE for journalctl, a stable MESSAGE_ID per incident
 * type, and the whole incident line in PSIDIAG_INCIDENT, so a pipeline can read the JSON back. It
 * takes incidents whatever the output format (own_entries). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sinks/sink.h"

/* MESSAGE_IDs (journalctl MESSAGE_ID=...), stable across releases. */
#define JOURNAL_MESSAGE_ID_PRESSURE "4199463274cb4675aec11f7d33e6b6d9"
#define JOURNAL_MESSAGE_ID_SNAPSHOT "4c51017f4ed14fa79f2a1f07fb2c88b0"
#define JOURNAL_MESSAGE_ID_OOM "415ccd0b999341d2b81872b5e553b339"
#define JOURNAL_MESSAGE_ID_KILL "2f1e5b0c6a8d4e7fb3c9d1a4e6f80b27"
#define JOURNAL_MESSAGE_ID_OTHER "6b7e8aade658436896ff3b7584d57122"

extern const SinkOps sink_journal_ops;

/* Builds the journal MESSAGE of an incident: its own `summary` sentence, or, for an incident
 * without one, a line made of its fields ("pressure on /demo \"cpu some 20% 2s\":
 * api-worker[7570] cpu 1.03s, ...", "oom in /demo: killed hog[7702], 2 related: ..."), with
 * control characters replaced. Writes the message, type and incident id into the buffers and
 * type's MESSAGE_ID; returns 1 for the incident's sentence, 0 for a made line (which the entry
 * prefixes with "psidiag: "), -EINVAL for a value that is not an incident (no string "type"). */
int journal_summary(json_t *incident, char *message, size_t message_size, char *type, size_t type_size, char *id,
                    size_t id_size, const char **ret_message_id);
