/* SPDX-License-Identifier: MIT */
/* The pieces every summary sentence (incident/summary.h) is written with: an incident's fields
 * read as text or numbers, names made safe for a terminal, durations and sizes the way the
 * sentences say them. Pure: writes only to the FILE it is given. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* The string field key of o, NULL when missing or not a string. */
const char *summary_field_string(const json_t *o, const char *key);
/* A number field (integer or real); false when missing or null. */
bool summary_field_number(const json_t *o, const char *key, double *ret);
/* A number field, 0 when missing or null. */
double summary_field_or_zero(const json_t *o, const char *key);
/* s with control bytes written as \xNN (names come from comms and cgroup paths). */
void summary_put_name(FILE *f, const char *s);
/* "850 us", "42 ms", "3.1 ms", "0.31 s", "1.5 s", "12 s". */
void summary_put_duration_us(FILE *f, double us);
/* "512 B", "3.5 KiB", "25.4 MiB", "120 GiB". */
void summary_put_bytes(FILE *f, double b);
