/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "config/config.h"
#include "config/jsonpos.h"
#include "config/keys.h"
#include "config/target.h"
#include "probes/sysroot.h"
#include "sinks/registry.h"

const char config_default_json[] =
        "{\n"
        "  \"watch\": [\n"
        "    { \"triggers\": [\"cpu some 500ms 2s\", \"memory some 150ms 2s\", \"io some 400ms 2s\"] }\n"
        "  ]\n"
        "}\n";

typedef struct ParseState {
        const char *text;
        size_t len;
        const char *name;
        char *error;
} ParseState;

/* Formats "name:line:col: message" for the value at path (or "name: message" if not found). */
_printf_(4, 5) static int fail_at(ParseState *st, const JsonPathElem *path, size_t n, const char *fmt, ...) {
        char msg[512];
        unsigned line, col;
        va_list ap;
        int k;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);

        free(st->error);
        if (json_locate(st->text, st->len, path, n, &line, &col) >= 0)
                k = asprintf(&st->error, "%s:%u:%u: %s", st->name, line, col, msg);
        else
                k = asprintf(&st->error, "%s: %s", st->name, msg);
        if (k < 0) {
                st->error = NULL;
                return -ENOMEM;
        }
        return -EINVAL;
}

static int get_uint(ParseState *st, json_t *v, const JsonPathElem *path, size_t n, const char *what, uint64_t max,
                    uint64_t min, uint64_t *ret) {
        json_int_t i;

        if (!json_is_integer(v))
                return fail_at(st, path, n, "%s must be an integer", what);
        i = json_integer_value(v);
        if (i < 0 || (uint64_t) i < min || (uint64_t) i > max)
                return fail_at(st, path, n, "%s must be between %llu and %llu", what, (unsigned long long) min,
                               (unsigned long long) max);
        *ret = (uint64_t) i;
        return 0;
}

static int get_output(ParseState *st, json_t *v, const JsonPathElem *path, size_t n, char **ret) {
        const char *s;
        char *copy, why[160];

        if (!json_is_string(v))
                return fail_at(st, path, n, "output must be a string (a file path, or \"-\" for stdout)");
        s = json_string_value(v);
        if (json_string_length(v) != strlen(s) || s[0] == '\0')
                return fail_at(st, path, n, "output must be a non-empty path without NUL bytes");
        /* Whether libsystemd can be loaded is checked by who runs the config
         * (runtime_check_outputs()): parsing loads nothing. */
        if (sink_path_check(s, why, sizeof why) < 0)
                return fail_at(st, path, n, "output %s", why);
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*ret);
        *ret = copy;
        return 0;
}

/* The row of key where (CONFIG_KEY_TOP or CONFIG_KEY_WATCH) can have it; an error naming the keys
 * it can have, or why a top-level key is refused in a watch, when there is none. */
static int find_key(ParseState *st, const char *key, unsigned where, const JsonPathElem *path, size_t n,
                    const ConfigKey **ret) {
        const ConfigKey *k = config_keys_find(key);
        char expected[512];

        if (k && (k->where & where)) {
                *ret = k;
                return 0;
        }
        if (k && where == CONFIG_KEY_WATCH && k->watch_error)
                return fail_at(st, path, n, "%s", k->watch_error);
        return fail_at(st, path, n, "unknown key \"%s\"%s (expected %s)", key,
                       where == CONFIG_KEY_WATCH ? " in watch" : "",
                       config_keys_expected(where, expected, sizeof expected));
}

static void store_uint(const ConfigKey *k, void *base, size_t offset, uint64_t u) {
        uint8_t *p = (uint8_t *) base + offset;

        if (k->size == sizeof(unsigned))
                *(unsigned *) p = (unsigned) u;
        else {
                assert(k->size == sizeof(uint64_t));
                *(uint64_t *) p = u;
        }
}

static int output_format_from_string(const char *s, ConfigOutputFormat *ret) {
        if (s && strcmp(s, "incident") == 0)
                *ret = CONFIG_OUTPUT_FORMAT_INCIDENT;
        else if (s && strcmp(s, "otlp") == 0)
                *ret = CONFIG_OUTPUT_FORMAT_OTLP;
        else
                return -EINVAL;
        return 0;
}

