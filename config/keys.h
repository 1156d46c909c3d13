/* SPDX-License-Identifier: MIT */
/* The config keys, one row each: name, type, where it may appear (top level, a watch), bounds,
 * default, and where its value lands in Config or WatchConfig. The parser (config.c) starts from the
 * rows' defaults and reads values by their row, its "unknown key" errors list the rows, and
 * test-config-keys ties the rows (bounds and defaults included) to schemas/config.schema.json and
 * man/psidiag.8. Data and lookups only: no I/O, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/model.h"

typedef enum ConfigKeyType {
        CONFIG_KEY_UINT,          /* an integer in [min, max]: an unsigned or a uint64_t (size) */
        CONFIG_KEY_OUTPUT,        /* an output ("-", "journal", an absolute path): a char * */
        CONFIG_KEY_OUTPUT_FORMAT, /* "incident" or "otlp": a ConfigOutputFormat */
        CONFIG_KEY_METRICS_FILE,  /* an absolute path ending in ".prom": a char * */
        CONFIG_KEY_SOCKET,        /* "" (none) or an absolute path a unix socket address holds: a char * */
        CONFIG_KEY_PATHS,         /* a list of at most max absolute paths (kill_log_files) */
        CONFIG_KEY_CGROUP,        /* a cgroup path or pattern (a watch's) */
        CONFIG_KEY_CONTAINER,     /* a glob on a container's names (a watch's container, image, pod) */
        CONFIG_KEY_TRIGGERS,      /* a list of at most max trigger strings (a watch's) */
        CONFIG_KEY_WATCHES,       /* the list of at most max watches */
        CONFIG_KEY_SCHEMA,        /* "$schema": accepted, ignored */
} ConfigKeyType;

/* Where a key may appear (a bit mask). */
#define CONFIG_KEY_TOP 1u
#define CONFIG_KEY_WATCH 2u

#define CONFIG_KEY_NOWHERE SIZE_MAX

typedef struct ConfigKey {
        const char *name;
        ConfigKeyType type;
        unsigned where;          /* CONFIG_KEY_TOP, CONFIG_KEY_WATCH or both */
        uint64_t min, max;       /* UINT: the bounds; PATHS, TRIGGERS, WATCHES: max the list's length */
        uint64_t def;            /* UINT: the value without the key (a watch's: the top level's) */
        const char *def_string;  /* OUTPUT, OUTPUT_FORMAT, SOCKET: the value without the key, as written */
        size_t config_offset;    /* where it lands in Config, CONFIG_KEY_NOWHERE for none */
        size_t watch_offset;     /* where it lands in WatchConfig, CONFIG_KEY_NOWHERE for none */
        size_t size;             /* UINT: sizeof the field (an unsigned or a uint64_t) */
        bool listed;             /* named in the "unknown key" errors ("$schema" is not) */
        const char *watch_error; /* a top-level key written in a watch: why it is refused there */
} ConfigKey;

/* Every key, in the order the "unknown key" errors list them. */
extern const ConfigKey config_keys[];
extern const size_t config_keys_n;

/* The row of name, NULL when there is none. */
const ConfigKey *config_keys_find(const char *name);

/* The default of the UINT key name (asserts that there is such a row). */
uint64_t config_keys_default(const char *name);

/* The listed keys that may appear at where (CONFIG_KEY_TOP or CONFIG_KEY_WATCH), ", "-separated in
 * table order, into buf (cut to size). Returns buf. */
char *config_keys_expected(unsigned where, char *buf, size_t size);
