/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/macro.h"
#include "incident/incident.h"
#include "sinks/otlp.h"

/* set_new() and append_new() (incident/jsonutil.h): jansson takes the reference even when it
 * fails, so a NULL from a constructor needs no decref here. */

/* OTLP/JSON writes int64 and uint64 fields as decimal strings (proto3 JSON mapping). */
static json_t *int64_string(long long i) {
        char buf[24];

        snprintf(buf, sizeof buf, "%lld", i);
        return json_string(buf);
}

static json_t *uint64_string(uint64_t u) {
        char buf[24];

        snprintf(buf, sizeof buf, "%" PRIu64, u);
        return json_string(buf);
}

static json_t *wrap(const char *field, json_t *v) {
        json_t *o;

        if (!v)
                return NULL;
        o = json_object();
        if (!o || set_new(o, field, v) < 0) {
                json_decref(o);
                if (!o)
                        json_decref(v);
                return NULL;
        }
        return o;
}

static json_t *key_value(const char *key, json_t *value) {
        json_auto_t *kv = NULL;

        if (!value)
                return NULL;
        kv = json_object();
        if (!kv) {
                json_decref(value);
                return NULL;
        }
        if (set_new(kv, "key", json_string(key)) < 0) {
                json_decref(value);
                return NULL;
        }
        if (set_new(kv, "value", value) < 0)
                return NULL;
        return TAKE_PTR(kv);
}

/* A real as the incident line has it: jansson writes "%.*g" of INCIDENT_REAL_PRECISION digits
 * (incident_dump_line()), which is what a reader of the line parses back. */
static double as_written(double d) {
        char buf[64];

        snprintf(buf, sizeof buf, "%.*g", INCIDENT_REAL_PRECISION, d);
        return strtod(buf, NULL);
}

json_t *otlp_any_value(json_t *v) {
        json_auto_t *values = NULL;
        const char *key;
        json_t *e;
        size_t i;

        switch (json_typeof(v)) {
        case JSON_OBJECT:
                values = json_array();
                if (!values)
                        return NULL;
                json_object_foreach(v, key, e) {
                        if (append_new(values, key_value(key, otlp_any_value(e))) < 0)
                                return NULL;
                }
                return wrap("kvlistValue", wrap("values", TAKE_PTR(values)));
        case JSON_ARRAY:
                values = json_array();
                if (!values)
                        return NULL;
                json_array_foreach(v, i, e) {
                        if (append_new(values, otlp_any_value(e)) < 0)
                                return NULL;
                }
                return wrap("arrayValue", wrap("values", TAKE_PTR(values)));
        case JSON_STRING:
                /* The incident's strings are valid UTF-8 already (incident.h); lengths keep NULs. */
                return wrap("stringValue", json_stringn_nocheck(json_string_value(v), json_string_length(v)));
        case JSON_INTEGER:
                return wrap("intValue", int64_string((long long) json_integer_value(v)));
        case JSON_REAL:
                return wrap("doubleValue", json_real(as_written(json_real_value(v))));
        case JSON_TRUE:
        case JSON_FALSE:
                return wrap("boolValue", json_boolean(json_is_true(v)));
        case JSON_NULL:
        default:
                /* An AnyValue with no value set: what OTLP says for "no value". */
                return json_object();
        }
}

static bool all_digits(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char) s[i]))
                        return false;
        return true;
}

