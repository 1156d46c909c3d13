/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/pools.h"
#include "base/macro.h"

#define SHARED_PASS_POOL_MAX 4

struct WatchPools {
        unsigned sampling; /* watches with a sample in flight */
        /* "On what" for the samples in flight: as many as max_concurrent_samples has allowed, each
         * with its looks, allocated at start and when a reload raises it, so a sample allocates
         * none of it at its wakeup and an idle watch holds none. */
        OnWhat **onwhat_free;
        size_t n_onwhat_free, n_onwhat;
        /* Node-wide storms: the episode of each resource, and the node culprit pass of each
         * resource that samples starting now may still join (its end not taken yet). */
        Episode episodes[_PSI_RESOURCE_MAX];
        uint64_t pass_seq;
        SharedPass *open_pass[_PSI_RESOURCE_MAX];
        SharedPass *pass_free[SHARED_PASS_POOL_MAX];
        size_t n_pass_free;
};

int pools_start(Agent *a) {
        a->pools = calloc(1, sizeof *a->pools);
        return a->pools ? 0 : -ENOMEM;
}

void pools_stop(Agent *a) {
        WatchPools *p = a->pools;

        if (!p)
                return;
        for (size_t i = 0; i < p->n_onwhat_free; i++) {
                onwhat_done(p->onwhat_free[i]);
                free(p->onwhat_free[i]);
        }
        free(p->onwhat_free);
        for (size_t i = 0; i < p->n_pass_free; i++) {
                culprit_pass_done(&p->pass_free[i]->pass);
                free(p->pass_free[i]);
        }
        free(p);
        a->pools = NULL;
}

int pools_onwhat_reserve(Agent *a, size_t n) {
        WatchPools *p = a->pools;

        if (n <= p->n_onwhat)
                return 0;
        OnWhat **f = reallocarray(p->onwhat_free, n, sizeof *f);
        if (!f)
                return -ENOMEM;
        p->onwhat_free = f;
        while (p->n_onwhat < n) {
                OnWhat *w = malloc(sizeof *w);
                if (!w || onwhat_init(w) < 0) {
                        free(w);
                        return -ENOMEM;
                }
                p->onwhat_free[p->n_onwhat_free++] = w;
                p->n_onwhat++;
        }
        return 0;
}

OnWhat *pools_take_onwhat(Agent *a) {
        WatchPools *p = a->pools;

        return p->n_onwhat_free > 0 ? p->onwhat_free[--p->n_onwhat_free] : NULL;
}

void pools_give_onwhat(Agent *a, OnWhat *o) {
        if (o)
                a->pools->onwhat_free[a->pools->n_onwhat_free++] = o;
}

bool pools_full(const Agent *a) {
        return a->pools->sampling >= a->config->max_concurrent_samples;
}

void pools_take_place(Agent *a) {
        a->pools->sampling++;
}

void pools_give_place(Agent *a) {
        assert(a->pools->sampling > 0);
        a->pools->sampling--;
}

/* A node pass of res for samples that start while its end is not taken, from the pool. NULL out of
 * memory (the sample then runs its own). */
static SharedPass *pass_new(Agent *a, PsiResource res) {
        WatchPools *p = a->pools;
        SharedPass *sp = p->n_pass_free > 0 ? p->pass_free[--p->n_pass_free] : calloc(1, sizeof *sp);

        if (!sp)
                return NULL;
        sp->pass.started = sp->pass.ended = false;
        sp->resource = res;
        sp->users = 1;
        episode_format_id('p', now_usec(CLOCK_REALTIME), ++p->pass_seq, a->rt.host.boot_id, getpid(), sp->id,
                          sizeof sp->id);
        p->open_pass[res] = sp;
        return sp;
}

SharedPass *pools_take_pass(Agent *a, const CulpritScope *c, uint64_t sample_ms) {
        SharedPass *sp = a->pools->open_pass[c->resource];

        if (!c->node || c->same || sample_ms == 0) {
                a->counters.culprit_passes++;
                return NULL;
        }
        if (episode_pass_joinable(sp != NULL, sp && sp->pass.ended, sample_ms)) {
                sp->users++;
                a->counters.culprit_passes_shared++;
        } else {
                sp = pass_new(a, c->resource);
                a->counters.culprit_passes++;
        }
        return sp;
}

void pools_give_pass(Agent *a, SharedPass *sp) {
        WatchPools *p = a->pools;

        if (!sp || --sp->users > 0)
                return;
        if (p->open_pass[sp->resource] == sp)
                p->open_pass[sp->resource] = NULL;
        if (p->n_pass_free < SHARED_PASS_POOL_MAX) {
                p->pass_free[p->n_pass_free++] = sp;
                return;
        }
        culprit_pass_done(&sp->pass);
        free(sp);
}

Episode *pools_episode(Agent *a, PsiResource res) {
        return &a->pools->episodes[res];
}
