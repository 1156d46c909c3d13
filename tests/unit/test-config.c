/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/target.h"
#include "config/jsonpos.h"
#include "tests/unit/test-util.h"

static Config *parse_ok(const char *text) {
        Config *c = NULL;
        char *error = NULL;
        int r = config_parse(text, strlen(text), "t.json", &c, &error);

        if (r < 0)
                fail_msg("unexpected error: %s", error ? error : strerror(-r));
        assert_null(error);
        return c;
}

static void parse_fails(const char *text, const char *want) {
        Config *c = NULL;
        char *error = NULL;

        assert_int_equal(config_parse(text, strlen(text), "t.json", &c, &error), -EINVAL);
        assert_null(c);
        assert_non_null(error);
        if (strncmp(error, want, strlen(want)) != 0)
                fail_msg("error \"%s\" does not start with \"%s\"", error, want);
        free(error);
}

static void test_issue_example(void **state) {
        Config *c = parse_ok("{ \"output\": \"-\", \"top\": 10, \"sample_ms\": 1000, \"cooldown_ms\": 10000,\n"
                             "  \"watch\": [\n"
                             "    { \"triggers\": [\"memory some 150ms 2s\", \"io full 100ms 2s\"] },\n"
                             "    { \"cgroup\": \"system.slice/nginx.service\", \"triggers\": [\"cpu some 20% 2s\"], "
                             "\"top\": 5 } ] }\n");

        assert_int_equal(c->n_watches, 2);
        assert_null(c->watches[0].cgroup);
        assert_int_equal(c->watches[0].n_triggers, 2);
        assert_string_equal(c->watches[0].triggers[1].text, "io full 100ms 2s");
        assert_int_equal(c->watches[0].triggers[1].spec.stall, PSI_STALL_FULL);
        assert_int_equal(c->watches[0].top, 10);
        assert_string_equal(c->watches[1].cgroup, "system.slice/nginx.service");
        assert_int_equal(c->watches[1].top, 5);
        assert_int_equal(c->watches[1].sample_ms, 1000);
        assert_int_equal(c->watches[1].cooldown_ms, 10000);
        assert_int_equal(c->watches[1].triggers[0].spec.threshold_us, 400000);
        assert_string_equal(c->watches[1].output, "-");
        config_free(c);
}

static void test_defaults_and_overrides(void **state) {
        Config *c = parse_ok("{\"watch\":[{\"cgroup\":\"/a/b\",\"triggers\":[\"cpu some 1s 2s\"],"
                             "\"output\":\"/var/log/x.ndjson\",\"sample_ms\":0,\"cooldown_ms\":0},"
                             "{\"cgroup\":\"\",\"triggers\":[\"cpu some 1s 2s\"]}]}");

        /* The documented defaults (man/psidiag.8), as numbers: test-config-keys ties them to the table. */
        assert_int_equal(c->top, 10);
        assert_int_equal(c->sample_ms, 1000);
        assert_int_equal(c->cooldown_ms, 10000);
        assert_int_equal(c->watches[1].top, 10);
        assert_int_equal(c->watches[1].sample_ms, 1000);
        assert_int_equal(c->output_format, CONFIG_OUTPUT_FORMAT_INCIDENT);
        assert_int_equal(c->oom_lookback_s, 300);
        assert_string_equal(c->output, "-");
        assert_string_equal(c->watches[0].cgroup, "a/b");
        assert_string_equal(c->watches[0].output, "/var/log/x.ndjson");
        assert_int_equal(c->watches[0].sample_ms, 0);
        assert_string_equal(c->watches[1].cgroup, "");
        assert_string_equal(c->watches[1].output, "-");

        assert_int_equal(config_override_output(c, "/tmp/o"), 0);
        assert_string_equal(c->output, "/tmp/o");
        assert_string_equal(c->watches[0].output, "/tmp/o");
        assert_string_equal(c->watches[1].output, "/tmp/o");
        config_free(c);
}

static void test_default_config(void **state) {
        Config *c = NULL;

        assert_int_equal(config_load_default(&c), 0);
        assert_int_equal(c->n_watches, 1);
        assert_null(c->watches[0].cgroup);
        assert_int_equal(c->watches[0].n_triggers, 3);
        for (size_t i = 0; i < 3; i++)
                /* Sensible everywhere: no rounding needed without CAP_SYS_RESOURCE. */
                assert_int_equal(c->watches[0].triggers[i].spec.window_us % 2000000, 0);
        assert_string_equal(c->output, "-");
        config_free(c);
}

