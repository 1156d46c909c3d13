/* SPDX-License-Identifier: MIT */
/* A memory cgroup's oom_kill counter, for counting OOM kills when /dev/kmsg cannot be read:
 * cgroup2 memory.events (hierarchical: a kill counts in the victim's cgroup and every ancestor;
 * a change is a file-modified event) or cgroup-v1 memory.oom_control (the memcg's own kills only;
 * OOMs are announced through an eventfd registered in cgroup.event_control, before the kill).
 * The parser is pure; the rest opens files beneath the mounts. Never logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "probes/sysroot.h"

typedef enum MemcgCounterKind {
        MEMCG_COUNTER_EVENTS,      /* cgroup2 memory.events */
        MEMCG_COUNTER_OOM_CONTROL, /* cgroup-v1 memory.oom_control */
} MemcgCounterKind;

const char *memcg_counter_kind_to_string(MemcgCounterKind k);

/* The value of the "oom_kill N" line of memory.events or memory.oom_control. 0, or -ENOENT when
 * no such line could be read (kernels before 4.13 have none; a line that is not "key N" costs
 * that line: base/parse.h, parse_keyed()). */
int memcg_parse_oom_kill(const char *buf, size_t len, uint64_t *ret);

/* Reads fd (a counter file) from its start and parses it. */
int memcg_read_oom_kill(int fd, uint64_t *ret);

/* Opens the oom_kill counter of cgroup path ("a/b", relative to the cgroup2 mount): its
 * memory.events when the cgroup2 memory controller is enabled there, else memory.oom_control of the
 * cgroup-v1 memcg of the same path (hybrid hosts). For the latter *ret_event_fd is an eventfd
 * (non-blocking) the kernel signals when the memcg goes out of memory; -1 for memory.events.
 * Returns 0, -ENOENT when the cgroup has no memory counter, or -errno. */
int memcg_open_oom_counter(const Sysroot *s, const char *path, MemcgCounterKind *ret_kind, int *ret_fd,
                           int *ret_event_fd);

/* A cgroup2 memory cgroup's state now (for kill incidents): memory.current, memory.max ("max":
 * has_max false), memory.swap.current, and memory.events oom_kill. Each is set where its file
 * could be read (none without the memory controller). */
typedef struct MemcgState {
        bool has_current, has_max, has_swap_current, has_oom_kill;
        uint64_t current_bytes, max_bytes, swap_current_bytes, oom_kill;
} MemcgState;

/* Reads them from the cgroup2 directory cgroup_fd. Never fails: what is missing stays unset. */
void memcg_read_state(int cgroup_fd, MemcgState *ret);
