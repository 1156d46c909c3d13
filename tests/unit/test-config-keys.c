/* SPDX-License-Identifier: MIT */
/* The config keys of config/keys.h against everything else that names them: the parser takes each
 * key where its row says, within its bounds, lands it where its row says, and starts from its row's
 * default; every key is in schemas/config.schema.json with the same bounds and default, and the
 * schema has no key the table lacks; every key has its entry in man/psidiag.8's CONFIGURATION
 * section, which gives the row's bounds and default. A key added to one and not the others, or a
 * bound or default changed in one, fails here. PSIDIAG_SOURCE_ROOT in the environment points it at
 * another tree's schema and man page (tests/check_drift.py plants drifts in a copy). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "config/config.h"
#include "config/keys.h"
#include "tests/unit/test-util.h"

/* The file rel ("man/psidiag.8") of the tree checked, into buf. */
static const char *source_path(char *buf, size_t size, const char *rel) {
        const char *root = getenv("PSIDIAG_SOURCE_ROOT");

        snprintf(buf, size, "%s/%s", root ? root : SCHEMA_DIR "/..", rel);
        return buf;
}
#define WATCH_TRIGGERS "\"triggers\": [\"cpu some 500ms 2s\"]"

static json_t *schema_load(void) {
        char path[4096];
        json_error_t e;
        json_t *s = json_load_file(source_path(path, sizeof path, "schemas/config.schema.json"), 0, &e);

        if (!s)
                fail_msg("%s:%d: %s", path, e.line, e.text);
        return s;
}

static json_t *schema_properties(json_t *schema, unsigned where) {
        json_t *p = json_object_get(schema, "properties");

        if (where == CONFIG_KEY_WATCH)
                p = json_object_get(json_object_get(json_object_get(p, "watch"), "items"), "properties");
        assert_non_null(p);
        return p;
}

/* The property's definition, through one "$ref": "#/$defs/NAME". */
static json_t *schema_resolve(json_t *schema, json_t *prop) {
        const char *ref = json_string_value(json_object_get(prop, "$ref"));

        if (!ref)
                return prop;
        assert_true(strncmp(ref, "#/$defs/", 8) == 0);
        json_t *d = json_object_get(json_object_get(schema, "$defs"), ref + 8);
        assert_non_null(d);
        return d;
}

static void check_bounds(json_t *schema, json_t *prop, const ConfigKey *k) {
        json_t *d = schema_resolve(schema, prop);
        json_t *def = json_object_get(d, "default");

        switch (k->type) {
        case CONFIG_KEY_UINT:
                if (!json_is_integer(def) || (uint64_t) json_integer_value(def) != k->def)
                        fail_msg("schema: %s's default is %lld, the parser's %llu", k->name,
                                 json_is_integer(def) ? (long long) json_integer_value(def) : -1LL,
                                 (unsigned long long) k->def);
                if (!json_is_integer(json_object_get(d, "minimum")) || !json_is_integer(json_object_get(d, "maximum")))
                        fail_msg("schema: %s has no integer minimum and maximum", k->name);
                if ((uint64_t) json_integer_value(json_object_get(d, "minimum")) != k->min ||
                    (uint64_t) json_integer_value(json_object_get(d, "maximum")) != k->max)
                        fail_msg("schema: %s is [%lld, %lld], the parser's [%llu, %llu]", k->name,
                                 (long long) json_integer_value(json_object_get(d, "minimum")),
                                 (long long) json_integer_value(json_object_get(d, "maximum")),
                                 (unsigned long long) k->min, (unsigned long long) k->max);
                break;
        case CONFIG_KEY_OUTPUT:
        case CONFIG_KEY_OUTPUT_FORMAT:
        case CONFIG_KEY_SOCKET:
                if (!json_is_string(def) || strcmp(json_string_value(def), k->def_string) != 0)
                        fail_msg("schema: %s's default is %s, the parser's \"%s\"", k->name,
                                 json_is_string(def) ? json_string_value(def) : "(none)", k->def_string);
                break;
        case CONFIG_KEY_PATHS:
                /* kill_log_files: none unless configured (agent/killers.c), so the schema's is []. */
                if (!json_is_array(def) || json_array_size(def) != 0)
                        fail_msg("schema: %s's default has %zu paths, the agent reads none unless told", k->name,
                                 json_array_size(def));
                /* fall through */
        case CONFIG_KEY_TRIGGERS:
        case CONFIG_KEY_WATCHES:
                if ((uint64_t) json_integer_value(json_object_get(d, "maxItems")) != k->max)
                        fail_msg("schema: %s has maxItems %lld, the parser %llu", k->name,
                                 (long long) json_integer_value(json_object_get(d, "maxItems")),
                                 (unsigned long long) k->max);
                break;
        default:
                break;
        }
}