/* Every top-level value its row's default: what the config then sets replaces it. */
static int set_defaults(Config *c) {
        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];
                uint8_t *p;

                if (k->config_offset == CONFIG_KEY_NOWHERE)
                        continue;
                p = (uint8_t *) c + k->config_offset;
                if (k->type == CONFIG_KEY_UINT)
                        store_uint(k, c, k->config_offset, k->def);
                else if ((k->type == CONFIG_KEY_OUTPUT || k->type == CONFIG_KEY_SOCKET) && k->def_string) {
                        *(char **) p = strdup(k->def_string);
                        if (!*(char **) p)
                                return -ENOMEM;
                } else if (k->type == CONFIG_KEY_OUTPUT_FORMAT) {
                        int r = output_format_from_string(k->def_string, (ConfigOutputFormat *) p);
                        assert(r == 0); /* a row's default the parser refuses: a bug */
                }
        }
        return 0;
}

/* A watch's integer keys start from the top level's values, which the watch may override. */
static void inherit_top_level(const Config *c, WatchConfig *w) {
        for (size_t i = 0; i < config_keys_n; i++) {
                const ConfigKey *k = &config_keys[i];

                if (k->type == CONFIG_KEY_UINT && k->config_offset != CONFIG_KEY_NOWHERE &&
                    k->watch_offset != CONFIG_KEY_NOWHERE)
                        memcpy((uint8_t *) w + k->watch_offset, (const uint8_t *) c + k->config_offset, k->size);
        }
}

/* A value that lands as it is at offset of base: an integer in the row's bounds, or an output. */
static int parse_plain_value(ParseState *st, const ConfigKey *k, json_t *v, const JsonPathElem *path, size_t n,
                             void *base, size_t offset) {
        uint8_t *p = (uint8_t *) base + offset;
        uint64_t u = 0;
        int r;

        assert(offset != CONFIG_KEY_NOWHERE);
        switch (k->type) {
        case CONFIG_KEY_UINT:
                r = get_uint(st, v, path, n, k->name, k->max, k->min, &u);
                if (r < 0)
                        return r;
                store_uint(k, base, offset, u);
                return 0;
        case CONFIG_KEY_OUTPUT:
                return get_output(st, v, path, n, (char **) p);
        case CONFIG_KEY_SOCKET: {
                const char *s = json_string_value(v);
                if (!s || json_string_length(v) != strlen(s) || strlen(s) >= CONFIG_SOCKET_PATH_MAX ||
                    (*s && *s != '/'))
                        return fail_at(st, path, n, "%s must be \"\" (none) or an absolute path of at most %d bytes",
                                       k->name, CONFIG_SOCKET_PATH_MAX - 1);
                free(*(char **) p);
                *(char **) p = strdup(s);
                return *(char **) p ? 0 : -ENOMEM;
        }
        default:
                assert(!"not a plain value");
                return -EINVAL;
        }
}

/* The cgroup, container, image or pod of a watch (config/target.h). */
static int parse_target(ParseState *st, WatchConfig *wc, const char *key, json_t *v, const JsonPathElem *path,
                        size_t n) {
        _cleanup_free_ char *where = NULL;
        const char *s = json_string_value(v);
        unsigned line, col;
        char why[512];
        int r;

        if (!s || json_string_length(v) != strlen(s))
                return fail_at(st, path, n, "%s must be a string without NUL bytes", key);
        if (json_locate(st->text, st->len, path, n, &line, &col) < 0
                    ? asprintf(&where, "%s", st->name) < 0
                    : asprintf(&where, "%s:%u:%u", st->name, line, col) < 0) {
                where = NULL;
                return -ENOMEM;
        }
        r = config_target_set(wc, key, s, where, why, sizeof why);
        return r == -EINVAL ? fail_at(st, path, n, "%s", why) : r;
}

static void watch_config_clear(WatchConfig *wc) {
        for (size_t i = 0; i < wc->n_triggers; i++)
                free(wc->triggers[i].text);
        free(wc->triggers);
        config_target_clear(wc);
        free(wc->output);
}

