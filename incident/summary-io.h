/* SPDX-License-Identifier: MIT */
/* The io culprit's part of a pressure incident's summary when the queue is writeback: buffered
 * writes that the flusher writes later, which anyone's fsync waits behind. Reads the incident's
 * JSON only (incident/summary.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* The node's page cache waiting for its disks at which the summary speaks of writeback, when it is
 * also at least an eighth of what the culprit wrote in the sample: a buffered writer's bytes wait
 * there (up to the dirty limits), a direct writer's never do, whatever else is dirty. */
#define SUMMARY_WRITEBACK_MIN_BYTES (16.0 * 1024 * 1024)
#define SUMMARY_WRITEBACK_MIN_SHARE 8

/* Where limits.io.writeback holds at least SUMMARY_WRITEBACK_MIN_BYTES, process p (a culprit) wrote
 * in the sample (its bytes counted as it dirtied them: buffered, the flusher writes them later),
 * and its cgroup's own dirty page cache is known (culprits.cgroups[].dirty_bytes) and holds at
 * least half of it: puts ": writeback of 1.9 GiB dirtied by /batch: dd (pid 5) dirtied 417 MiB in
 * the sample" and returns true. False, having put nothing, otherwise. */
bool summary_writeback_by_cgroup(FILE *f, const json_t *incident, const json_t *p);

/* Where the dominant culprit cgroup cg has no process listed (its processes used nothing the sample
 * measured: a writer held in balance_dirty_pages() all along, its writeback charged to its cgroup)
 * but holds at least half of the node's queue of at least SUMMARY_WRITEBACK_MIN_BYTES: puts ":
 * writeback of 273 MiB dirtied by /batch" and returns true; false, having put nothing, otherwise. */
bool summary_writeback_cgroup(FILE *f, const json_t *incident, const json_t *cg);

/* Where the node's page cache waiting for its disks is at least SUMMARY_WRITEBACK_MIN_BYTES and p
 * wrote in the sample, puts p's use as " dirtied 417 MiB, writeback of 2.0 GiB waiting on the
 * node" (after p's name) and returns true; false, having put nothing, otherwise. */
bool summary_writeback_usage(FILE *f, const json_t *incident, const json_t *p);