static void test_table_matches_schema(void **state) {
        json_t *schema = schema_load();
        unsigned where[] = { CONFIG_KEY_TOP, CONFIG_KEY_WATCH };

        for (size_t w = 0; w < ELEMENTSOF(where); w++) {
                json_t *props = schema_properties(schema, where[w]), *prop;
                const char *name;

                /* Every row is in the schema, where the row says, with its bounds. */
                for (size_t i = 0; i < config_keys_n; i++) {
                        const ConfigKey *k = &config_keys[i];
                        if (!(k->where & where[w]))
                                continue;
                        prop = json_object_get(props, k->name);
                        if (!prop)
                                fail_msg("%s is parsed %s but missing from schemas/config.schema.json", k->name,
                                         where[w] == CONFIG_KEY_WATCH ? "in a watch" : "at the top level");
                        check_bounds(schema, prop, k);
                }
                /* Every key of the schema is a row, allowed where the schema has it. */
                json_object_foreach(props, name, prop) {
                        const ConfigKey *k = config_keys_find(name);
                        if (!k || !(k->where & where[w]))
                                fail_msg("schemas/config.schema.json has %s %s, which the parser refuses there", name,
                                         where[w] == CONFIG_KEY_WATCH ? "in a watch" : "at the top level");
                }
        }
        json_decref(schema);
}

/* The CONFIGURATION section of the man page, as lines. */
static char *man_configuration(void) {
        char path[4096], line[1024];
        FILE *f = fopen(source_path(path, sizeof path, "man/psidiag.8"), "re");
        size_t len = 0;
        bool in = false;
        char *out = calloc(1, 1);

        assert_non_null(f);
        assert_non_null(out);
        while (fgets(line, sizeof line, f)) {
                if (strncmp(line, ".SH ", 4) == 0)
                        in = strncmp(line, ".SH CONFIGURATION", 17) == 0;
                if (!in)
                        continue;
                out = realloc(out, len + strlen(line) + 1);
                assert_non_null(out);
                memcpy(out + len, line, strlen(line) + 1);
                len += strlen(line);
        }
        fclose(f);
        assert_true(len > 0);
        return out;
}

/* ".B name" or ".BR name ..." on a line of its own. */
static bool man_names(const char *text, const char *name) {
        char b[128], br[128];

        snprintf(b, sizeof b, "\n.B %s\n", name);
        snprintf(br, sizeof br, "\n.BR %s ", name);
        return strstr(text, b) || strstr(text, br);
}

/* The key's entry: from its ".TP" line to the next ".TP", ".PP" or ".SH", with roff's "\-" as "-";
 * NULL when it has none. */
static char *man_entry(const char *text, const char *name) {
        char b[128], br[128];
        const char *start, *end;
        char *out;
        size_t n = 0;

        snprintf(b, sizeof b, "\n.TP\n.B %s\n", name);
        snprintf(br, sizeof br, "\n.TP\n.BR %s ", name);
        start = strstr(text, b);
        if (!start)
                start = strstr(text, br);
        if (!start)
                return NULL;
        start += 4; /* past "\n.TP" */
        end = start + strlen(start);
        for (const char *mark = start + 1; *mark; mark++)
                if (mark[-1] == '\n' &&
                    (strncmp(mark, ".TP", 3) == 0 || strncmp(mark, ".PP", 3) == 0 || strncmp(mark, ".SH", 3) == 0)) {
                        end = mark;
                        break;
                }
        out = malloc((size_t) (end - start) + 1);
        assert_non_null(out);
        for (const char *p = start; p < end; p++)
                if (!(p[0] == '\\' && p[1] == '-'))
                        out[n++] = *p;
        out[n] = '\0';
        return out;
}