/* The watch's keys but its triggers, which *ret_triggers (and their key) get. path[2] is each key. */
static int parse_watch_keys(ParseState *st, json_t *w, JsonPathElem path[static 3], WatchConfig *wc,
                            json_t **ret_triggers, const ConfigKey **ret_triggers_key) {
        const char *key;
        json_t *v;
        int r;

        json_object_foreach(w, key, v) {
                const ConfigKey *k;

                path[2] = JSON_KEY(key);
                r = find_key(st, key, CONFIG_KEY_WATCH, path, 3, &k);
                if (r < 0)
                        return r;
                if (k->type == CONFIG_KEY_CGROUP || k->type == CONFIG_KEY_CONTAINER)
                        r = parse_target(st, wc, key, v, path, 3);
                else if (k->type == CONFIG_KEY_TRIGGERS) {
                        *ret_triggers = v;
                        *ret_triggers_key = k;
                        r = 0;
                } else
                        r = parse_plain_value(st, k, v, path, 3, wc, k->watch_offset);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The watch's "triggers" (at path[0..1]), each parsed into wc->triggers. */
static int parse_triggers(ParseState *st, json_t *triggers, const ConfigKey *k, JsonPathElem path[static 4],
                          WatchConfig *wc) {
        path[2] = JSON_KEY("triggers");
        if (!triggers)
                return fail_at(st, path, 2, "watch has no \"triggers\"");
        if (!json_is_array(triggers) || json_array_size(triggers) == 0)
                return fail_at(st, path, 3, "triggers must be a non-empty array of trigger strings");
        if (json_array_size(triggers) > k->max)
                return fail_at(st, path, 3, "at most %llu triggers per watch", (unsigned long long) k->max);
        wc->triggers = calloc(json_array_size(triggers), sizeof *wc->triggers);
        if (!wc->triggers)
                return -ENOMEM;
        for (size_t i = 0; i < json_array_size(triggers); i++) {
                json_t *t = json_array_get(triggers, i);
                WatchTrigger *wt = &wc->triggers[i];
                const char *reason;

                path[3] = JSON_INDEX(i);
                if (!json_is_string(t))
                        return fail_at(st, path, 4, "a trigger must be a string like \"cpu some 150ms 2s\"");
                if (psi_trigger_spec_parse(json_string_value(t), &wt->spec, &reason) < 0)
                        return fail_at(st, path, 4, "bad trigger \"%s\": %s", json_string_value(t), reason);
                wt->text = strdup(json_string_value(t));
                wc->n_triggers++;
                if (!wt->text)
                        return -ENOMEM;
        }
        return 0;
}

static int parse_watch(ParseState *st, Config *c, json_t *w, size_t wi, WatchConfig *ret) {
        JsonPathElem path[4] = { JSON_KEY("watch"), JSON_INDEX(wi) };
        WatchConfig wc = {};
        json_t *triggers = NULL;
        const ConfigKey *triggers_key = NULL;
        int r;

        if (!json_is_object(w))
                return fail_at(st, path, 2, "each watch must be an object");
        inherit_top_level(c, &wc);
        r = parse_watch_keys(st, w, path, &wc, &triggers, &triggers_key);
        if (r >= 0)
                r = parse_triggers(st, triggers, triggers_key, path, &wc);
        if (r >= 0 && !wc.output && !(wc.output = strdup(c->output)))
                r = -ENOMEM;
        if (r < 0) {
                watch_config_clear(&wc);
                return r;
        }
        *ret = wc;
        return 0;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_watches; i++)
                watch_config_clear(&c->watches[i]);
        free(c->watches);
        free(c->output);
        free(c->metrics_file);
        free(c->prekill_socket);
        for (size_t i = 0; i < c->n_kill_log_files; i++)
                free(c->kill_log_files[i]);
        free(c->kill_log_files);
        free(c);
        return NULL;
}

/* kill_log_files (key k, at path): replaces any list before it. */
static int parse_kill_log_files(ParseState *st, Config *c, const ConfigKey *k, json_t *v, const JsonPathElem *path) {
        size_t i;
        json_t *f;

        if (!json_is_array(v) || json_array_size(v) > k->max)
                return fail_at(st, path, 1, "%s must be a list of at most %llu absolute paths", k->name,
                               (unsigned long long) k->max);
        for (i = 0; i < c->n_kill_log_files; i++)
                free(c->kill_log_files[i]);
        free(c->kill_log_files);
        c->n_kill_log_files = 0;
        c->kill_log_files = calloc(MAX(json_array_size(v), (size_t) 1), sizeof *c->kill_log_files);
        if (!c->kill_log_files)
                return -ENOMEM;
        c->has_kill_log_files = true;
        json_array_foreach(v, i, f) {
                const char *s = json_string_value(f);
                if (!s || s[0] != '/' || json_string_length(f) != strlen(s))
                        return fail_at(st, path, 1, "%s must be a list of absolute paths", k->name);
                c->kill_log_files[c->n_kill_log_files] = strdup(s);
                if (!c->kill_log_files[c->n_kill_log_files])
                        return -ENOMEM;
                c->n_kill_log_files++;
        }
        return 0;
}

static int parse_metrics_file(ParseState *st, Config *c, json_t *v, const JsonPathElem *path) {
        const char *m = json_string_value(v);
        size_t ml = m ? strlen(m) : 0;

        if (!m || json_string_length(v) != ml || m[0] != '/' || ml < 7 || strcmp(m + ml - 5, ".prom") != 0 ||
            m[ml - 6] == '/')
                return fail_at(st, path, 1,
                               "metrics_file must be an absolute path ending in \".prom\" "
                               "(what node_exporter's textfile collector reads)");
        free(c->metrics_file);
        c->metrics_file = strdup(m);
        return c->metrics_file ? 0 : -ENOMEM;
}

/* One top-level key; "watch" is kept in *watch (with its key) for after the others, which the
 * watches inherit. */
static int parse_top_key(ParseState *st, Config *c, const char *key, json_t *v, json_t **watch,
                         const ConfigKey **watch_key) {
        JsonPathElem path[1] = { JSON_KEY(key) };
        const ConfigKey *k;
        int r = find_key(st, key, CONFIG_KEY_TOP, path, 1, &k);

        if (r < 0)
                return r;
        switch (k->type) {
        case CONFIG_KEY_WATCHES:
                *watch = v;
                *watch_key = k;
                return 0;
        case CONFIG_KEY_SCHEMA:
                return 0;
        case CONFIG_KEY_PATHS:
                return parse_kill_log_files(st, c, k, v, path);
        case CONFIG_KEY_OUTPUT_FORMAT:
                if (output_format_from_string(json_string_value(v), &c->output_format) < 0)
                        return fail_at(st, path, 1,
                                       "output_format must be \"incident\" (psidiag's incident lines) or "
                                       "\"otlp\" (OTLP/JSON log requests)");
                return 0;
        case CONFIG_KEY_METRICS_FILE:
                return parse_metrics_file(st, c, v, path);
        default:
                return parse_plain_value(st, k, v, path, 1, c, k->config_offset);
        }
}

static int parse_watches(ParseState *st, Config *c, json_t *watch, const ConfigKey *watch_key) {
        JsonPathElem path[1] = { JSON_KEY("watch") };
        int r;

        if (!watch)
                return fail_at(st, NULL, 0, "the config has no \"watch\" list");
        if (!json_is_array(watch) || json_array_size(watch) == 0)
                return fail_at(st, path, 1, "watch must be a non-empty array");
        if (json_array_size(watch) > watch_key->max)
                return fail_at(st, path, 1, "at most %llu watches", (unsigned long long) watch_key->max);
        c->watches = calloc(json_array_size(watch), sizeof *c->watches);
        if (!c->watches)
                return -ENOMEM;
        for (size_t i = 0; i < json_array_size(watch); i++) {
                r = parse_watch(st, c, json_array_get(watch, i), i, &c->watches[i]);
                if (r < 0)
                        return r;
                c->n_watches++;
        }
        return 0;
}

/* The config c from root: its keys, then its watches. */
static int parse_root(ParseState *st, Config *c, json_t *root) {
        json_t *watch = NULL, *v;
        const ConfigKey *watch_key = NULL;
        const char *key;
        int r = set_defaults(c);

        if (r < 0)
                return r;
        if (!json_is_object(root))
                return fail_at(st, NULL, 0, "the config must be a JSON object");
        json_object_foreach(root, key, v) {
                r = parse_top_key(st, c, key, v, &watch, &watch_key);
                if (r < 0)
                        return r;
        }
        return parse_watches(st, c, watch, watch_key);
}

int config_parse(const char *text, size_t len, const char *name, Config **ret, char **ret_error) {
        ParseState st = { .text = text, .len = len, .name = name };
        json_error_t jerr;
        json_t *root;
        Config *c;
        int r;

        /* Duplicate keys are an error: with two "top" values, which one did the operator mean? */
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                if (asprintf(ret_error, "%s:%d:%d: %s", name, jerr.line, jerr.column, jerr.text) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        c = calloc(1, sizeof *c);
        r = c ? parse_root(&st, c, root) : -ENOMEM;
        json_decref(root);
        if (r < 0) {
                config_free(c);
                if (r == -EINVAL && st.error)
                        *ret_error = st.error;
                else
                        free(st.error);
                return r;
        }
        *ret = c;
        return 0;
}

int config_load_file(const char *path, Config **ret, char **ret_error) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        const size_t max = 4 * 1024 * 1024;
        size_t n = 0;
        struct stat stbuf;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &stbuf) < 0) {
                int r = negative_errno();
                if (asprintf(ret_error, "%s: cannot read config: %s", path, strerror(-r)) < 0)
                        return -ENOMEM;
                return r;
        }
        if (!S_ISREG(stbuf.st_mode)) {
                if (asprintf(ret_error, "%s: the config must be a regular file", path) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        buf = malloc(max + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + n, max + 1 - n);

                if (k < 0) {
                        int r = negative_errno();
                        if (errno == EINTR)
                                continue;
                        if (asprintf(ret_error, "%s: cannot read config: %s", path, strerror(-r)) < 0)
                                return -ENOMEM;
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max) {
                        if (asprintf(ret_error, "%s: the config is larger than 4 MiB", path) < 0)
                                return -ENOMEM;
                        return -EINVAL;
                }
        }
        if (n == 0) {
                if (asprintf(ret_error, "%s: the config file is empty", path) < 0)
                        return -ENOMEM;
                return -EINVAL;
        }
        return config_parse(buf, n, path, ret, ret_error);
}

