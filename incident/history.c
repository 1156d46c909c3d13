/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cgpath.h"
#include "incident/history.h"

int history_init(History *h, usec_t lookback_us) {
        *h = (History) { .lookback_us = lookback_us };
        h->items = calloc(HISTORY_MAX, sizeof *h->items);
        return h->items ? 0 : -ENOMEM;
}

static void history_remove(History *h, size_t i) {
        free(h->items[i].cgroup);
        memmove(&h->items[i], &h->items[i + 1], (h->n - i - 1) * sizeof h->items[0]);
        h->n--;
}

static bool same_cgroup(const char *a, const char *b) {
        return a == b || (a && b && strcmp(a, b) == 0);
}

int history_add(History *h, const char *cgroup, const char *id, usec_t now_us) {
        size_t same = 0, oldest_same = 0;
        char *copy = NULL;

        /* Expired entries first: they are the oldest, at the front. */
        while (h->n > 0 && now_us - h->items[0].mono_us > h->lookback_us)
                history_remove(h, 0);
        if (h->lookback_us == 0)
                return 0;
        if (cgroup) {
                copy = strdup(cgroup);
                if (!copy)
                        return -ENOMEM;
        }
        for (size_t i = h->n; i-- > 0;)
                if (same_cgroup(h->items[i].cgroup, cgroup)) {
                        same++;
                        oldest_same = i;
                }
        if (same >= HISTORY_PER_CGROUP)
                history_remove(h, oldest_same);
        else if (h->n == HISTORY_MAX)
                history_remove(h, 0);
        HistoryEntry *e = &h->items[h->n++];
        e->cgroup = copy;
        e->mono_us = now_us;
        strncpy(e->id, id, sizeof e->id - 1);
        e->id[sizeof e->id - 1] = '\0';
        return 0;
}

void history_forget(History *h, const char *id) {
        for (size_t i = h->n; i-- > 0;)
                if (strcmp(h->items[i].id, id) == 0) {
                        history_remove(h, i);
                        return;
                }
}

size_t history_related(const History *h, const char *cgroup, usec_t now_us, const char **ret, size_t max) {
        size_t k = 0;

        for (size_t i = h->n; i-- > 0 && k < max;) {
                const HistoryEntry *e = &h->items[i];
                if (now_us - e->mono_us > h->lookback_us)
                        break; /* older ones are older still */
                if (cgpath_covers(e->cgroup, cgroup))
                        ret[k++] = e->id;
        }
        return k;
}

void history_done(History *h) {
        while (h->n > 0)
                history_remove(h, h->n - 1);
        free(h->items);
        h->items = NULL;
}