/* Every "(default N" of the entry says def, and there is one. */
static void man_check_default_number(const ConfigKey *k, const char *entry) {
        unsigned found = 0;

        for (const char *p = strstr(entry, "(default "); p; p = strstr(p + 1, "(default ")) {
                char *end;
                unsigned long long v = strtoull(p + strlen("(default "), &end, 10);

                if (end == p + strlen("(default "))
                        continue;
                if (v != k->def)
                        fail_msg("man/psidiag.8: %s's default is %llu, the parser's %llu", k->name, v,
                                 (unsigned long long) k->def);
                found++;
        }
        if (found == 0)
                fail_msg("man/psidiag.8: %s's entry gives no \"(default %llu)\"", k->name, (unsigned long long) k->def);
}

static void man_check_entry(const ConfigKey *k, const char *entry) {
        char want[128];

        switch (k->type) {
        case CONFIG_KEY_UINT:
                snprintf(want, sizeof want, "%llu to %llu", (unsigned long long) k->min, (unsigned long long) k->max);
                if (!strstr(entry, want))
                        fail_msg("man/psidiag.8: %s's entry does not give the parser's bounds \"%s\"", k->name, want);
                man_check_default_number(k, entry);
                break;
        case CONFIG_KEY_PATHS:
        case CONFIG_KEY_TRIGGERS:
        case CONFIG_KEY_WATCHES: {
                char up_to[64];

                snprintf(want, sizeof want, "%llu to %llu ", (unsigned long long) k->min, (unsigned long long) k->max);
                snprintf(up_to, sizeof up_to, "Up to %llu ", (unsigned long long) k->max);
                if (!strstr(entry, want) && !(k->min == 0 && strstr(entry, up_to)))
                        fail_msg("man/psidiag.8: %s's entry does not give the parser's bounds \"%s\"", k->name, want);
                if (k->type == CONFIG_KEY_PATHS && !strstr(entry, "[] (the default)"))
                        fail_msg("man/psidiag.8: %s's entry does not give [] as the default", k->name);
                break;
        }
        case CONFIG_KEY_OUTPUT:
        case CONFIG_KEY_OUTPUT_FORMAT:
        case CONFIG_KEY_SOCKET: {
                /* "\"-\" for stdout (the default)": the quoted value, then "(the default)" before the next. */
                const char *p;
                size_t n;

                snprintf(want, sizeof want, "\"%s\"", k->def_string);
                p = strstr(entry, want);
                if (!p)
                        fail_msg("man/psidiag.8: %s's entry does not name its default %s", k->name, want);
                p += strlen(want);
                n = strcspn(p, "\"");
                if (!memmem(p, n, "(the default)", strlen("(the default)")))
                        fail_msg("man/psidiag.8: %s's entry does not say %s is the default", k->name, want);
                break;
        }
        default:
                break;
        }
}

static void test_table_matches_man_page(void **state) {
        _cleanup_free_ char *man = man_configuration();

        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];
                if (k->type == CONFIG_KEY_SCHEMA)
                        continue; /* for editors, not for the operator */
                if (!man_names(man, k->name))
                        fail_msg("man/psidiag.8's CONFIGURATION section does not name the config key %s", k->name);
                _cleanup_free_ char *entry = man_entry(man, k->name);
                if (!entry)
                        fail_msg("man/psidiag.8's CONFIGURATION section has no .TP entry for the config key %s",
                                 k->name);
                man_check_entry(k, entry);
        }
        assert_false(man_names(man, "no_such_key"));
}

static Config *parse(const char *text, char **ret_error) {
        Config *c = NULL;

        *ret_error = NULL;
        (void) config_parse(text, strlen(text), "t.json", &c, ret_error);
        return c;
}

