/* SPDX-License-Identifier: MIT */
/* The incident -> OTLP/JSON conversion: every AnyValue kind, the time parser, the request built
 * from the schema's example incidents (resource, record fields, semantic-convention attributes),
 * 64-bit integers as strings, and what is refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/otlp.h"
#include "tests/unit/test-util.h"

static json_t *load(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, JSON_DECODE_ANY, &e);

        if (!j)
                fail_msg("bad test JSON: %s", e.text);
        return j;
}

static json_t *load_example(const char *name) {
        char path[512];
        json_error_t e;
        json_t *j;

        snprintf(path, sizeof path, "%s/examples/%s", SCHEMA_DIR, name);
        j = json_load_file(path, 0, &e);
        if (!j)
                fail_msg("%s: %s", path, e.text);
        return j;
}

static void assert_any(const char *in, const char *want) {
        json_t *v = load(in), *w = load(want), *got = otlp_any_value(v);
        char *s;

        assert_non_null(got);
        if (!json_equal(got, w)) {
                s = json_dumps(got, JSON_COMPACT);
                fail_msg("%s became %s, not %s", in, s, want);
        }
        json_decref(v);
        json_decref(w);
        json_decref(got);
}

static void test_any_value(void **state) {
        assert_any("\"x\"", "{\"stringValue\":\"x\"}");
        assert_any("true", "{\"boolValue\":true}");
        assert_any("false", "{\"boolValue\":false}");
        assert_any("0", "{\"intValue\":\"0\"}");
        assert_any("-42", "{\"intValue\":\"-42\"}");
        assert_any("9223372036854775807", "{\"intValue\":\"9223372036854775807\"}");
        assert_any("17.02", "{\"doubleValue\":17.02}");
        assert_any("0.0", "{\"doubleValue\":0.0}");
        /* As the incident line writes it (6 significant digits), not as the double has it. */
        assert_any("0.4567891", "{\"doubleValue\":0.456789}");
        assert_any("1234567.0", "{\"doubleValue\":1234570.0}");
        assert_any("null", "{}");
        assert_any("[]", "{\"arrayValue\":{\"values\":[]}}");
        assert_any("{}", "{\"kvlistValue\":{\"values\":[]}}");
        assert_any("[1,\"a\",null]", "{\"arrayValue\":{\"values\":[{\"intValue\":\"1\"},{\"stringValue\":\"a\"},{}]}}");
        assert_any("{\"a\":{\"b\":[true]},\"c\":null}",
                   "{\"kvlistValue\":{\"values\":["
                   "{\"key\":\"a\",\"value\":{\"kvlistValue\":{\"values\":["
                   "{\"key\":\"b\",\"value\":{\"arrayValue\":{\"values\":[{\"boolValue\":true}]}}}]}}},"
                   "{\"key\":\"c\",\"value\":{}}]}}");
}

