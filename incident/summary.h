/* SPDX-License-Identifier: MIT */
/* The incident's one sentence (`summary`): who stalled, how long, on what, and who is causing it,
 * built from the incident's own JSON fields and nothing else, so it never says what the line does
 * not. Also decides `culprits.dominant` from the culprit cgroups' shares. Pure: no I/O, no
 * logging. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

/* A culprit dominates when its cgroup has at least half of the scope's use, or at least a quarter
 * and twice the next cgroup's. */
#define SUMMARY_DOMINANT_SHARE 0.5
#define SUMMARY_DOMINANT_SHARE_MIN 0.25

/* Whether the incident's window saw less than a quarter of the stall that fired its trigger
 * (sampling/fired.h): window.verdict "passed", or for a line written before window existed, the
 * same rule on trigger and sample. Writes the stall the window saw to *ret_seen_us (may be NULL)
 * when true. */
bool summary_stall_passed(const json_t *incident, double *ret_seen_us);

/* Whether the culprits object's first cgroup dominates (above); false for no cgroups. */
bool summary_culprit_dominant(const json_t *culprits);

/* The sentence for a pressure, snapshot or oom incident, in a new string (control bytes of comm
 * and cgroup names escaped as \xNN). 0, -EINVAL when the incident lacks the fields every incident
 * has (type, sample or oom), or -ENOMEM. */
int summary_format(const json_t *incident, char **ret);

/* Adds `culprits.dominant` (when culprits is an object) and `summary` to an incident built by
 * incident_build(), the summary right after `time`. Takes incident; returns the incident with
 * them, or, when either cannot be built, the incident as it was (an incident is never lost for
 * its sentence). */
json_t *summary_add(json_t *incident);
