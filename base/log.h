/* SPDX-License-Identifier: MIT */
/* Logging to stderr with a level threshold and optional per-site rate limiting.
 * Used by agent/; triggers/ and probes/ may only call log_debug(). */
#pragma once

#include <stdbool.h>

#include "base/macro.h"
#include "base/timeutil.h"

typedef enum LogLevel {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
        _LOG_LEVEL_MAX,
        _LOG_LEVEL_INVALID = -EINVAL,
} LogLevel;

void log_set_level(LogLevel level);

/* "error", "warning", "info", "debug"; returns _LOG_LEVEL_INVALID for anything else. */
LogLevel log_level_from_string(const char *s);

/* Writes one line to stderr when level is at or below the threshold. Returns -error when error is
 * non-zero (as a negative errno), so handlers can `return log_error_errno(r, ...)`. */
int log_internal(LogLevel level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_error(...) log_internal(LOG_LEVEL_ERROR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_LEVEL_ERROR, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
/* "out of memory" as an error, no strerror after it, and -ENOMEM: `return log_oom();`. */
#define log_oom() (log_error("out of memory"), -ENOMEM)

/* Per-site rate limiting: a site that may repeat keeps one of these and logs only when
 * log_ratelimit_pass() says so. The counts of what it kept quiet belong in its own counters. */
typedef struct LogRateLimit {
        usec_t interval_us;
        usec_t last_us; /* monotonic; 0: never passed */
} LogRateLimit;

/* True, remembering now, when nothing passed yet or the last pass is interval_us old. */
bool log_ratelimit_pass(LogRateLimit *rl, usec_t now_mono_us);

/* Forgets the last pass: the next call passes (a condition cleared, and a new one is news). */
void log_ratelimit_reset(LogRateLimit *rl);
