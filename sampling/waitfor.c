/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/macro.h"
#include "probes/pressure.h"
#include "sampling/waitfor.h"

/* Functions a thread waiting for memory sleeps in or under, as wchan (get_wchan() skips the
 * __sched ones: schedule_timeout(), io_schedule()) or as a frame of its stack; every one is inside
 * the kernel's psi_memstall_enter() or its swap-in path (kernel-facts.md: wait-resource). */
static const char *const memory_waits[] = {
        /* The sleep over memory.high (mm/memcontrol.c): its wchan on 6.12, and on 7.2. */
        "mem_cgroup_handle_over_high",
        "__mem_cgroup_handle_over_high",
        "reclaim_high",
        "try_charge_memcg",
        /* Reclaim and its throttles (mm/vmscan.c), direct compaction (mm/page_alloc.c). */
        "reclaim_throttle",
        "throttle_direct_reclaim",
        "try_to_free_pages",
        "try_to_free_mem_cgroup_pages",
        "do_try_to_free_pages",
        "shrink_node",
        "shrink_folio_list",
        "__alloc_pages_direct_reclaim",
        "__alloc_pages_direct_compact",
        "try_to_compact_pages",
        "__alloc_pages_slowpath",
        "__alloc_pages_may_oom",
        "mem_cgroup_out_of_memory",
        "mem_cgroup_oom_synchronize",
        /* A swap-in: its read and the wait for it (mm/memory.c, mm/swap_state.c, mm/page_io.c). */
        "do_swap_page",
        "swapin_readahead",
        "swap_cluster_readahead",
        "read_swap_cache_async",
        "__read_swap_cache_async",
        "swap_read_folio",
        "swap_readpage",
        "shmem_swapin_folio",
};

/* Functions of block io, writeback and fsync waits (block/, mm/page-writeback.c, mm/filemap.c,
 * fs/jbd2/): io_schedule() sleeps, counted as io stall and blkio delay, but for jbd2's
 * wait_transaction_locked(), a plain schedule() in D behind the journal's commit, which is in
 * neither (kernel-facts.md: wait-resource). */
static const char *const io_waits[] = {
        "bio_await",
        "submit_bio_wait",
        "blk_mq_get_tag",
        "rq_qos_wait",
        "wbt_wait",
        "__blkdev_direct_IO_simple",
        "__blkdev_direct_IO",
        "__iomap_dio_rw",
        "iomap_dio_rw",
        "balance_dirty_pages",
        "balance_dirty_pages_ratelimited_flags",
        "folio_wait_writeback",
        "wait_on_page_writeback",
        "__filemap_fdatawait_range",
        "file_write_and_wait_range",
        "filemap_write_and_wait_range",
        "__wait_on_buffer",
        "jbd2_log_wait_commit",
        "jbd2_complete_transaction",
        "wait_transaction_locked",
        "blkdev_issue_flush",
};

/* A frame "symbol" or "symbol [module]" is in table. */
static bool in_table(const char *frame, const char *const *table, size_t n) {
        size_t len = strcspn(frame, " ");

        for (size_t i = 0; i < n; i++)
                if (strlen(table[i]) == len && memcmp(table[i], frame, len) == 0)
                        return true;
        return false;
}

static bool any_in(const char *wchan, const WchanStack *stack, const char *const *table, size_t n) {
        if (wchan && wchan[0] && in_table(wchan, table, n))
                return true;
        for (size_t i = 0; stack && i < stack->n_frames; i++)
                if (in_table(stack->frames[i], table, n))
                        return true;
        return false;
}

WaitFor waitfor_classify(const char *wchan, uint32_t task_flags, const WchanStack *stack) {
        /* Memory first: a reclaimer waits on writeback in io's functions, under reclaim's. */
        if (task_flags & WAITFOR_PF_MEMALLOC || any_in(wchan, stack, memory_waits, ELEMENTSOF(memory_waits)))
                return WAIT_FOR_MEMORY;
        if (any_in(wchan, stack, io_waits, ELEMENTSOF(io_waits)))
                return WAIT_FOR_IO;
        return WAIT_FOR_UNKNOWN;
}

bool waitfor_needs_stack(const char *wchan, uint32_t task_flags) {
        /* An io wchan may still sit under reclaim: only a memory one, or the flag, is final. */
        return !(task_flags & WAITFOR_PF_MEMALLOC) && !any_in(wchan, NULL, memory_waits, ELEMENTSOF(memory_waits));
}

const char *waitfor_to_string(WaitFor w) {
        switch (w) {
        case WAIT_FOR_MEMORY:
                return "memory";
        case WAIT_FOR_IO:
                return "io";
        default:
                return NULL;
        }
}

bool waitfor_counts_for(WaitFor w, int res) {
        if (res == PSI_RESOURCE_MEMORY)
                return w != WAIT_FOR_IO;
        if (res == PSI_RESOURCE_IO)
                return w != WAIT_FOR_MEMORY;
        return true;
}
