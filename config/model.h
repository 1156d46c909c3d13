/* SPDX-License-Identifier: MIT */
/* What a loaded config is: Config and WatchConfig, and their bounds. Types and constants only;
 * config.h loads them, keys.h says which key lands where and its default. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "containers/ctrselect.h"
#include "triggers/trigger.h"

#define CONFIG_TOP_MAX 1000
#define CONFIG_SAMPLE_MS_MAX 60000
#define CONFIG_STACKS_HZ_MAX 1000 /* PERFRING_FREQ_MAX_HZ */
#define CONFIG_COOLDOWN_MS_MAX 86400000
#define CONFIG_WATCHES_MAX 4096
#define CONFIG_TRIGGERS_PER_WATCH_MAX 16

typedef struct WatchTrigger {
        char *text;          /* as configured: "cpu some 20% 2s" */
        PsiTriggerSpec spec; /* parsed, before any 2 s rounding */
} WatchTrigger;

/* What a watch watches (config/target.h): the node (no cgroup, no selector), a cgroup path or glob,
 * or every container its selector's globs choose (never both a cgroup and a selector). */
typedef struct WatchConfig {
        char *cgroup;             /* relative to the cgroup2 mount, without leading '/'; NULL: none */
        char *cgroup_where;       /* "FILE:LINE:COLUMN" of the cgroup value, for errors found later */
        ContainerSelector select; /* the container, image and pod keys; none set: not by container */
        char *select_text;        /* the selector as ctrselect_format() writes it, NULL without one */
        WatchTrigger *triggers;
        size_t n_triggers;
        /* Resolved: the watch's own value or the global default. */
        char *output;
        unsigned top;
        uint64_t sample_ms;
        uint64_t cooldown_ms;
        unsigned stacks_hz; /* on-cpu stacks over each sample at this rate (docs/stacks.md); 0: none */
} WatchConfig;

/* What a line output (a file, a FIFO, stdout) gets: incident lines (schemas/incident.schema.json),
 * or each incident as an OTLP/JSON logs request (sinks/otlp.h). One setting for the whole agent;
 * the journal output takes incidents always (its entries are not lines). */
typedef enum ConfigOutputFormat {
        CONFIG_OUTPUT_FORMAT_INCIDENT,
        CONFIG_OUTPUT_FORMAT_OTLP,
} ConfigOutputFormat;

typedef struct Config {
        char *output;
        ConfigOutputFormat output_format;
        char *metrics_file;                /* Prometheus textfile of health counters, or NULL */
        unsigned max_incidents_per_minute; /* over all watches; 0: no limit */
        unsigned max_concurrent_samples;
        unsigned max_dir_watches; /* inotify watches discovery may hold on the cgroup tree's directories */
        unsigned oom_lookback_s;  /* an oom incident links the pressure incidents of this many seconds before it */
        /* Kill incidents: a watch's processes dying by SIGKILL/SIGTERM this many seconds after its
         * last pressure incident or trigger wakeup are victims; 0 turns kill incidents off. */
        unsigned kill_window_s;
        unsigned record_s; /* recording a watch after its incident: until quiet this long (0: never) */
        /* Syslog-style files where killers' lines are looked for (tailed only while a kill window
         * is open). has_kill_log_files false: none (a syslog file's lines are anyone's: docs/killers.md). */
        char **kill_log_files;
        size_t n_kill_log_files;
        bool has_kill_log_files;
        /* systemd-oomd's prekill hook: the socket served ("" none), how soon a Notify is answered,
         * and how long its kill is waited for before a line says it did not come. */
        char *prekill_socket;
        unsigned prekill_reply_ms;
        unsigned prekill_wait_s;
        unsigned top;
        uint64_t sample_ms;
        uint64_t cooldown_ms;
        unsigned stacks_hz;
        WatchConfig *watches;
        size_t n_watches;
} Config;

#define CONFIG_KILL_WINDOW_S_MAX 3600
#define CONFIG_RECORD_S_MAX 3600
#define CONFIG_KILL_LOG_FILES_MAX 8
#define CONFIG_PREKILL_REPLY_MS_MIN 10
#define CONFIG_PREKILL_REPLY_MS_MAX 900
#define CONFIG_PREKILL_WAIT_S_MAX 600
/* Where systemd-oomd (systemd 260 and later) looks for prekill hooks (src/oom/oomd-util.c). */
#define CONFIG_PREKILL_SYSTEMD_DIR "/run/systemd/oomd.prekill.hook"
#define CONFIG_SOCKET_PATH_MAX 108 /* sizeof sockaddr_un.sun_path, its NUL included */
#define CONFIG_MAX_INCIDENTS_PER_MINUTE_MAX 100000
#define CONFIG_MAX_CONCURRENT_SAMPLES_MAX 1024
#define CONFIG_MAX_DIR_WATCHES_MIN 16
#define CONFIG_MAX_DIR_WATCHES_MAX 65536
/* A user's directories (a delegated cgroup's) take at most 1/16 of max_dir_watches, all users' half. */
#define CONFIG_DIR_WATCHES_USER_SHARE 16
#define CONFIG_OOM_LOOKBACK_S_MAX 86400
