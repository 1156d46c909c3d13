/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static LogLevel log_max_level = LOG_LEVEL_INFO;

static const char *const log_level_names[_LOG_LEVEL_MAX] = {
        [LOG_LEVEL_ERROR] = "error",
        [LOG_LEVEL_WARNING] = "warning",
        [LOG_LEVEL_INFO] = "info",
        [LOG_LEVEL_DEBUG] = "debug",
};

void log_set_level(LogLevel level) {
        if (level >= 0 && level < _LOG_LEVEL_MAX)
                log_max_level = level;
}

LogLevel log_level_from_string(const char *s) {
        if (!s)
                return _LOG_LEVEL_INVALID;
        for (int i = 0; i < _LOG_LEVEL_MAX; i++)
                if (strcmp(s, log_level_names[i]) == 0)
                        return i;
        if (strcmp(s, "warn") == 0)
                return LOG_LEVEL_WARNING;
        return _LOG_LEVEL_INVALID;
}

int log_internal(LogLevel level, int error, const char *fmt, ...) {
        int e = error < 0 ? -error : error;

        if (level <= log_max_level) {
                char buf[1024];
                va_list ap;
                int saved = errno;

                errno = e;
                va_start(ap, fmt);
                vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);
                errno = saved;

                /* One fprintf so concurrent writers to the same stderr do not interleave mid-line. */
                if (e != 0)
                        fprintf(stderr, "psidiag: %s: %s: %s\n", log_level_names[level], buf, strerror(e));
                else
                        fprintf(stderr, "psidiag: %s: %s\n", log_level_names[level], buf);
        }
        return e != 0 ? -e : 0;
}

bool log_ratelimit_pass(LogRateLimit *rl, usec_t now_mono_us) {
        if (rl->last_us && now_mono_us - rl->last_us < rl->interval_us)
                return false;
        rl->last_us = now_mono_us;
        return true;
}

void log_ratelimit_reset(LogRateLimit *rl) {
        rl->last_us = 0;
}
