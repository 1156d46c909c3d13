/* SPDX-License-Identifier: MIT */
/* Text for a person from an incident's own fields: a name with its control bytes escaped, and
 * where a process or cgroup is as an operator names it (its container, its pod, else its cgroup),
 * durations and sizes, and the field readers they share. Used by the summary sentence. Pure: writes to the caller's
 * FILE only. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* A string field of o; NULL when missing or not a string. */
const char *textout_field_string(const json_t *o, const char *key);
/* A number field (integer or real); false when missing or null. */
bool textout_field_number(const json_t *o, const char *key, double *ret);
/* The same, 0 when missing. */
double textout_field_or_zero(const json_t *o, const char *key);
/* "850 us", "42 ms", "3.1 ms", "0.31 s", "1.5 s", "12 s". */
void textout_put_duration_us(FILE *f, double us);
/* "512 B", "50.0 MiB", "1.4 GiB". */
void textout_put_bytes(FILE *f, double b);

/* s (NULL: nothing) with control bytes as \xNN: names come from task comms, cgroup paths and
 * container runtimes' files. */
void textout_put_name(FILE *f, const char *s);

/* Where o ({"meta": cgroup_meta, ...}: a process or a cgroup of the incident) is: "container web,
 * image nginx:1.25", "pod payments/api-7d9f, container api", else path ("?" when NULL). */
void textout_put_owner(FILE *f, const json_t *o, const char *path);