static uint64_t landed(const ConfigKey *k, const void *base, size_t offset) {
        const uint8_t *p = (const uint8_t *) base + offset;
        return k->size == sizeof(unsigned) ? *(const unsigned *) p : *(const uint64_t *) p;
}

/* Without a key, the parser takes its row's default, at the top level and in a watch. */
static void test_parser_starts_from_defaults(void **state) {
        char *error;
        Config *c = parse("{\"watch\": [{" WATCH_TRIGGERS "}]}", &error);

        if (!c)
                fail_msg("%s", error);
        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];

                if (k->type == CONFIG_KEY_UINT && k->config_offset != CONFIG_KEY_NOWHERE)
                        assert_int_equal(landed(k, c, k->config_offset), k->def);
                if (k->type == CONFIG_KEY_UINT && k->watch_offset != CONFIG_KEY_NOWHERE)
                        assert_int_equal(landed(k, &c->watches[0], k->watch_offset), k->def);
                if (k->type == CONFIG_KEY_OUTPUT) {
                        assert_string_equal(c->output, k->def_string);
                        assert_string_equal(c->watches[0].output, k->def_string);
                }
        }
        assert_int_equal(c->output_format, CONFIG_OUTPUT_FORMAT_INCIDENT);
        assert_string_equal(config_keys_find("output_format")->def_string, "incident");
        assert_false(c->has_kill_log_files);
        config_free(c);
}

/* Every integer key at its bounds, top level and in a watch where allowed: taken at min and max,
 * landing where the row says; refused one past max with the bounds in the error. */
static void test_parser_takes_every_integer_key(void **state) {
        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];
                uint64_t values[] = { k->min, k->max };
                char text[512], *error;
                Config *c;

                if (k->type != CONFIG_KEY_UINT)
                        continue;
                for (size_t j = 0; j < ELEMENTSOF(values); j++) {
                        if (k->where & CONFIG_KEY_TOP) {
                                snprintf(text, sizeof text, "{\"%s\": %llu, \"watch\": [{" WATCH_TRIGGERS "}]}",
                                         k->name, (unsigned long long) values[j]);
                                c = parse(text, &error);
                                if (!c)
                                        fail_msg("%s: %s", text, error);
                                assert_int_equal(landed(k, c, k->config_offset), values[j]);
                                config_free(c);
                        }
                        if (k->where & CONFIG_KEY_WATCH) {
                                snprintf(text, sizeof text, "{\"watch\": [{\"%s\": %llu, " WATCH_TRIGGERS "}]}",
                                         k->name, (unsigned long long) values[j]);
                                c = parse(text, &error);
                                if (!c)
                                        fail_msg("%s: %s", text, error);
                                assert_int_equal(landed(k, &c->watches[0], k->watch_offset), values[j]);
                                config_free(c);
                        }
                }
                snprintf(text, sizeof text, "{\"%s\": %llu, \"watch\": [{" WATCH_TRIGGERS "}]}", k->name,
                         (unsigned long long) k->max + 1);
                c = parse(text, &error);
                assert_null(c);
                char want[256];
                snprintf(want, sizeof want, "%s must be between %llu and %llu", k->name, (unsigned long long) k->min,
                         (unsigned long long) k->max);
                if (!error || !strstr(error, want))
                        fail_msg("%s: error \"%s\" lacks \"%s\"", text, error, want);
                free(error);
        }
}

