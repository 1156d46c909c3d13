/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if HAVE_JOURNAL
#include <dlfcn.h>
#endif

#include "base/macro.h"
#include "kills/killjournal.h"
#include "kills/kills.h"

/* sd-journal.h's flags, for sd_journal_open(). */
#define JOURNAL_LOCAL_ONLY 1
#define JOURNAL_SYSTEM 4
#define DRAIN_MAX 256

typedef struct sd_journal sd_journal;

struct KillJournal {
        sd_journal *j;
        KillLogState state;
};

/* libsystemd's journal reader, loaded on first use (see sinks/journal.c for why not linked). */
static struct {
        bool tried, ok;
        int (*open)(sd_journal **j, int flags);
        void (*close)(sd_journal *j);
        int (*add_match)(sd_journal *j, const void *data, size_t size);
        int (*seek_tail)(sd_journal *j);
        int (*previous)(sd_journal *j);
        int (*next)(sd_journal *j);
        int (*get_data)(sd_journal *j, const char *field, const void **data, size_t *size);
        int (*get_fd)(sd_journal *j);
        int (*process)(sd_journal *j);
} sd;

static bool journal_load(void) {
#if HAVE_JOURNAL
        void *h;

        if (sd.tried)
                return sd.ok;
        sd.tried = true;
        h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return false;
        sd.open = (int (*)(sd_journal **, int)) dlsym(h, "sd_journal_open");
        sd.close = (void (*)(sd_journal *)) dlsym(h, "sd_journal_close");
        sd.add_match = (int (*)(sd_journal *, const void *, size_t)) dlsym(h, "sd_journal_add_match");
        sd.seek_tail = (int (*)(sd_journal *)) dlsym(h, "sd_journal_seek_tail");
        sd.previous = (int (*)(sd_journal *)) dlsym(h, "sd_journal_previous");
        sd.next = (int (*)(sd_journal *)) dlsym(h, "sd_journal_next");
        sd.get_data = (int (*)(sd_journal *, const char *, const void **, size_t *)) dlsym(h, "sd_journal_get_data");
        sd.get_fd = (int (*)(sd_journal *)) dlsym(h, "sd_journal_get_fd");
        sd.process = (int (*)(sd_journal *)) dlsym(h, "sd_journal_process");
        sd.ok = sd.open && sd.close && sd.add_match && sd.seek_tail && sd.previous && sd.next && sd.get_data &&
                sd.get_fd && sd.process;
        return sd.ok;
#else
        return false;
#endif
}

void kill_journal_matches(KillJournalMatches *ret) {
        *ret = (KillJournalMatches) {};
        for (KillerKind kind = 0; kind < _KILLER_MAX; kind++) {
                const char *ident = killmarks_killer(kind)->log_ident;
                int n;

                if (!ident)
                        continue;
                n = snprintf(ret->match[ret->n], sizeof ret->match[ret->n], "SYSLOG_IDENTIFIER=%s", ident);
                assert(n > 0 && (size_t) n < sizeof ret->match[ret->n]); /* a table row too long: a bug */
                ret->n++;
        }
}

int kill_journal_open(KillJournal **ret) {
        KillJournalMatches m;
        KillJournal *k;
        int r;

        if (!journal_load())
                return -EOPNOTSUPP;
        k = calloc(1, sizeof *k);
        if (!k)
                return -ENOMEM;
        kill_log_state_init(&k->state);
        r = sd.open(&k->j, JOURNAL_LOCAL_ONLY | JOURNAL_SYSTEM);
        if (r < 0) {
                free(k);
                return r;
        }
        /* Matches on one field are ORed: an entry of any of the killers. */
        kill_journal_matches(&m);
        for (size_t i = 0; i < m.n && r >= 0; i++)
                r = sd.add_match(k->j, m.match[i], 0);
        /* The inotify watch that lets process() find journal files made after the open. */
        if (r >= 0)
                (void) sd.get_fd(k->j);
        if (r >= 0)
                r = sd.seek_tail(k->j);
        if (r < 0) {
                kill_journal_close(k);
                return r;
        }
        /* On the last entry (if any matches), so that next() gives only the ones after it. */
        (void) sd.previous(k->j);
        *ret = k;
        return 0;
}

KillJournal *kill_journal_close(KillJournal *k) {
        if (k) {
                if (k->j)
                        sd.close(k->j);
                free(k);
        }
        return NULL;
}

/* The value of FIELD=value data, or NULL. */
static const char *field_value(const void *data, size_t size, const char *field, size_t *ret_len) {
        size_t n = strlen(field);

        if (size <= n || memcmp(data, field, n) != 0 || ((const char *) data)[n] != '=')
                return NULL;
        *ret_len = size - n - 1;
        return (const char *) data + n + 1;
}

/* The text of field in the current entry, copied into buf (get_data()'s buffer lasts only until
 * the next call); NULL when absent, longer than fits, or holding a NUL. */
static const char *field_copy(sd_journal *j, const char *field, char *buf, size_t size) {
        const void *data;
        const char *v;
        size_t dsize, len;

        if (sd.get_data(j, field, &data, &dsize) < 0 || !(v = field_value(data, dsize, field, &len)) || len >= size ||
            memchr(v, '\0', len))
                return NULL;
        memcpy(buf, v, len);
        buf[len] = '\0';
        return buf;
}

/* Who sent the current entry, from the fields journald sets itself. */
static void entry_sender(sd_journal *j, char comm[static 64], char exe[static 512], char unit[static 256],
                         KillJournalSender *ret) {
        char uid[24];
        const char *u = field_copy(j, "_UID", uid, sizeof uid);
        char *end;
        long long v;

        *ret = (KillJournalSender) {
                .comm = field_copy(j, "_COMM", comm, 64),
                .exe = field_copy(j, "_EXE", exe, 512),
                .unit = field_copy(j, "_SYSTEMD_UNIT", unit, 256),
                .uid = -1,
        };
        if (u && *u >= '0' && *u <= '9' && (v = strtoll(u, &end, 10)) >= 0 && *end == '\0' && v <= UINT32_MAX)
                ret->uid = v;
}

size_t kill_journal_drain(KillJournal *k, void (*mark)(const KillMark *m, void *userdata), void *userdata) {
        size_t n = 0;

        if (!k)
                return 0;
        (void) sd.process(k->j);
        for (unsigned i = 0; i < DRAIN_MAX && sd.next(k->j) > 0; i++) {
                char ident[64], comm[64], exe[512], unit[256];
                const void *data;
                const char *msg;
                size_t size, msg_len;
                KillJournalSender from;
                KillMark m;

                if (!field_copy(k->j, "SYSLOG_IDENTIFIER", ident, sizeof ident))
                        continue;
                entry_sender(k->j, comm, exe, unit, &from);
                if (sd.get_data(k->j, "MESSAGE", &data, &size) < 0 ||
                    !(msg = field_value(data, size, "MESSAGE", &msg_len)))
                        continue;
                if (kill_journal_parse_entry(&from, ident, strlen(ident), msg, msg_len, &k->state, &m) > 0) {
                        mark(&m, userdata);
                        n++;
                }
        }
        return n;
}