int otlp_parse_time_ns(const char *s, uint64_t *ret) {
        struct tm tm = {};
        uint64_t frac_ns = 0, scale = 100000000;
        const char *p;
        time_t t;

        /* "YYYY-MM-DDTHH:MM:SS" is 19 bytes, in fixed positions. */
        if (!s || strlen(s) < 20 || !all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) || s[7] != '-' ||
            !all_digits(s + 8, 2) || s[10] != 'T' || !all_digits(s + 11, 2) || s[13] != ':' || !all_digits(s + 14, 2) ||
            s[16] != ':' || !all_digits(s + 17, 2))
                return -EINVAL;
        tm.tm_year = atoi(s) - 1900;
        tm.tm_mon = atoi(s + 5) - 1;
        tm.tm_mday = atoi(s + 8);
        tm.tm_hour = atoi(s + 11);
        tm.tm_min = atoi(s + 14);
        tm.tm_sec = atoi(s + 17);
        if (tm.tm_year < 70 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
            tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        p = s + 19;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (scale == 0)
                                return -EINVAL; /* more than 9 digits */
                        frac_ns += (uint64_t) (*p - '0') * scale;
                        scale /= 10;
                }
        }
        if (strcmp(p, "Z") != 0)
                return -EINVAL;
        t = timegm(&tm);
        if (t < 0)
                return -EINVAL;
        *ret = (uint64_t) t * 1000000000ULL + frac_ns;
        return 0;
}

static int add_attr(json_t *attrs, const char *key, json_t *any) {
        return append_new(attrs, key_value(key, any));
}

/* Adds key when v is a string (non-empty) or an integer; null and absent say "unknown". */
static int add_attr_known(json_t *attrs, const char *key, json_t *v) {
        if (json_is_string(v) && json_string_length(v) > 0)
                return add_attr(attrs, key, otlp_any_value(v));
        if (json_is_integer(v))
                return add_attr(attrs, key, otlp_any_value(v));
        return 0;
}

static int add_attr_string(json_t *attrs, const char *key, const char *s) {
        return add_attr(attrs, key, wrap("stringValue", json_string(s)));
}