/* Every other key is taken by the parser with a good value. */
static void test_parser_takes_every_other_key(void **state) {
        static const struct {
                const char *name;
                const char *text;
        } good[] = {
                { "output", "{\"output\": \"/tmp/x.ndjson\", \"watch\": [{\"output\": \"-\", " WATCH_TRIGGERS "}]}" },
                { "output_format", "{\"output_format\": \"otlp\", \"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "kill_log_files", "{\"kill_log_files\": [\"/var/log/syslog\"], \"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "metrics_file", "{\"metrics_file\": \"/tmp/psidiag.prom\", \"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "prekill_socket", "{\"prekill_socket\": \"/tmp/hook/psidiag\", \"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "cgroup", "{\"watch\": [{\"cgroup\": \"a/b\", " WATCH_TRIGGERS "}]}" },
                { "container", "{\"watch\": [{\"container\": \"web*\", " WATCH_TRIGGERS "}]}" },
                { "image", "{\"watch\": [{\"image\": \"nginx:*\", " WATCH_TRIGGERS "}]}" },
                { "pod", "{\"watch\": [{\"pod\": \"payments/*\", " WATCH_TRIGGERS "}]}" },
                { "triggers", "{\"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "watch", "{\"watch\": [{" WATCH_TRIGGERS "}]}" },
                { "$schema", "{\"$schema\": \"x\", \"watch\": [{" WATCH_TRIGGERS "}]}" },
        };

        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];
                const char *text = NULL;
                char *error;
                Config *c;

                if (k->type == CONFIG_KEY_UINT)
                        continue;
                for (size_t j = 0; j < ELEMENTSOF(good); j++)
                        if (strcmp(good[j].name, k->name) == 0)
                                text = good[j].text;
                if (!text)
                        fail_msg("no good value of the config key %s in this test: add one", k->name);
                c = parse(text, &error);
                if (!c)
                        fail_msg("%s: %s", text, error);
                config_free(c);
        }
}

/* The "unknown key" errors list the rows, in table order, where they may appear. */
static void test_unknown_key_errors(void **state) {
        char *error;

        assert_null(parse("{\"wacth\": []}", &error));
        assert_string_equal(
                error, "t.json:1:11: unknown key \"wacth\" (expected output, output_format, top, sample_ms, "
                       "cooldown_ms, stacks_hz, max_incidents_per_minute, max_concurrent_samples, max_dir_watches, "
                       "oom_lookback_s, "
                       "kill_window_s, record_s, kill_log_files, prekill_socket, prekill_reply_ms, prekill_wait_s, "
                       "metrics_file, watch)");
        free(error);
        assert_null(parse("{\"watch\": [{\"colour\": 1}]}", &error));
        assert_string_equal(error,
                            "t.json:1:23: unknown key \"colour\" in watch (expected cgroup, container, image, pod, "
                            "triggers, output, top, sample_ms, cooldown_ms, stacks_hz)");
        free(error);
        assert_null(parse("{\"watch\": [{\"output_format\": \"otlp\"}]}", &error));
        assert_string_equal(error, "t.json:1:30: output_format is one setting for every output: set it at the top "
                                   "level, not in a watch");
        free(error);
        assert_null(parse("{\"cgroup\": \"a\", \"watch\": []}", &error));
        assert_non_null(strstr(error, "unknown key \"cgroup\" (expected output,"));
        free(error);
}

/* prekill_socket: "" or an absolute path a sockaddr_un holds; anything else is refused by name. */
static void test_prekill_socket(void **state) {
        static const char *const bad[] = { "7", "\"relative/x\"",
                                           "\"/0123456789012345678901234567890123456789012345678901234567890123456789"
                                           "01234567890123456789012345678901234567\"" };
        char text[512], *error;
        Config *c;

        c = parse("{\"prekill_socket\": \"\", \"watch\": [{" WATCH_TRIGGERS "}]}", &error);
        assert_non_null(c);
        assert_string_equal(c->prekill_socket, "");
        config_free(c);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                snprintf(text, sizeof text, "{\"prekill_socket\": %s, \"watch\": [{" WATCH_TRIGGERS "}]}", bad[i]);
                assert_null(parse(text, &error));
                if (!error ||
                    !strstr(error, "prekill_socket must be \"\" (none) or an absolute path of at most 107 bytes"))
                        fail_msg("%s: error \"%s\"", bad[i], error);
                free(error);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_matches_schema),
                cmocka_unit_test(test_table_matches_man_page),
                cmocka_unit_test(test_parser_starts_from_defaults),
                cmocka_unit_test(test_parser_takes_every_integer_key),
                cmocka_unit_test(test_parser_takes_every_other_key),
                cmocka_unit_test(test_unknown_key_errors),
                cmocka_unit_test(test_prekill_socket),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
