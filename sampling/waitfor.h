/* SPDX-License-Identifier: MIT */
/* What a thread in uninterruptible sleep (D) waits for: memory (reclaim, compaction, the sleep over
 * memory.high, a swap-in) or io (block io, writeback, fsync, direct io), told from its wchan, its
 * PF_* flags and, where the agent may read it, its kernel stack, as the kernel accounts such waits
 * (kernel-facts.md: wait-resource). Pure: it reads nothing and never logs. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "probes/wchan.h"

typedef enum WaitFor {
        WAIT_FOR_UNKNOWN = 0, /* nothing tells: a lock, a page cache read-in (io, or memory when it
                               * refaults the working set), a wchan the kernel did not give */
        WAIT_FOR_MEMORY,
        WAIT_FOR_IO,
} WaitFor;

/* PF_MEMALLOC (include/linux/sched.h): set around direct and memcg reclaim
 * (memalloc_noreclaim_save() in __perform_reclaim() and try_to_free_mem_cgroup_pages()), and
 * printed to any reader as field 9 of /proc/<tid>/stat. */
#define WAITFOR_PF_MEMALLOC 0x00000800u

/* The wait of a D thread: memory when its flags have PF_MEMALLOC or its wchan or a frame of stack
 * (NULL: not read) is a memory wait's; else io when one is an io wait's; else unknown. wchan ""
 * is unknown. */
WaitFor waitfor_classify(const char *wchan, uint32_t task_flags, const WchanStack *stack);

/* Whether wchan alone (or the flags) tell: a stack would add nothing. */
bool waitfor_needs_stack(const char *wchan, uint32_t task_flags);

/* "memory", "io", or NULL for unknown. */
const char *waitfor_to_string(WaitFor w);

/* Whether a wait w counts as blocked on the PSI resource res (probes/pressure.h: PSI_RESOURCE_*):
 * unless it is known to be a wait for the other one of io and memory. */
bool waitfor_counts_for(WaitFor w, int res);
