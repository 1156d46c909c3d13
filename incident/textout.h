/* SPDX-License-Identifier: MIT */
/* Text for a person from an incident's own fields: a name with its control bytes escaped, and
 * where a process or cgroup is as an operator names it (its container, its pod, else its cgroup).
 * Used by the summary sentence. Pure: writes to the caller's FILE only. */
#pragma once

#include <jansson.h>
#include <stdio.h>

/* s (NULL: nothing) with control bytes as \xNN: names come from task comms, cgroup paths and
 * container runtimes' files. */
void textout_put_name(FILE *f, const char *s);

/* Where o ({"meta": cgroup_meta, ...}: a process or a cgroup of the incident) is: "container web,
 * image nginx:1.25", "pod payments/api-7d9f, container api", else path ("?" when NULL). */
void textout_put_owner(FILE *f, const json_t *o, const char *path);
