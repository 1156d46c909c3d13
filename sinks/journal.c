/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#if HAVE_JOURNAL
#include <dlfcn.h>
#endif

#include "base/macro.h"
#include "base/text.h"
#include "sinks/journal.h"

#if HAVE_JOURNAL
/* libsystemd is loaded only when the journal output is used: linked in, it and the libraries it
 * pulls (gcrypt, zstd, lz4, lzma, cap) cost every start of psidiag about 1.6 ms, a third of a
 * `snapshot` of a small cgroup (measured on this VM). */
typedef int (*SdJournalSend)(const char *format, ...);
static SdJournalSend sd_journal_send_fn;

static bool journal_load(void) {
        void *h;

        if (sd_journal_send_fn)
                return true;
        h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return false;
        sd_journal_send_fn = (SdJournalSend) dlsym(h, "sd_journal_send");
        return sd_journal_send_fn != NULL;
}
#endif

/* True when built with journal support and libsystemd.so.0 can be loaded (dlopen, on first use). */
static bool journal_supported(void) {
#if HAVE_JOURNAL
        return journal_load();
#else
        return false;
#endif
}

static int journal_available(char *why, size_t why_size) {
        if (journal_supported())
                return 0;
        snprintf(why, why_size, "%s",
                 HAVE_JOURNAL ? "libsystemd.so.0 cannot be loaded"
                              : "psidiag was built without journald support (libsystemd)");
        return -EOPNOTSUPP;
}

static const char *string_at(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

int journal_summary(json_t *inc, char *message, size_t message_size, char *type, size_t type_size, char *id,
                    size_t id_size, const char **ret_message_id) {
        json_t *top, *p, *trigger;
        char safe[256], dur[32];
        size_t i, o;

        if (!json_is_object(inc) || !string_at(inc, "type"))
                return -EINVAL;
        text_terminal_safe(string_at(inc, "type"), type, type_size);
        text_terminal_safe(string_at(inc, "id"), id, id_size);
        *ret_message_id = strcmp(type, "pressure") == 0   ? JOURNAL_MESSAGE_ID_PRESSURE
                          : strcmp(type, "snapshot") == 0 ? JOURNAL_MESSAGE_ID_SNAPSHOT
                          : strcmp(type, "oom") == 0      ? JOURNAL_MESSAGE_ID_OOM
                          : strcmp(type, "kill") == 0     ? JOURNAL_MESSAGE_ID_KILL
                                                          : JOURNAL_MESSAGE_ID_OTHER;
        /* The incident's own sentence, when it has one (every incident since 0.6). */
        if (string_at(inc, "summary")) {
                text_terminal_safe(string_at(inc, "summary"), message, message_size);
                return 1;
        }
        trigger = json_object_get(inc, "trigger");
        o = (size_t) snprintf(message, message_size, "%s", type);
        if (json_is_object(trigger) && o < message_size) {
                const char *cg = string_at(trigger, "cgroup");
                char spec[128];
                text_terminal_safe(cg ? cg : "node", safe, sizeof safe);
                text_terminal_safe(string_at(trigger, "spec"), spec, sizeof spec);
                o += (size_t) snprintf(message + o, message_size - o, " on %s \"%s\"", safe, spec);
        }
        json_t *oom = json_object_get(inc, "oom");
        if (json_is_object(oom) && o < message_size) {
                json_t *victim = json_object_get(oom, "victim"), *related = json_object_get(inc, "related");
                const char *cg = string_at(oom, "cgroup");
                text_terminal_safe(cg ? cg : "node", safe, sizeof safe);
                o += (size_t) snprintf(message + o, message_size - o, " in %s: ", safe);
                if (json_is_object(victim) && o < message_size) {
                        text_terminal_safe(string_at(victim, "comm"), safe, sizeof safe);
                        o += (size_t) snprintf(message + o, message_size - o, "killed %s[%lld]", safe,
                                               (long long) json_integer_value(json_object_get(victim, "pid")));
                } else if (o < message_size)
                        o += (size_t) snprintf(message + o, message_size - o, "%lld kill(s) counted",
                                               (long long) json_integer_value(json_object_get(oom, "kills")));
                if (o < message_size)
                        o += (size_t) snprintf(message + o, message_size - o, ", %zu related",
                                               json_is_array(related) ? json_array_size(related) : 0);
        }
        top = json_object_get(inc, "most_delayed");
        json_array_foreach(top, i, p) {
                json_t *score = json_object_get(p, "score_us");
                if (i == 3 || o >= message_size)
                        break;
                text_terminal_safe(string_at(p, "comm"), safe, sizeof safe);
                o += (size_t) snprintf(
                        message + o, message_size - o, "%s%s[%lld] %s", i ? ", " : ": ", safe,
                        (long long) json_integer_value(json_object_get(p, "pid")),
                        text_format_us(json_is_integer(score) ? (long long) json_integer_value(score) : -1, dur,
                                       sizeof dur));
        }
        if (o < message_size && json_array_size(top) == 0)
                snprintf(message + o, message_size - o, ": no process was delayed");
        return 0;
}

static int journal_open(Sink *s, char *why, size_t why_size) {
        return journal_available(why, why_size);
}

/* doc is the incident itself (own_entries); dump_line makes its PSIDIAG_INCIDENT line. */
static int journal_write(Sink *s, json_t *doc, SinkDumpLine dump_line) {
#if HAVE_JOURNAL
        _cleanup_free_ char *line = NULL;
        char message[1024], type[32], id[128];
        const char *message_id;
        size_t len;
        int r;

        int own = journal_summary(doc, message, sizeof message, type, sizeof type, id, sizeof id, &message_id);
        if (own < 0)
                return own;
        r = dump_line(doc, &line, &len);
        if (r < 0)
                return r;
        while (len > 0 && line[len - 1] == '\n')
                len--;
        if (!journal_load())
                return -EOPNOTSUPP;
        return sd_journal_send_fn("MESSAGE=%s%s", own > 0 ? "" : "psidiag: ", message, "MESSAGE_ID=%s", message_id,
                                  "PRIORITY=%i",
                                  strcmp(type, "oom") == 0 || strcmp(type, "kill") == 0 ? LOG_ERR : LOG_WARNING,
                                  "SYSLOG_IDENTIFIER=psidiag", "PSIDIAG_TYPE=%s", type, "PSIDIAG_INCIDENT_ID=%s", id,
                                  "PSIDIAG_INCIDENT=%.*s", (int) len, line, NULL);
#else
        return -EOPNOTSUPP;
#endif
}

static void journal_close(Sink *s) {
}

const SinkOps sink_journal_ops = {
        .name = "journal",
        .own_entries = true,
        .available = journal_available,
        .open = journal_open,
        .write = journal_write,
        .close = journal_close,
};
