/* SPDX-License-Identifier: MIT */
/* The incident's "on what": "limits" (the limit behind the stall and how hard it was hit over the
 * sample) and "blocked" (where the leading processes' uninterruptible threads waited), from
 * sampling/onwhat.h. Pure: no I/O and no logging. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sampling/onwhat.h"

/* {cpu, memory, io}, the fired resource's object filled, the others null. lifetime: one reading,
 * counters as totals. NULL on allocation failure. */
json_t *onwhat_limits_object(const OnWhat *w, bool lifetime, bool has_stall, uint64_t stall_us, uint64_t duration_us);

/* [{wchan, seen, threads: [{pid, tid, comm}], threads_total, stack}] most seen first; the kernel
 * stack read of one of its threads, in the group it was read in. NULL on allocation failure. */
json_t *onwhat_blocked_array(const OnWhat *w);

/* Why no kernel stack could be read (once for the incident), or NULL. */
const char *onwhat_stack_unavailable(const OnWhat *w);
/* Why some blocked thread has no blocked_ms (the first reason a look met), NULL when none. */
const char *onwhat_since_unavailable(const OnWhat *w);