/* Watches by container names: the selectors stored, the label, and every error at its key. */
static void test_container_watches(void **state) {
        char *error = NULL;
        Config *c = NULL;
        const char *text = "{\"watch\": [\n"
                           "  {\"container\": \"web*\", \"image\": \"nginx:*\", \"triggers\": [\"cpu some 1s 2s\"], "
                           "\"top\": 3},\n"
                           "  {\"pod\": \"payments/*\", \"triggers\": [\"memory some 1s 2s\"]}]}";

        assert_int_equal(config_parse(text, strlen(text), "t.json", &c, &error), 0);
        assert_null(c->watches[0].cgroup);
        assert_string_equal(c->watches[0].select.name, "web*");
        assert_string_equal(c->watches[0].select.image, "nginx:*");
        assert_null(c->watches[0].select.pod_namespace);
        assert_int_equal(c->watches[0].top, 3);
        assert_string_equal(config_target_label(&c->watches[0]), "container=web* image=nginx:*");
        assert_true(config_target_by_container(&c->watches[0]));
        assert_false(config_target_is_node(&c->watches[0]));
        assert_string_equal(c->watches[1].select.pod_namespace, "payments");
        assert_string_equal(c->watches[1].select.pod_name, "*");
        assert_string_equal(config_target_label(&c->watches[1]), "pod=payments/*");
        assert_false(config_target_same(&c->watches[0], &c->watches[1]));
        assert_true(config_target_same(&c->watches[1], &c->watches[1]));
        config_free(c);

        parse_fails("{\"watch\":[{\"cgroup\":\"a\",\n \"container\":\"web\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:2:14: container: a watch selects either a cgroup (cgroup) or containers by their names "
                    "(container, image, pod), not both");
        parse_fails("{\"watch\":[{\"image\":\"x\",\"cgroup\":\"a\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:33: cgroup: a watch selects either a cgroup");
        parse_fails("{\"watch\":[{\"pod\":\"payments\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:18: pod \"payments\" must be NAMESPACE/NAME, each a glob");
        parse_fails("{\"watch\":[{\"pod\":\"a/b/c\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:18: pod \"a/b/c\" must be NAMESPACE/NAME");
        parse_fails("{\"watch\":[{\"pod\":\"/b\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:18: pod \"/b\" must be NAMESPACE/NAME");
        parse_fails("{\"watch\":[{\"pod\":\"a\\u001b[2J/b\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:18: pod has a control character");
        parse_fails("{\"watch\":[{\"pod\":\"\",\"triggers\":[\"cpu some 1s 2s\"]}]}", "t.json:1:18: pod \"\" is empty");
        parse_fails("{\"watch\":[{\"container\":\"\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:24: container \"\" is empty");
        parse_fails("{\"watch\":[{\"image\":\"a\\tb\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:20: image has a control character");
        parse_fails("{\"watch\":[{\"container\":7,\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:24: container must be a string");
}

