/* SPDX-License-Identifier: MIT */
/* The trigger grammar ("cpu some 150ms 2s", "memory full 20% 10s"): a spec that parses formats
 * back to text that parses to the same spec, and its kernel string fits the kernel's limits. */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "triggers/trigger.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PsiTriggerSpec spec, again, eff;
        const char *reason = NULL;
        char text[256], kernel[128];
        char *s;

        if (size > 4096)
                return 0;
        s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        if (psi_trigger_spec_parse(s, &spec, &reason) < 0) {
                if (!reason)
                        abort();
                free(s);
                return 0;
        }
        if (!psi_trigger_spec_format(&spec, text, sizeof text))
                abort();
        if (psi_trigger_spec_parse(text, &again, &reason) < 0 || again.resource != spec.resource ||
            again.stall != spec.stall || again.threshold_us != spec.threshold_us || again.window_us != spec.window_us)
                abort(); /* format and parse must round-trip */
        for (int privileged = 0; privileged <= 1; privileged++)
                if (psi_trigger_spec_effective(&spec, privileged, &eff) >= 0 &&
                    psi_trigger_spec_format_kernel(&eff, kernel, sizeof kernel) < 0)
                        abort();
        free(s);
        return 0;
}
