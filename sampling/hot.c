/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/macro.h"
#include "sampling/hot.h"

/* Path order with '/' before every other byte, so a cgroup's descendants follow it directly
 * ("a", "a/b", "a-x" rather than strcmp's "a", "a-x", "a/b"). */
static int path_cmp(const char *a, const char *b) {
        for (;; a++, b++) {
                unsigned x = *a == '/' ? 1 : *a ? (unsigned char) *a + 1u : 0;
                unsigned y = *b == '/' ? 1 : *b ? (unsigned char) *b + 1u : 0;
                if (x != y || !x)
                        return (x > y) - (x < y);
        }
}

static int cmp_path(const void *x, const void *y, void *arg) {
        const CgroupTotals *t = arg;
        return path_cmp(cgroup_total_path(t, &t->items[*(const size_t *) x]),
                        cgroup_total_path(t, &t->items[*(const size_t *) y]));
}

static void sort_by_path(const CgroupTotals *t, size_t *order) {
        for (size_t i = 0; i < t->n; i++)
                order[i] = i;
        if (t->n > 0)
                qsort_r(order, t->n, sizeof *order, cmp_path, (void *) t);
}

static uint64_t growth(const CgroupTotal *a, const CgroupTotal *b, PsiStall s) {
        uint64_t before = a && a->has[s] ? a->total_us[s] : 0;
        return b->has[s] && b->total_us[s] > before ? b->total_us[s] - before : 0;
}

/* path is a strict descendant of parent. */
static bool below(const char *path, const char *parent) {
        size_t n = strlen(parent);
        return strncmp(path, parent, n) == 0 && path[n] == '/';
}

static int cmp_hot(const void *x, const void *y) {
        const HotCgroup *a = x, *b = y;
        if (a->stall_us != b->stall_us)
                return a->stall_us < b->stall_us ? 1 : -1;
        return strcmp(a->path, b->path);
}

int hot_cgroups_build(HotCgroups *h, const CgroupTotals *a, const CgroupTotals *b, PsiStall stall, size_t max) {
        size_t ia = 0, n = 0;
        int r;

        h->n = 0;
        if ((r = array_reserve((void **) &h->order_b, &h->cap_b, b->n, sizeof *h->order_b)) < 0 ||
            (r = array_reserve((void **) &h->items, &h->cap, b->n, sizeof *h->items)) < 0 ||
            (a && (r = array_reserve((void **) &h->order_a, &h->cap_a, a->n, sizeof *h->order_a)) < 0))
                return r;
        sort_by_path(b, h->order_b);
        if (a)
                sort_by_path(a, h->order_a);

        /* Every cgroup of b in path order, with its growth since a (merge on the sorted paths). */
        for (size_t i = 0; i < b->n; i++) {
                const CgroupTotal *cb = &b->items[h->order_b[i]], *ca = NULL;
                const char *path = cgroup_total_path(b, cb);

                while (a && ia < a->n && path_cmp(cgroup_total_path(a, &a->items[h->order_a[ia]]), path) < 0)
                        ia++;
                if (a && ia < a->n && path_cmp(cgroup_total_path(a, &a->items[h->order_a[ia]]), path) == 0)
                        ca = &a->items[h->order_a[ia]];
                h->items[n++] = (HotCgroup) {
                        .path = path,
                        .stall_us = growth(ca, cb, stall),
                        .some_us = growth(ca, cb, PSI_STALL_SOME),
                        .full_us = growth(ca, cb, PSI_STALL_FULL),
                        .has_full = cb->has[PSI_STALL_FULL],
                };
        }

        /* Leave out a cgroup a descendant explains (>= 90% of its growth), then the quiet ones. The
         * descendants of item i follow it in path order. */
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
                bool explained = false;

                for (size_t j = i + 1; j < n && below(h->items[j].path, h->items[i].path); j++)
                        if (h->items[j].stall_us * 10 >= h->items[i].stall_us * 9) {
                                explained = true;
                                break;
                        }
                if (!explained && h->items[i].stall_us > 0)
                        h->items[kept++] = h->items[i];
        }
        if (kept > 0)
                qsort(h->items, kept, sizeof *h->items, cmp_hot);
        h->n = MIN(kept, max);
        return 0;
}

void hot_cgroups_done(HotCgroups *h) {
        free(h->items);
        free(h->order_a);
        free(h->order_b);
        *h = (HotCgroups) {};
}