static void test_errors_with_positions(void **state) {
        parse_fails("{\"watch\": [ {\"triggers\": [\"cpu some 1s 2s\",\n   \"irq some 1ms 2s\"]} ]}",
                    "t.json:2:4: bad trigger \"irq some 1ms 2s\": irq pressure accepts only");
        parse_fails("{\n  \"top\": 0,\n  \"watch\": []\n}", "t.json:2:10: top must be between 1 and 1000");
        parse_fails("{\n  \"wacth\": []\n}", "t.json:2:12: unknown key \"wacth\"");
        parse_fails("{\"watch\":[{\"cgroup\":\"a/../../etc\",\"triggers\":[\"cpu some 1s 2s\"]}]}",
                    "t.json:1:21: cgroup \"a/../../etc\" must be a path relative");
        parse_fails("{\"watch\":[{\"triggers\":[\"cpu some 3s 2s\"]}]}",
                    "t.json:1:24: bad trigger \"cpu some 3s 2s\": stall must not exceed");
        parse_fails("{\"watch\":[{\"triggers\":[\"cpu some 1ms 20s\"]}]}",
                    "t.json:1:24: bad trigger \"cpu some 1ms 20s\": window must be between");
        parse_fails("{\"watch\":[{\"triggers\":[\"cpu some 1ms 2s\"], \"colour\": 1}]}",
                    "t.json:1:54: unknown key \"colour\" in watch");
        parse_fails("{\"watch\":[{\"cgroup\":\"x\"}]}", "t.json:1:11: watch has no \"triggers\"");
        parse_fails("{\"watch\":[{\"triggers\":[]}]}", "t.json:1:23: triggers must be a non-empty array");
        parse_fails("{\"watch\":[{\"triggers\":[42]}]}", "t.json:1:24: a trigger must be a string");
        parse_fails("{\"watch\":[7]}", "t.json:1:11: each watch must be an object");
        parse_fails("{\"watch\":{}}", "t.json:1:10: watch must be a non-empty array");
        parse_fails("{\"top\": 5}", "t.json:1:1: the config has no \"watch\" list");
        parse_fails("[1,2]", "t.json:1:1: the config must be a JSON object");
        parse_fails("{\"sample_ms\": 1.5, \"watch\": []}", "t.json:1:15: sample_ms must be an integer");
        parse_fails("{\"cooldown_ms\": 99999999999, \"watch\": []}", "t.json:1:17: cooldown_ms must be between");
        parse_fails("{\"output\": \"relative.log\", \"watch\": []}", "t.json:1:12: output must be an absolute path");
        parse_fails("{\"output\": 3, \"watch\": []}", "t.json:1:12: output must be a string");
        parse_fails("{\"metrics_file\": \"m.prom\", \"watch\": []}",
                    "t.json:1:18: metrics_file must be an absolute path");
        parse_fails("{\"metrics_file\": \"/var/lib/m.txt\", \"watch\": []}", "t.json:1:18: metrics_file must be");
        parse_fails("{\"metrics_file\": \"/x/.prom\", \"watch\": []}", "t.json:1:18: metrics_file must be");
        parse_fails("{\"metrics_file\": 1, \"watch\": []}", "t.json:1:18: metrics_file must be");
        parse_fails("{\"oom_lookback_s\": 86401, \"watch\": []}",
                    "t.json:1:20: oom_lookback_s must be between 0 and 86400");
        parse_fails("{\"oom_lookback_s\": \"5m\", \"watch\": []}", "t.json:1:20: oom_lookback_s must be an integer");
        {
                Config *c = parse_ok("{\"oom_lookback_s\": 0, \"watch\": [{\"triggers\": [\"cpu some 1s 2s\"]}]}");
                assert_int_equal(c->oom_lookback_s, 0);
                config_free(c);
        }
}

static int resolve(const char *cgroup, char **ret_error) {
        char text[256];
        Config *c = NULL;
        Sysroot *s = NULL;
        char *error = NULL;
        int r;

        snprintf(text, sizeof text, "{\"watch\": [{\"triggers\": [\"cpu some 1s 2s\"],\n \"cgroup\": \"%s\"}]}",
                 cgroup);
        assert_int_equal(config_parse(text, strlen(text), "t.json", &c, &error), 0);
        assert_int_equal(sysroot_open(fixture("hybrid"), &s), 0);
        *ret_error = NULL;
        r = config_resolve_cgroups(c, s, ret_error);
        config_free(c);
        sysroot_free(s);
        return r;
}

/* Paths that look fine but lead elsewhere on the host are config errors with a place. */
static void test_resolve_cgroups(void **state) {
        char *error;

        assert_int_equal(resolve("app/web", &error), 0);
        assert_null(error);
        assert_int_equal(resolve("app/not-yet", &error), 0); /* armed when it appears: not an error */
        assert_int_equal(resolve("/", &error), 0);

        assert_int_equal(resolve("app/escape", &error), -EINVAL);
        assert_string_equal(error, "t.json:2:12: cgroup \"app/escape\" leads through a symlink; psidiag opens "
                                   "cgroups only beneath the cgroup2 mount and never follows symlinks");
        free(error);
        assert_int_equal(resolve("app/escape/1", &error), -EINVAL);
        free(error);

        assert_int_equal(resolve("/sys/fs/cgroup/unified/app/web", &error), -EINVAL);
        assert_string_equal(error,
                            "t.json:2:12: cgroup paths are relative to the cgroup2 mount "
                            "(/sys/fs/cgroup/unified): write \"app/web\", not \"/sys/fs/cgroup/unified/app/web\"");
        free(error);
        assert_int_equal(resolve("sys/fs/cgroup/unified", &error), -EINVAL);
        assert_non_null(strstr(error, "write \"/\""));
        free(error);
        /* A prefix that is not a whole segment is just a missing cgroup. */
        assert_int_equal(resolve("sys/fs/cgroup/unifiedx", &error), 0);
}