int config_load_default(Config **ret) {
        _cleanup_free_ char *error = NULL;

        return config_parse(config_default_json, strlen(config_default_json), "(default config)", ret, &error);
}

int config_override_output(Config *c, const char *output) {
        char *g = strdup(output);

        if (!g)
                return -ENOMEM;
        free(c->output);
        c->output = g;
        for (size_t i = 0; i < c->n_watches; i++) {
                char *w = strdup(output);

                if (!w)
                        return -ENOMEM;
                free(c->watches[i].output);
                c->watches[i].output = w;
        }
        return 0;
}

int config_resolve_cgroups(const Config *c, const Sysroot *s, char **ret_error) {
        for (size_t i = 0; i < c->n_watches; i++) {
                const WatchConfig *w = &c->watches[i];
                const char *mount = s->cgroup2_path;
                int fd = -EBADF, r;

                if (!w->cgroup)
                        continue;
                r = sysroot_open_cgroup(s, w->cgroup, &fd);
                safe_close(fd);
                if (r == -ELOOP || r == -EXDEV)
                        return asprintf(ret_error,
                                        "%s: cgroup \"%s\" leads through a %s; psidiag opens cgroups only "
                                        "beneath the cgroup2 mount and never follows symlinks",
                                        w->cgroup_where, w->cgroup, r == -ELOOP ? "symlink" : "mount point") < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                /* "/sys/fs/cgroup/x" written for "x": the path is relative to the mount. */
                size_t ml = mount ? strlen(mount) : 0;
                if (r == -ENOENT && ml > 1 && strncmp(w->cgroup, mount + 1, ml - 1) == 0 &&
                    (w->cgroup[ml - 1] == '/' || w->cgroup[ml - 1] == '\0'))
                        return asprintf(ret_error,
                                        "%s: cgroup paths are relative to the cgroup2 mount (%s): write \"%s\", "
                                        "not \"/%s\"",
                                        w->cgroup_where, mount, w->cgroup[ml - 1] ? w->cgroup + ml : "/", w->cgroup) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
        }
        return 0;
}
