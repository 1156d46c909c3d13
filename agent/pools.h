/* SPDX-License-Identifier: MIT */
/* What the watches' samples borrow and share (a->pools): the places of max_concurrent_samples,
 * the "on what" of each sample in flight (allocated ahead, so a wakeup allocates none), the node
 * culprit passes that overlapping samples of one resource share, and the node-wide storms'
 * episodes. Starts no sample and logs nothing; the samples are agent/sample.c's. */
#pragma once

#include "agent/core.h"

/* A node culprit pass that overlapping samples of one resource share (agent/episode.h), from the
 * pool: back to it when its last sample is reported or dropped. */
struct SharedPass {
        CulpritPass pass;
        PsiResource resource;
        unsigned users; /* samples in flight that use it */
        char id[EPISODE_ID_MAX];
};

/* a->pools. 0 or -ENOMEM. */
int pools_start(Agent *a);
/* Frees it; every sample must have ended first. */
void pools_stop(Agent *a);

/* Grows the pool of "on what" to n (max_concurrent_samples); it never shrinks, as samples in
 * flight may hold some. 0 or -ENOMEM (what could be allocated is kept). */
int pools_onwhat_reserve(Agent *a, size_t n);
/* An "on what" for a sample, NULL when none is left (after a failed reserve: that sample goes
 * without); pools_give_onwhat() takes it back (NULL-safe). */
OnWhat *pools_take_onwhat(Agent *a);
void pools_give_onwhat(Agent *a, OnWhat *o);

/* Whether max_concurrent_samples samples are in flight; a sample takes its place at its start and
 * gives it back at its end. */
bool pools_full(const Agent *a);
void pools_take_place(Agent *a);
void pools_give_place(Agent *a);

/* The culprit pass of a sample of sample_ms about to start over c: the node's pass of the resource
 * that another sample runs, while its end is not taken (their windows overlap), else a new one
 * that later samples may join; NULL for a scope other than the node (a limit's, or the sample's
 * own), a window of 0 or out of memory: the sample runs its own. Counted (culprit_passes,
 * culprit_passes_shared). pools_give_pass() gives it back (NULL-safe): to the pool once no sample
 * uses it. */
SharedPass *pools_take_pass(Agent *a, const CulpritScope *c, uint64_t sample_ms);
void pools_give_pass(Agent *a, SharedPass *sp);

/* The node-wide episode of res (agent/episode.h). */
Episode *pools_episode(Agent *a, PsiResource res);
