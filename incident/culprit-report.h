/* SPDX-License-Identifier: MIT */
/* The incident's "culprits" object: the culprit scope, and the processes and cgroups that used the
 * stalled resource most during the sample (sampling/culprits.h), with what /proc said of each
 * process. Pure: no I/O and no logging. */
#pragma once

#include <jansson.h>

#include "incident/jsonutil.h"
#include "sampling/culprits.h"
#include "sampling/sampler.h"

/* infos: one per c->procs[i], i < n_infos (the processes listed); containers: where the cgroups'
 * containers were looked up (SampleResult.containers; NULL: none named). Returns a new reference, or
 * NULL when memory ran out. */
json_t *culprit_report_object(const Culprits *c, const CulpritScope *scope, const ProcessInfo *infos, size_t n_infos,
                              const ContainerCache *containers);