static void test_syntax_errors(void **state) {
        /* jansson's own positions. */
        parse_fails("{\"watch\": [}", "t.json:1:12: ");
        parse_fails("{\"top\": 1,\n \"top\": 2, \"watch\": []}", "t.json:2:6: duplicate object key");
        parse_fails("", "t.json:1:0: ");
        parse_fails("not json", "t.json:1:3: '[' or '{' expected");
        parse_fails("{} trailing", "t.json:1:11: end of file expected");
}

static void test_load_file_errors(void **state) {
        Config *c = NULL;
        char *error = NULL;

        assert_int_equal(config_load_file("/nonexistent/psidiag.json", &c, &error), -ENOENT);
        assert_non_null(strstr(error, "cannot read config"));
        free(error);
        error = NULL;
        assert_int_equal(config_load_file("/dev/null", &c, &error), -EINVAL);
        assert_non_null(strstr(error, "regular file"));
        free(error);
        error = NULL;
        assert_int_equal(config_load_file(FIXTURE_DIR, &c, &error), -EINVAL);
        free(error);
}

static void test_json_locate(void **state) {
        const char *t = "{\"a\": [1, {\"b\": \"x\\\"y\", \"c\": [true, null]}],\n \"d\": {}}";
        unsigned line, col;

        assert_int_equal(json_locate(t, strlen(t),
                                     (JsonPathElem[]) { JSON_KEY("a"), JSON_INDEX(1), JSON_KEY("c"), JSON_INDEX(1) }, 4,
                                     &line, &col),
                         0);
        assert_int_equal(line, 1);
        assert_int_equal(col, 37);
        assert_int_equal(json_locate(t, strlen(t), (JsonPathElem[]) { JSON_KEY("d") }, 1, &line, &col), 0);
        assert_int_equal(line, 2);
        assert_int_equal(col, 7);
        assert_int_equal(json_locate(t, strlen(t), (JsonPathElem[]) { JSON_KEY("z") }, 1, &line, &col), -ENOENT);
        assert_int_equal(json_locate(t, strlen(t), (JsonPathElem[]) { JSON_KEY("a"), JSON_INDEX(5) }, 2, &line, &col),
                         -ENOENT);
        assert_int_equal(json_locate(t, strlen(t), (JsonPathElem[]) { JSON_INDEX(0) }, 1, &line, &col), -ENOENT);
}

static void test_output_format(void **state) {
        Config *c = parse_ok("{ \"watch\": [ { \"triggers\": [\"cpu some 20% 2s\"] } ] }");

        assert_int_equal(c->output_format, CONFIG_OUTPUT_FORMAT_INCIDENT);
        config_free(c);
        c = parse_ok("{ \"output_format\": \"otlp\", \"watch\": [ { \"triggers\": [\"cpu some 20% 2s\"] } ] }");
        assert_int_equal(c->output_format, CONFIG_OUTPUT_FORMAT_OTLP);
        config_free(c);
        c = parse_ok("{ \"output_format\": \"incident\", \"watch\": [ { \"triggers\": [\"cpu some 20% 2s\"] } ] }");
        assert_int_equal(c->output_format, CONFIG_OUTPUT_FORMAT_INCIDENT);
        config_free(c);

        parse_fails("{ \"output_format\": \"OTLP\", \"watch\": [ { \"triggers\": [\"cpu some 20% 2s\"] } ] }",
                    "t.json:1:20: output_format must be \"incident\"");
        parse_fails("{ \"output_format\": 1, \"watch\": [ { \"triggers\": [\"cpu some 20% 2s\"] } ] }",
                    "t.json:1:20: output_format must be");
        parse_fails("{ \"watch\": [ { \"output_format\": \"otlp\", \"triggers\": [\"cpu some 20% 2s\"] } ] }",
                    "t.json:1:33: output_format is one setting for every output");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_issue_example),    cmocka_unit_test(test_defaults_and_overrides),
                cmocka_unit_test(test_default_config),   cmocka_unit_test(test_errors_with_positions),
                cmocka_unit_test(test_syntax_errors),    cmocka_unit_test(test_resolve_cgroups),
                cmocka_unit_test(test_load_file_errors), cmocka_unit_test(test_json_locate),
                cmocka_unit_test(test_output_format),    cmocka_unit_test(test_container_watches),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
