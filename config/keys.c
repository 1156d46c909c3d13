/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "config/keys.h"

#define NOWHERE CONFIG_KEY_NOWHERE
#define IN_CONFIG(f) offsetof(Config, f)
#define IN_WATCH(f) offsetof(WatchConfig, f)

/* The watch-only keys first: a watch's "unknown key" error lists them before the shared ones. */
const ConfigKey config_keys[] = {
        { "cgroup", CONFIG_KEY_CGROUP, CONFIG_KEY_WATCH, 0, 0, 0, NULL, NOWHERE, IN_WATCH(cgroup), 0, true, NULL },
        /* Containers by their names (config/target.h stores them in WatchConfig.select). */
        { "container", CONFIG_KEY_CONTAINER, CONFIG_KEY_WATCH, 0, 0, 0, NULL, NOWHERE, NOWHERE, 0, true, NULL },
        { "image", CONFIG_KEY_CONTAINER, CONFIG_KEY_WATCH, 0, 0, 0, NULL, NOWHERE, NOWHERE, 0, true, NULL },
        { "pod", CONFIG_KEY_CONTAINER, CONFIG_KEY_WATCH, 0, 0, 0, NULL, NOWHERE, NOWHERE, 0, true, NULL },
        { "triggers", CONFIG_KEY_TRIGGERS, CONFIG_KEY_WATCH, 1, CONFIG_TRIGGERS_PER_WATCH_MAX, 0, NULL, NOWHERE,
          IN_WATCH(triggers), 0, true, NULL },
        { "output", CONFIG_KEY_OUTPUT, CONFIG_KEY_TOP | CONFIG_KEY_WATCH, 0, 0, 0, "-", IN_CONFIG(output),
          IN_WATCH(output), 0, true, NULL },
        { "output_format", CONFIG_KEY_OUTPUT_FORMAT, CONFIG_KEY_TOP, 0, 0, 0, "incident", IN_CONFIG(output_format),
          NOWHERE, 0, true, "output_format is one setting for every output: set it at the top level, not in a watch" },
        { "top", CONFIG_KEY_UINT, CONFIG_KEY_TOP | CONFIG_KEY_WATCH, 1, CONFIG_TOP_MAX, 10, NULL, IN_CONFIG(top),
          IN_WATCH(top), sizeof(unsigned), true, NULL },
        { "sample_ms", CONFIG_KEY_UINT, CONFIG_KEY_TOP | CONFIG_KEY_WATCH, 0, CONFIG_SAMPLE_MS_MAX, 1000, NULL,
          IN_CONFIG(sample_ms), IN_WATCH(sample_ms), sizeof(uint64_t), true, NULL },
        { "cooldown_ms", CONFIG_KEY_UINT, CONFIG_KEY_TOP | CONFIG_KEY_WATCH, 0, CONFIG_COOLDOWN_MS_MAX, 10000, NULL,
          IN_CONFIG(cooldown_ms), IN_WATCH(cooldown_ms), sizeof(uint64_t), true, NULL },
        { "stacks_hz", CONFIG_KEY_UINT, CONFIG_KEY_TOP | CONFIG_KEY_WATCH, 0, CONFIG_STACKS_HZ_MAX, 0, NULL,
          IN_CONFIG(stacks_hz), IN_WATCH(stacks_hz), sizeof(unsigned), true, NULL },
        { "max_incidents_per_minute", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 0, CONFIG_MAX_INCIDENTS_PER_MINUTE_MAX, 60, NULL,
          IN_CONFIG(max_incidents_per_minute), NOWHERE, sizeof(unsigned), true, NULL },
        { "max_concurrent_samples", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 1, CONFIG_MAX_CONCURRENT_SAMPLES_MAX, 4, NULL,
          IN_CONFIG(max_concurrent_samples), NOWHERE, sizeof(unsigned), true, NULL },
        { "max_dir_watches", CONFIG_KEY_UINT, CONFIG_KEY_TOP, CONFIG_MAX_DIR_WATCHES_MIN, CONFIG_MAX_DIR_WATCHES_MAX,
          2048, NULL, IN_CONFIG(max_dir_watches), NOWHERE, sizeof(unsigned), true, NULL },
        { "oom_lookback_s", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 0, CONFIG_OOM_LOOKBACK_S_MAX, 300, NULL,
          IN_CONFIG(oom_lookback_s), NOWHERE, sizeof(unsigned), true, NULL },
        { "kill_window_s", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 0, CONFIG_KILL_WINDOW_S_MAX, 60, NULL,
          IN_CONFIG(kill_window_s), NOWHERE, sizeof(unsigned), true, NULL },
        { "record_s", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 0, CONFIG_RECORD_S_MAX, 60, NULL, IN_CONFIG(record_s), NOWHERE,
          sizeof(unsigned), true, NULL },
        /* None by default: a syslog file's header is the client's to write (docs/killers.md). */
        { "kill_log_files", CONFIG_KEY_PATHS, CONFIG_KEY_TOP, 0, CONFIG_KILL_LOG_FILES_MAX, 0, NULL,
          IN_CONFIG(kill_log_files), NOWHERE, 0, true, NULL },
        /* systemd-oomd's prekill hook (agent/prekillhook.h). */
        { "prekill_socket", CONFIG_KEY_SOCKET, CONFIG_KEY_TOP, 0, 0, 0, CONFIG_PREKILL_SYSTEMD_DIR "/psidiag",
          IN_CONFIG(prekill_socket), NOWHERE, 0, true, NULL },
        { "prekill_reply_ms", CONFIG_KEY_UINT, CONFIG_KEY_TOP, CONFIG_PREKILL_REPLY_MS_MIN, CONFIG_PREKILL_REPLY_MS_MAX,
          200, NULL, IN_CONFIG(prekill_reply_ms), NOWHERE, sizeof(unsigned), true, NULL },
        { "prekill_wait_s", CONFIG_KEY_UINT, CONFIG_KEY_TOP, 1, CONFIG_PREKILL_WAIT_S_MAX, 30, NULL,
          IN_CONFIG(prekill_wait_s), NOWHERE, sizeof(unsigned), true, NULL },
        { "metrics_file", CONFIG_KEY_METRICS_FILE, CONFIG_KEY_TOP, 0, 0, 0, NULL, IN_CONFIG(metrics_file), NOWHERE, 0,
          true, NULL },
        { "watch", CONFIG_KEY_WATCHES, CONFIG_KEY_TOP, 1, CONFIG_WATCHES_MAX, 0, NULL, IN_CONFIG(watches), NOWHERE, 0,
          true, NULL },
        { "$schema", CONFIG_KEY_SCHEMA, CONFIG_KEY_TOP, 0, 0, 0, NULL, NOWHERE, NOWHERE, 0, false, NULL },
};
const size_t config_keys_n = ELEMENTSOF(config_keys);

const ConfigKey *config_keys_find(const char *name) {
        for (size_t i = 0; i < config_keys_n; i++)
                if (strcmp(config_keys[i].name, name) == 0)
                        return &config_keys[i];
        return NULL;
}

uint64_t config_keys_default(const char *name) {
        const ConfigKey *k = config_keys_find(name);

        assert(k && k->type == CONFIG_KEY_UINT);
        return k->def;
}

char *config_keys_expected(unsigned where, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < config_keys_n; i++) {
                if (!config_keys[i].listed || !(config_keys[i].where & where))
                        continue;
                int k = snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "", config_keys[i].name);
                if (k < 0 || (size_t) k >= size - n)
                        break;
                n += (size_t) k;
        }
        return buf;
}
