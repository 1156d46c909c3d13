/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "sampling/culprit-usage.h"

uint64_t culprit_score(const CulpritUsage *u, PsiResource res) {
        switch (res) {
        case PSI_RESOURCE_CPU:
                return u->cpu_us;
        case PSI_RESOURCE_IO:
                return u->read_bytes + u->write_bytes;
        case PSI_RESOURCE_MEMORY:
                return u->has_growth && u->rss_growth_bytes > 0 ? (uint64_t) u->rss_growth_bytes : 0;
        default:
                return 0;
        }
}

uint64_t culprit_sub_sat(uint64_t b, uint64_t a) {
        return b >= a ? b - a : 0;
}

int64_t culprit_growth(uint64_t b, uint64_t a) {
        return b >= a ? (int64_t) MIN(b - a, (uint64_t) INT64_MAX) : -(int64_t) MIN(a - b, (uint64_t) INT64_MAX);
}

/* One process's use over the sample; false when it has none to report (moved in, or nothing of
 * the resource). */
bool culprit_process_usage(PsiResource res, const Snapshot *a, const ProcessDelays *pb, CulpritUsage *ret) {
        const ProcessDelays *pa = a ? snapshot_find_process(a, pb->tgid) : NULL;
        CulpritUsage u = {};

        /* Only in b and not born in the sample: it moved in, its totals are not from this sample. */
        if (a && !pa && pb->origin == PROCESS_MEASURED && !pb->born_in_sample)
                return false;
        if (pb->has_cpu_run && (!pa || pa->has_cpu_run))
                u.cpu_us = culprit_sub_sat(pb->cpu_run_ns, pa ? pa->cpu_run_ns : 0) / 1000;
        if (pb->has_io && (!pa || pa->has_io)) {
                u.read_bytes = culprit_sub_sat(pb->read_bytes, pa ? pa->read_bytes : 0);
                u.write_bytes = culprit_sub_sat(pb->write_bytes, pa ? pa->write_bytes : 0);
        }
        if (pb->has_mem) {
                u.rss_bytes = pb->rss_bytes;
                if (pa && pa->has_mem) {
                        u.rss_growth_bytes = culprit_growth(pb->rss_bytes, pa->rss_bytes);
                        u.majflt = culprit_sub_sat(pb->majflt, pa->majflt);
                        u.has_growth = true;
                } else if (a) { /* born in the sample: all of it is growth */
                        u.rss_growth_bytes = (int64_t) MIN(pb->rss_bytes, (uint64_t) INT64_MAX);
                        u.majflt = pb->majflt;
                        u.has_growth = true;
                }
        }
        *ret = u;
        if (res == PSI_RESOURCE_MEMORY)
                return pb->has_mem;
        return culprit_score(&u, res) > 0;
}

void culprit_usage_add(CulpritUsage *t, const CulpritUsage *u) {
        t->cpu_us += u->cpu_us;
        t->read_bytes += u->read_bytes;
        t->write_bytes += u->write_bytes;
        t->rss_bytes += u->rss_bytes;
        t->majflt += u->majflt;
        if (u->has_growth) {
                t->rss_growth_bytes += u->rss_growth_bytes;
                t->has_growth = true;
        }
}

/* The share of the scope's use: cpu time and bytes over the sample; memory: resident size now. */
double culprit_share(PsiResource res, const CulpritUsage *u, const CulpritUsage *total) {
        uint64_t part, whole;

        if (res == PSI_RESOURCE_MEMORY) {
                part = u->rss_bytes;
                whole = total->rss_bytes;
        } else {
                part = culprit_score(u, res);
                whole = culprit_score(total, res);
        }
        return whole == 0 ? 0.0 : MIN(1.0, (double) part / (double) whole);
}

void culprit_return_reaped_io(const Snapshot *b, PsiResource res, CulpritUsage *pu, bool *valid) {

        for (size_t i = 0; i < b->n_procs; i++) {
                const ProcessDelays *pb = &b->procs[i], *up = pb;

                if (pb->origin == PROCESS_MEASURED || !pb->has_io || (pb->read_bytes == 0 && pb->write_bytes == 0))
                        continue;
                for (unsigned depth = 0; up && up->origin != PROCESS_MEASURED && depth < 16; depth++)
                        up = up->ppid > 0 ? snapshot_find_process(b, up->ppid) : NULL;
                if (!up || up->origin != PROCESS_MEASURED)
                        continue;
                size_t j = (size_t) (up - b->procs);
                pu[j].read_bytes = culprit_sub_sat(pu[j].read_bytes, pb->read_bytes);
                pu[j].write_bytes = culprit_sub_sat(pu[j].write_bytes, pb->write_bytes);
                if (res == PSI_RESOURCE_IO && culprit_score(&pu[j], res) == 0)
                        valid[j] = false;
        }
}

static int cmp_ended(const void *a, const void *b) {
        return strcmp(((const CulpritEnded *) a)->path, ((const CulpritEnded *) b)->path);
}

size_t culprit_ended_merge(CulpritEnded *e, size_t n) {
        size_t k = 0;

        if (n > 0)
                qsort(e, n, sizeof *e, cmp_ended);
        for (size_t i = 0; i < n; i++) {
                if (k > 0 && strcmp(e[k - 1].path, e[i].path) == 0)
                        culprit_usage_add(&e[k - 1].usage, &e[i].usage);
                else
                        e[k++] = e[i];
        }
        return k;
}

const CulpritEnded *culprit_ended_find(const CulpritEnded *e, size_t n, const char *path) {
        CulpritEnded key = { .path = path };

        return n > 0 ? bsearch(&key, e, n, sizeof *e, cmp_ended) : NULL;
}

void culprit_set_key(PsiResource res, const CulpritUsage *u, int64_t *key, uint64_t *key2) {
        if (res == PSI_RESOURCE_MEMORY) {
                *key = u->has_growth ? u->rss_growth_bytes : 0;
                *key2 = u->rss_bytes;
        } else {
                *key = (int64_t) MIN(culprit_score(u, res), (uint64_t) INT64_MAX);
                *key2 = 0;
        }
}

int culprit_cmp_key(int64_t ka, uint64_t ka2, int64_t kb, uint64_t kb2) {
        if (ka != kb)
                return ka < kb ? 1 : -1;
        if (ka2 != kb2)
                return ka2 < kb2 ? 1 : -1;
        return 0;
}
