/* SPDX-License-Identifier: MIT */
/* Incidents as OpenTelemetry logs (output_format "otlp"): one incident becomes one OTLP/JSON
 * ExportLogsServiceRequest, the shape the OpenTelemetry Collector's otlpjsonfile receiver reads,
 * with the incident whole as the log record's structured body. Pure: reads only its arguments, does
 * no I/O and logs nothing. Does not send anything anywhere: it is the formatter a sink puts in
 * front of its kind (sink.h). */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define OTLP_SCOPE_NAME "psidiag"
#define OTLP_SERVICE_NAME "psidiag"

/* OpenTelemetry SeverityNumber values (logs data model). */
#define OTLP_SEVERITY_INFO 9
#define OTLP_SEVERITY_WARN 13
#define OTLP_SEVERITY_ERROR 17

/* Turns one JSON value into an OTLP AnyValue: objects become kvlistValue, arrays arrayValue,
 * strings stringValue, booleans boolValue, integers intValue (a decimal string, as OTLP/JSON
 * writes 64-bit integers), reals doubleValue (to the incident line's INCIDENT_REAL_PRECISION
 * significant digits, so the record says what the incident line says), null the empty AnyValue {}. Returns a new
 * reference, or NULL when out of memory. */
json_t *otlp_any_value(json_t *v);

/* Parses the incident's "time" ("2026-11-23T12:28:42.840095Z", UTC, 0 to 9 fraction digits) into
 * nanoseconds since the epoch. 0 or -EINVAL. */
int otlp_parse_time_ns(const char *s, uint64_t *ret);

/* Builds the ExportLogsServiceRequest of incident (an object of schemas/incident.schema.json):
 * resource attributes host.name, host.id (the boot id), service.name, service.version; one log
 * record with timeUnixNano (the incident's time), observedTimeUnixNano (observed_unix_ns, when the
 * line is written), severityNumber/severityText (pressure WARN, oom ERROR, others INFO),
 * eventName "psidiag.<type>", the incident as a kvlistValue body, and attributes naming the first
 * process of most_delayed (process.pid, process.executable.name, process.command_line,
 * process.user.id, container.id, k8s.pod.uid where known, psidiag.process.cgroup), the trigger
 * (psidiag.trigger.cgroup, .resource, .stall, .spec), the oom kill (psidiag.oom.cgroup,
 * psidiag.oom.victim.pid, psidiag.oom.victim.name) and psidiag.incident.id. Attributes whose
 * value the incident does not know (null, absent) are left out.
 * 0 and a new reference in *ret; -EINVAL when incident is not an incident (no string "type", or a
 * "time" that does not parse); -ENOMEM. */
int otlp_from_incident(json_t *incident, uint64_t observed_unix_ns, json_t **ret);

/* The request as one compact line ending in '\n' (malloc'ed): the line the OTLP format writes
 * (sink.h). 0 or -ENOMEM. */
int otlp_dump_line(const json_t *request, char **ret, size_t *ret_len);
