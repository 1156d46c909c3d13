/* SPDX-License-Identifier: MIT */
/* The config loader: any bytes either parse into a Config that survives formatting its triggers,
 * or fail with an error message naming a place; a watch that parses watches one thing (the node, a
 * cgroup, or containers by name). Never a crash, never a leak. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "config/config.h"
#include "config/target.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Config *c = NULL;
        char *error = NULL;

        int r;

        log_set_level(LOG_LEVEL_ERROR);
        r = config_parse((const char *) data, size, "fuzz", &c, &error);
        if (r < 0) {
                if (r == -EINVAL && (!error || error[0] == '\0'))
                        abort(); /* every refusal says why */
                free(error);
                return 0;
        }
        for (size_t i = 0; i < c->n_watches; i++) {
                const WatchConfig *w = &c->watches[i];

                /* a watch watches one thing: the node, a cgroup, or containers by name */
                if (w->cgroup && config_target_by_container(w))
                        abort();
                if (config_target_by_container(w) && strcmp(config_target_label(w), w->select_text) != 0)
                        abort();
                if (!w->select.pod_namespace != !w->select.pod_name)
                        abort();
                for (size_t j = 0; j < w->n_triggers; j++) {
                        char buf[128];
                        if (!psi_trigger_spec_format(&w->triggers[j].spec, buf, sizeof buf))
                                abort();
                }
        }
        config_free(c);
        free(error);
        return 0;
}
