/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "triggers/trigger.h"

/* Percent with up to four decimals, as parts per million of the window: "20%" -> 200000. */
static int parse_percent_ppm(const char *s, uint64_t *ret) {
        uint64_t whole = 0, frac = 0, div = 1;
        const char *p = s;

        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                whole = whole * 10 + (uint64_t) (*p - '0');
                if (whole > 100)
                        return -ERANGE;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (div >= 10000)
                                return -ERANGE;
                        frac = frac * 10 + (uint64_t) (*p - '0');
                        div *= 10;
                }
        }
        if (strcmp(p, "%") != 0)
                return -EINVAL;
        *ret = whole * 10000 + frac * 10000 / div;
        return 0;
}

/* Splits s into exactly n whitespace-separated words, each copied into words[i] (max wsize). */
static int split_words(const char *s, char words[][32], size_t n) {
        size_t count = 0;

        for (;;) {
                size_t len;

                while (isspace((unsigned char) *s))
                        s++;
                if (!*s)
                        break;
                len = strcspn(s, " \t\n\r\f\v");
                if (count >= n || len >= sizeof words[0])
                        return -EINVAL;
                memcpy(words[count], s, len);
                words[count][len] = '\0';
                count++;
                s += len;
        }
        return count == n ? 0 : -EINVAL;
}

int psi_trigger_spec_parse(const char *s, PsiTriggerSpec *ret, const char **ret_reason) {
        char w[4][32];
        PsiTriggerSpec spec = {};
        uint64_t ppm = 0;
        bool percent;
        const char *reason;

        if (!s || split_words(s, w, 4) < 0) {
                reason = "a trigger is \"<cpu|memory|io|irq> <some|full> <stall> <window>\"";
                goto fail;
        }

        spec.resource = psi_resource_from_string(w[0]);
        if (spec.resource < 0) {
                reason = "unknown resource (expected cpu, memory, io or irq)";
                goto fail;
        }
        spec.stall = psi_stall_from_string(w[1]);
        if (spec.stall < 0) {
                reason = "unknown stall type (expected some or full)";
                goto fail;
        }
        /* kernel/sched/psi.c: irq pressure has no "some" line; psi_trigger_create() refuses it. */
        if (spec.resource == PSI_RESOURCE_IRQ && spec.stall != PSI_STALL_FULL) {
                reason = "irq pressure accepts only \"full\" triggers";
                goto fail;
        }
        if (parse_duration_us(w[3], &spec.window_us) < 0) {
                reason = "window must be a duration with a unit: us, ms or s (e.g. 2s)";
                goto fail;
        }
        if (spec.window_us < PSI_WINDOW_MIN_US || spec.window_us > PSI_WINDOW_MAX_US) {
                reason = "window must be between 500ms and 10s";
                goto fail;
        }

        percent = strchr(w[2], '%') != NULL;
        if (percent) {
                if (parse_percent_ppm(w[2], &ppm) < 0) {
                        reason = "stall percent must be a number from 0 to 100 followed by %";
                        goto fail;
                }
                spec.threshold_us = spec.window_us * ppm / 1000000;
        } else if (parse_duration_us(w[2], &spec.threshold_us) < 0) {
                reason = "stall must be a duration with a unit (us, ms, s) or a percent of the window";
                goto fail;
        }
        if (spec.threshold_us == 0) {
                reason = "stall must be greater than zero";
                goto fail;
        }
        if (spec.threshold_us > spec.window_us) {
                reason = "stall must not exceed the window";
                goto fail;
        }

        *ret = spec;
        return 0;
fail:
        if (ret_reason)
                *ret_reason = reason;
        return -EINVAL;
}

int psi_trigger_spec_effective(const PsiTriggerSpec *spec, bool privileged, PsiTriggerSpec *ret) {
        PsiTriggerSpec e = *spec;
        usec_t step = PSI_UNPRIV_WINDOW_STEP_US;

        if (!privileged && spec->window_us % step != 0) {
                e.window_us = (spec->window_us / step + 1) * step;
                /* Keep the stall's share of the window; round to the nearest microsecond. */
                e.threshold_us = (spec->threshold_us * e.window_us + spec->window_us / 2) / spec->window_us;
                if (e.threshold_us == 0)
                        e.threshold_us = 1;
                if (e.threshold_us > e.window_us)
                        e.threshold_us = e.window_us;
        }
        *ret = e;
        return e.window_us != spec->window_us || e.threshold_us != spec->threshold_us;
}

int psi_trigger_spec_format_kernel(const PsiTriggerSpec *spec, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s %" PRIu64 " %" PRIu64, psi_stall_to_string(spec->stall),
                         (uint64_t) spec->threshold_us, (uint64_t) spec->window_us);
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        return n;
}

static void format_duration(usec_t us, char *buf, size_t size) {
        if (us % USEC_PER_SEC == 0)
                snprintf(buf, size, "%" PRIu64 "s", (uint64_t) (us / USEC_PER_SEC));
        else if (us % USEC_PER_MSEC == 0)
                snprintf(buf, size, "%" PRIu64 "ms", (uint64_t) (us / USEC_PER_MSEC));
        else
                snprintf(buf, size, "%" PRIu64 "us", (uint64_t) us);
}

char *psi_trigger_spec_format(const PsiTriggerSpec *spec, char *buf, size_t size) {
        char stall[32], window[32];

        format_duration(spec->threshold_us, stall, sizeof stall);
        format_duration(spec->window_us, window, sizeof window);
        snprintf(buf, size, "%s %s %s %s", psi_resource_to_string(spec->resource), psi_stall_to_string(spec->stall),
                 stall, window);
        return buf;
}