static void test_parse_time(void **state) {
        uint64_t ns = 0;

        assert_int_equal(otlp_parse_time_ns("2026-11-23T12:28:42.840095Z", &ns), 0);
        assert_true(ns == 1795436922840095000ULL);
        assert_int_equal(otlp_parse_time_ns("1970-01-01T00:00:00Z", &ns), 0);
        assert_true(ns == 0);
        assert_int_equal(otlp_parse_time_ns("1970-01-01T00:00:01.000000001Z", &ns), 0);
        assert_true(ns == 1000000001ULL);
        assert_int_equal(otlp_parse_time_ns("1970-01-01T00:00:01.5Z", &ns), 0);
        assert_true(ns == 1500000000ULL);

        ns = 7;
        assert_int_equal(otlp_parse_time_ns("1970-01-01T00:00:01.0000000001Z", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("2026-11-23T12:28:42.840095", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("2026-11-23T12:28:42+00:00", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("2026-11-23 12:28:42Z", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("2026-13-23T12:28:42Z", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("2026-11-23T12:28:42.Z", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("1969-12-31T23:59:59Z", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns("", &ns), -EINVAL);
        assert_int_equal(otlp_parse_time_ns(NULL, &ns), -EINVAL);
        assert_true(ns == 7); /* untouched on failure */
}

/* The value of attribute key in an OTLP attribute list, or NULL. */
static json_t *attr(json_t *attrs, const char *key) {
        size_t i;
        json_t *kv;

        json_array_foreach(attrs, i, kv) {
                if (strcmp(json_string_value(json_object_get(kv, "key")), key) == 0)
                        return json_object_get(kv, "value");
        }
        return NULL;
}

static void assert_attr_string(json_t *attrs, const char *key, const char *want) {
        json_t *v = attr(attrs, key);

        if (!v)
                fail_msg("no attribute %s", key);
        assert_string_equal(json_string_value(json_object_get(v, "stringValue")), want);
}

static void assert_attr_int(json_t *attrs, const char *key, const char *want) {
        json_t *v = attr(attrs, key);

        if (!v)
                fail_msg("no attribute %s", key);
        assert_string_equal(json_string_value(json_object_get(v, "intValue")), want);
}

/* OTLP/JSON: no JSON integer anywhere but the enum severityNumber; every 64-bit value is a string. */
static void assert_no_integers(json_t *v, const char *key) {
        const char *k;
        json_t *e;
        size_t i;

        if (json_is_integer(v) && strcmp(key, "severityNumber") != 0)
                fail_msg("%s is a JSON integer", key);
        json_object_foreach(v, k, e) {
                assert_no_integers(e, k);
        }
        json_array_foreach(v, i, e) {
                assert_no_integers(e, key);
        }
}

static json_t *only_record(json_t *req, json_t **ret_resource) {
        json_t *rl = json_object_get(req, "resourceLogs"), *sl, *records;

        assert_int_equal(json_array_size(rl), 1);
        *ret_resource = json_object_get(json_array_get(rl, 0), "resource");
        sl = json_object_get(json_array_get(rl, 0), "scopeLogs");
        assert_int_equal(json_array_size(sl), 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(sl, 0), "scope"), "name")),
                            "psidiag");
        records = json_object_get(json_array_get(sl, 0), "logRecords");
        assert_int_equal(json_array_size(records), 1);
        return json_array_get(records, 0);
}

static const char *str(json_t *o, const char *key) {
        const char *v = json_string_value(json_object_get(o, key));

        if (!v)
                fail_msg("the example has no string %s", key);
        return v;
}

static const char *int_str(json_t *o, const char *key, char *buf, size_t size) {
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v))
                fail_msg("the example has no integer %s", key);
        snprintf(buf, size, "%lld", (long long) json_integer_value(v));
        return buf;
}

/* Expected values come from the example itself (regenerated now and then); the time is set to a
 * known one, whose nanoseconds are checked. */
static void test_pressure_incident(void **state) {
        json_t *inc = load_example("incident-pressure.json"), *req = NULL, *res, *rec, *attrs, *body, *first, *trigger;
        char buf[32];

        assert_int_equal(json_object_set_new(inc, "time", json_string("2026-11-23T12:28:42.840095Z")), 0);
        first = json_array_get(json_object_get(inc, "most_delayed"), 0);
        trigger = json_object_get(inc, "trigger");
        assert_non_null(first);
        assert_non_null(trigger);
        assert_int_equal(otlp_from_incident(inc, 1795436923000000123ULL, &req), 0);
        rec = only_record(req, &res);

        attrs = json_object_get(res, "attributes");
        assert_attr_string(attrs, "host.name", str(json_object_get(inc, "host"), "hostname"));
        assert_attr_string(attrs, "host.id", str(json_object_get(inc, "host"), "boot_id"));
        assert_attr_string(attrs, "service.name", "psidiag");
        assert_attr_string(attrs, "service.version", str(json_object_get(inc, "agent"), "version"));

        assert_string_equal(json_string_value(json_object_get(rec, "timeUnixNano")), "1795436922840095000");
        assert_string_equal(json_string_value(json_object_get(rec, "observedTimeUnixNano")), "1795436923000000123");
        assert_int_equal(json_integer_value(json_object_get(rec, "severityNumber")), OTLP_SEVERITY_WARN);
        assert_string_equal(json_string_value(json_object_get(rec, "severityText")), "WARN");
        assert_string_equal(json_string_value(json_object_get(rec, "eventName")), "psidiag.pressure");
        assert_null(json_object_get(rec, "traceId"));
        assert_null(json_object_get(rec, "spanId"));

        /* The body is the whole incident, recursively. */
        body = otlp_any_value(inc);
        assert_non_null(body);
        assert_true(json_equal(json_object_get(rec, "body"), body));
        json_decref(body);

        attrs = json_object_get(rec, "attributes");
        assert_attr_int(attrs, "process.pid", int_str(first, "pid", buf, sizeof buf));
        assert_attr_string(attrs, "process.executable.name", str(first, "comm"));
        assert_attr_string(attrs, "process.command_line", str(first, "cmdline"));
        assert_attr_int(attrs, "process.user.id", int_str(first, "uid", buf, sizeof buf));
        assert_attr_string(attrs, "psidiag.process.cgroup", str(first, "cgroup"));
        assert_attr_string(attrs, "psidiag.trigger.cgroup", str(trigger, "cgroup"));
        assert_attr_string(attrs, "psidiag.trigger.resource", str(trigger, "resource"));
        assert_attr_string(attrs, "psidiag.trigger.stall", str(trigger, "stall"));
        assert_attr_string(attrs, "psidiag.trigger.spec", str(trigger, "spec"));
        assert_attr_string(attrs, "psidiag.incident.id", str(inc, "id"));
        /* Unknown (null) in the incident: left out, not an empty value. */
        assert_true(json_is_null(json_object_get(json_object_get(first, "meta"), "container_id")));
        assert_null(attr(attrs, "container.id"));
        assert_null(attr(attrs, "k8s.pod.uid"));
        assert_null(attr(attrs, "psidiag.oom.victim.pid"));

        assert_no_integers(req, "");
        json_decref(req);
        json_decref(inc);
}

static void test_oom_incident(void **state) {
        json_t *inc = load_example("incident-oom.json"), *req = NULL, *res, *rec, *attrs, *oom, *victim;
        char buf[32];

        oom = json_object_get(inc, "oom");
        victim = json_object_get(oom, "victim");
        assert_non_null(victim);
        assert_int_equal(otlp_from_incident(inc, 1, &req), 0);
        rec = only_record(req, &res);
        assert_int_equal(json_integer_value(json_object_get(rec, "severityNumber")), OTLP_SEVERITY_ERROR);
        assert_string_equal(json_string_value(json_object_get(rec, "severityText")), "ERROR");
        assert_string_equal(json_string_value(json_object_get(rec, "eventName")), "psidiag.oom");
        attrs = json_object_get(rec, "attributes");
        assert_attr_int(attrs, "psidiag.oom.victim.pid", int_str(victim, "pid", buf, sizeof buf));
        assert_attr_string(attrs, "psidiag.oom.victim.name", str(victim, "comm"));
        assert_attr_string(attrs, "psidiag.oom.cgroup", str(oom, "cgroup"));
        assert_true(json_is_null(json_object_get(inc, "trigger")));
        assert_null(attr(attrs, "psidiag.trigger.resource"));
        assert_no_integers(req, "");
        json_decref(req);
        json_decref(inc);
}

static void test_container_attributes(void **state) {
        json_t *inc = load_example("incident-pressure.json"), *req = NULL, *res, *rec, *attrs, *meta;

        meta = json_object_get(json_array_get(json_object_get(inc, "most_delayed"), 0), "meta");
        assert_int_equal(json_object_set_new(meta, "container_id", json_string("0123abcd")), 0);
        assert_int_equal(json_object_set_new(meta, "pod_uid", json_string("6b7e8aad-e658-4368-96ff-3b7584d57122")), 0);
        assert_int_equal(json_object_set_new(inc, "type", json_string("snapshot")), 0);
        assert_int_equal(otlp_from_incident(inc, 1, &req), 0);
        rec = only_record(req, &res);
        attrs = json_object_get(rec, "attributes");
        assert_attr_string(attrs, "container.id", "0123abcd");
        assert_attr_string(attrs, "k8s.pod.uid", "6b7e8aad-e658-4368-96ff-3b7584d57122");
        assert_string_equal(json_string_value(json_object_get(rec, "eventName")), "psidiag.snapshot");
        assert_int_equal(json_integer_value(json_object_get(rec, "severityNumber")), OTLP_SEVERITY_INFO);
        json_decref(req);

        /* No process ranked: no process attributes, still a record. */
        assert_int_equal(json_object_set_new(inc, "most_delayed", json_array()), 0);
        assert_int_equal(otlp_from_incident(inc, 1, &req), 0);
        rec = only_record(req, &res);
        attrs = json_object_get(rec, "attributes");
        assert_null(attr(attrs, "process.pid"));
        assert_non_null(attr(attrs, "psidiag.trigger.resource"));
        json_decref(req);
        json_decref(inc);
}

static void test_refused(void **state) {
        json_t *inc = load_example("incident-pressure.json"), *v, *req = (json_t *) 0x1;

        v = load("[1]");
        assert_int_equal(otlp_from_incident(v, 1, &req), -EINVAL);
        json_decref(v);
        v = load("{\"time\":\"2026-11-23T12:28:42Z\"}");
        assert_int_equal(otlp_from_incident(v, 1, &req), -EINVAL);
        json_decref(v);
        assert_int_equal(json_object_set_new(inc, "time", json_string("yesterday")), 0);
        assert_int_equal(otlp_from_incident(inc, 1, &req), -EINVAL);
        assert_ptr_equal(req, (json_t *) 0x1); /* untouched on failure */
        json_decref(inc);
}

static void test_dump_line(void **state) {
        char *line = NULL;
        json_t *inc = load_example("incident-pressure.json"), *want = NULL, *got, *v;
        size_t len = 0;

        assert_int_equal(otlp_from_incident(inc, 5, &want), 0);
        assert_int_equal(otlp_dump_line(want, &line, &len), 0);
        assert_int_equal(len, strlen(line));
        assert_true(len > 2 && line[len - 1] == '\n');
        assert_null(memchr(line, '\n', len - 1)); /* one line */
        got = json_loadb(line, len, 0, NULL);
        assert_non_null(got);
        assert_true(json_equal(got, want));
        json_decref(got);
        json_decref(want);
        free(line);

        want = NULL;
        v = json_loads("{\"type\":1}", 0, NULL);
        assert_int_equal(otlp_from_incident(v, 5, &want), -EINVAL);
        json_decref(v);
        v = json_string("\n");
        assert_int_equal(otlp_from_incident(v, 5, &want), -EINVAL);
        json_decref(v);
        assert_null(want);
        json_decref(inc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_any_value),
                cmocka_unit_test(test_parse_time),
                cmocka_unit_test(test_pressure_incident),
                cmocka_unit_test(test_oom_incident),
                cmocka_unit_test(test_container_attributes),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_dump_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
