/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "agent/runtime.h"
#include "cmd/validate.h"
#include "config/config.h"
#include "config/target.h"
#include "probes/sysroot.h"
#include "probes/system.h"
#include "triggers/trigger.h"

int validate_run(const char *path) {
        _cleanup_free_ char *error = NULL;
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        size_t n = 0;
        bool privileged = false;
        uint64_t caps;
        int r;

        r = config_load_file(path, &c, &error);
        if (r < 0) {
                if (error)
                        fprintf(stderr, "%s\n", error);
                else
                        fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r == -ENOMEM ? 1 : 2;
        }
        if (sysroot_open("/", &s) >= 0) {
                if (system_read_cap_eff(s->proc_fd, &caps) >= 0)
                        privileged = caps & CAP_BIT(CAP_SYS_RESOURCE);
                r = config_resolve_cgroups(c, s, &error);
                if (r < 0) {
                        fprintf(stderr, "%s\n", error ? error : "out of memory");
                        return r == -EINVAL ? 2 : 1;
                }
        }
        r = runtime_check_outputs(c, path, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ? error : "out of memory");
                return r == -EOPNOTSUPP ? 2 : 1;
        }

        for (size_t i = 0; i < c->n_watches; i++) {
                const WatchConfig *w = &c->watches[i];

                for (size_t j = 0; j < w->n_triggers; j++) {
                        PsiTriggerSpec e;
                        char buf[96];
                        bool changed = psi_trigger_spec_effective(&w->triggers[j].spec, privileged, &e) > 0;

                        printf("%s: \"%s\"%s%s%s -> %s\n", config_target_is_node(w) ? "node" : config_target_label(w),
                               w->triggers[j].text, changed ? " (armed as \"" : "",
                               changed ? psi_trigger_spec_format(&e, buf, sizeof buf) : "", changed ? "\")" : "",
                               w->output);
                        n++;
                }
        }
        printf("%s: ok, %zu watch%s, %zu trigger%s%s\n", path, c->n_watches, c->n_watches == 1 ? "" : "es", n,
               n == 1 ? "" : "s", c->output_format == CONFIG_OUTPUT_FORMAT_OTLP ? ", output_format otlp" : "");
        return 0;
}
