/* SPDX-License-Identifier: MIT */
/* PSI trigger specs: the "<cpu|memory|io|irq> <some|full> <stall> <window>" grammar, its limits,
 * the 2 s rounding for callers without CAP_SYS_RESOURCE, and the string the kernel expects.
 * Pure functions: no I/O, no logging. Arming lives in psi.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "base/timeutil.h"
#include "probes/pressure.h"

/* Kernel limits from kernel/sched/psi.c (psi_trigger_create). */
#define PSI_WINDOW_MIN_US (500 * USEC_PER_MSEC)
#define PSI_WINDOW_MAX_US (10 * USEC_PER_SEC)
/* Without CAP_SYS_RESOURCE the kernel only accepts windows that are multiples of its 2 s averaging
 * period (psi.c: "if (!privileged && window_us % 2000000) return -EINVAL"). */
#define PSI_UNPRIV_WINDOW_STEP_US (2 * USEC_PER_SEC)

typedef struct PsiTriggerSpec {
        PsiResource resource;
        PsiStall stall;
        usec_t threshold_us;
        usec_t window_us;
} PsiTriggerSpec;

/* Parses a trigger spec. The stall is a duration ("150ms", "0.5s", "200us") or a percent of the
 * window ("20%", fractions allowed). Validates: known resource and stall type, only "full" for
 * irq, window within 500 ms..10 s, 0 < stall <= window. Returns 0, or -EINVAL with *ret_reason set
 * to a static English sentence saying what is wrong (ret_reason is written on failure only). */
int psi_trigger_spec_parse(const char *s, PsiTriggerSpec *ret, const char **ret_reason);

/* The spec the kernel will accept from a caller that has (privileged) or lacks CAP_SYS_RESOURCE:
 * unprivileged windows are rounded up to the next multiple of 2 s and the threshold scaled in
 * proportion. Returns 1 if the spec changed, 0 if not. */
int psi_trigger_spec_effective(const PsiTriggerSpec *spec, bool privileged, PsiTriggerSpec *ret);

/* Formats "<some|full> <threshold_us> <window_us>" as written to a pressure file. Returns the
 * string length, or -ENOBUFS if size is too small. */
int psi_trigger_spec_format_kernel(const PsiTriggerSpec *spec, char *buf, size_t size);

/* Formats the spec in the config grammar ("cpu some 150ms 2s") for logs. Returns buf. */
char *psi_trigger_spec_format(const PsiTriggerSpec *spec, char *buf, size_t size);