/* The log record's attributes, semantic conventions first (process.*, container.id, k8s.pod.uid). */
static int record_attributes(json_t *incident, json_t *attrs) {
        json_t *top = json_object_get(incident, "most_delayed"), *trigger = json_object_get(incident, "trigger"),
               *oom = json_object_get(incident, "oom"), *first = json_array_get(top, 0);
        int r = 0;

        r = add_attr_known(attrs, "psidiag.incident.id", json_object_get(incident, "id"));
        if (r >= 0 && json_is_object(first)) {
                json_t *meta = json_object_get(first, "meta");

                r = add_attr_known(attrs, "process.pid", json_object_get(first, "pid"));
                if (r >= 0)
                        r = add_attr_known(attrs, "process.executable.name", json_object_get(first, "comm"));
                if (r >= 0)
                        r = add_attr_known(attrs, "process.command_line", json_object_get(first, "cmdline"));
                if (r >= 0)
                        r = add_attr_known(attrs, "process.user.id", json_object_get(first, "uid"));
                if (r >= 0)
                        r = add_attr_known(attrs, "container.id", json_object_get(meta, "container_id"));
                if (r >= 0)
                        r = add_attr_known(attrs, "k8s.pod.uid", json_object_get(meta, "pod_uid"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.process.cgroup", json_object_get(first, "cgroup"));
        }
        if (r >= 0 && json_is_object(trigger)) {
                r = add_attr_known(attrs, "psidiag.trigger.cgroup", json_object_get(trigger, "cgroup"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.trigger.resource", json_object_get(trigger, "resource"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.trigger.stall", json_object_get(trigger, "stall"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.trigger.spec", json_object_get(trigger, "spec"));
        }
        if (r >= 0 && json_is_object(oom)) {
                json_t *victim = json_object_get(oom, "victim");

                r = add_attr_known(attrs, "psidiag.oom.cgroup", json_object_get(oom, "cgroup"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.oom.victim.pid", json_object_get(victim, "pid"));
                if (r >= 0)
                        r = add_attr_known(attrs, "psidiag.oom.victim.name", json_object_get(victim, "comm"));
        }
        return r;
}

static json_t *resource(json_t *incident) {
        json_t *host = json_object_get(incident, "host"), *agent = json_object_get(incident, "agent");
        json_auto_t *attrs = json_array(), *res = json_object();

        if (!attrs || !res)
                return NULL;
        if (add_attr_known(attrs, "host.name", json_object_get(host, "hostname")) < 0 ||
            add_attr_known(attrs, "host.id", json_object_get(host, "boot_id")) < 0 ||
            add_attr_string(attrs, "service.name", OTLP_SERVICE_NAME) < 0 ||
            add_attr_known(attrs, "service.version", json_object_get(agent, "version")) < 0 ||
            add_attr_string(attrs, "os.type", "linux") < 0 ||
            add_attr_known(attrs, "os.version", json_object_get(host, "kernel")) < 0)
                return NULL;
        if (set_new(res, "attributes", TAKE_PTR(attrs)) < 0)
                return NULL;
        return TAKE_PTR(res);
}

static json_t *scope(json_t *incident) {
        json_t *version = json_object_get(json_object_get(incident, "agent"), "version");
        json_auto_t *s = json_object();

        if (!s || set_new(s, "name", json_string(OTLP_SCOPE_NAME)) < 0)
                return NULL;
        if (json_is_string(version) && set_new(s, "version", json_copy(version)) < 0)
                return NULL;
        return TAKE_PTR(s);
}

int otlp_from_incident(json_t *incident, uint64_t observed_unix_ns, json_t **ret) {
        json_t *type = json_object_get(incident, "type");
        json_auto_t *record = NULL, *attrs = NULL, *scope_logs = NULL, *resource_logs = NULL, *request = NULL;
        char event[64];
        uint64_t time_ns;
        int severity, r;

        if (!json_is_object(incident) || !json_is_string(type) ||
            otlp_parse_time_ns(json_string_value(json_object_get(incident, "time")), &time_ns) < 0)
                return -EINVAL;
        const char *t = json_string_value(type);
        severity = strcmp(t, "oom") == 0        ? OTLP_SEVERITY_ERROR
                   : strcmp(t, "pressure") == 0 ? OTLP_SEVERITY_WARN
                                                : OTLP_SEVERITY_INFO;
        if ((size_t) snprintf(event, sizeof event, "psidiag.%s", t) >= sizeof event)
                return -EINVAL;

        record = json_object();
        attrs = json_array();
        if (!record || !attrs)
                return -ENOMEM;
        r = record_attributes(incident, attrs);
        if (r < 0)
                return r;
        /* Field names in lowerCamelCase and enums as numbers, as OTLP/JSON requires; traceId and
         * spanId are left out (an incident belongs to no trace). */
        if (set_new(record, "timeUnixNano", uint64_string(time_ns)) < 0 ||
            set_new(record, "observedTimeUnixNano", uint64_string(observed_unix_ns)) < 0 ||
            set_new(record, "severityNumber", json_integer(severity)) < 0 ||
            set_new(record, "severityText",
                    json_string(severity == OTLP_SEVERITY_ERROR  ? "ERROR"
                                : severity == OTLP_SEVERITY_WARN ? "WARN"
                                                                 : "INFO")) < 0 ||
            set_new(record, "eventName", json_string(event)) < 0 ||
            set_new(record, "body", otlp_any_value(incident)) < 0 || set_new(record, "attributes", TAKE_PTR(attrs)) < 0)
                return -ENOMEM;

        scope_logs = json_object();
        if (!scope_logs || set_new(scope_logs, "scope", scope(incident)) < 0 ||
            set_new(scope_logs, "logRecords", json_pack("[O]", record)) < 0)
                return -ENOMEM;
        resource_logs = json_object();
        if (!resource_logs || set_new(resource_logs, "resource", resource(incident)) < 0 ||
            set_new(resource_logs, "scopeLogs", json_pack("[O]", scope_logs)) < 0)
                return -ENOMEM;
        request = json_object();
        if (!request || set_new(request, "resourceLogs", json_pack("[O]", resource_logs)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(request);
        return 0;
}

int otlp_dump_line(const json_t *request, char **ret, size_t *ret_len) {
        _cleanup_free_ char *text = json_dumps(request, JSON_COMPACT);
        char *out;
        size_t n;

        if (!text)
                return -ENOMEM;
        n = strlen(text);
        out = realloc(text, n + 2);
        if (!out)
                return -ENOMEM;
        TAKE_PTR(text);
        out[n] = '\n';
        out[n + 1] = '\0';
        *ret = out;
        *ret_len = n + 1;
        return 0;
}
