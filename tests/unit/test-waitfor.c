/* SPDX-License-Identifier: MIT */
/* What a D thread waits for (sampling/waitfor.h), from its wchan, flags and stack; whose stall such
 * a wait counts in. Stacks and wchans as the Debian guests' kernels print them (tests/vm: 6.12
 * names the sleep over memory.high mem_cgroup_handle_over_high, 7.2 __mem_cgroup_handle_over_high). */
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "probes/pressure.h"
#include "sampling/waitfor.h"
#include "tests/unit/test-util.h"

static WchanStack stack(const char *const *frames, size_t n) {
        WchanStack st = { .n_frames = n };

        for (size_t i = 0; i < n; i++)
                snprintf(st.frames[i], sizeof st.frames[i], "%s", frames[i]);
        return st;
}

static void test_classify(void **state) {
        static const char *const reclaim[] = { "folio_wait_bit_common", "shrink_folio_list",
                                               "shrink_lruvec",         "shrink_node",
                                               "do_try_to_free_pages",  "try_to_free_mem_cgroup_pages",
                                               "try_charge_memcg" };
        static const char *const dio[] = { "bio_await", "submit_bio_wait", "__blkdev_direct_IO_simple",
                                           "blkdev_write_iter", "vfs_write" };
        static const char *const fsync_mod[] = { "jbd2_log_wait_commit [jbd2]", "ext4_sync_file [ext4]" };
        static const char *const mutex[] = { "__mutex_lock", "do_truncate", "path_openat" };
        WchanStack st;

        assert_int_equal(waitfor_classify("mem_cgroup_handle_over_high", 0, NULL), WAIT_FOR_MEMORY);
        assert_int_equal(waitfor_classify("__mem_cgroup_handle_over_high", 0, NULL), WAIT_FOR_MEMORY);
        assert_int_equal(waitfor_classify("blk_mq_get_tag", 0, NULL), WAIT_FOR_IO);
        assert_int_equal(waitfor_classify("balance_dirty_pages", 0, NULL), WAIT_FOR_IO);
        assert_int_equal(waitfor_classify("folio_wait_bit_common", 0, NULL), WAIT_FOR_UNKNOWN);
        assert_int_equal(waitfor_classify("", 0, NULL), WAIT_FOR_UNKNOWN);
        assert_int_equal(waitfor_classify(NULL, 0, NULL), WAIT_FOR_UNKNOWN);
        /* PF_MEMALLOC: in reclaim, whatever it sleeps in. */
        assert_int_equal(waitfor_classify("blk_mq_get_tag", WAITFOR_PF_MEMALLOC | 0x400100, NULL), WAIT_FOR_MEMORY);
        /* Reclaim waiting on writeback: io's frame innermost, reclaim's under it. */
        st = stack(reclaim, ELEMENTSOF(reclaim));
        assert_int_equal(waitfor_classify("folio_wait_bit_common", 0, &st), WAIT_FOR_MEMORY);
        st = stack(dio, ELEMENTSOF(dio));
        assert_int_equal(waitfor_classify("bio_await", 0, &st), WAIT_FOR_IO);
        /* A module's frame keeps its " [module]" (probes/wchan.h): the symbol alone is looked up. */
        st = stack(fsync_mod, ELEMENTSOF(fsync_mod));
        assert_int_equal(waitfor_classify("jbd2_log_wait_commit", 0, &st), WAIT_FOR_IO);
        st = stack(mutex, ELEMENTSOF(mutex));
        assert_int_equal(waitfor_classify("do_truncate", 0, &st), WAIT_FOR_UNKNOWN);
        /* A prefix is not the symbol. */
        assert_int_equal(waitfor_classify("balance_dirty_pages_x", 0, NULL), WAIT_FOR_UNKNOWN);
}

static void test_needs_stack(void **state) {
        assert_false(waitfor_needs_stack("__mem_cgroup_handle_over_high", 0));
        assert_false(waitfor_needs_stack("folio_wait_bit_common", WAITFOR_PF_MEMALLOC));
        /* An io wchan may sit under a swap-in (a synchronous swap read waits in submit_bio_wait). */
        assert_true(waitfor_needs_stack("submit_bio_wait", 0));
        assert_true(waitfor_needs_stack("folio_wait_bit_common", 0));
}

static void test_counts_for(void **state) {
        assert_true(waitfor_counts_for(WAIT_FOR_MEMORY, PSI_RESOURCE_MEMORY));
        assert_false(waitfor_counts_for(WAIT_FOR_IO, PSI_RESOURCE_MEMORY));
        assert_true(waitfor_counts_for(WAIT_FOR_UNKNOWN, PSI_RESOURCE_MEMORY));
        assert_true(waitfor_counts_for(WAIT_FOR_IO, PSI_RESOURCE_IO));
        assert_false(waitfor_counts_for(WAIT_FOR_MEMORY, PSI_RESOURCE_IO));
        assert_true(waitfor_counts_for(WAIT_FOR_UNKNOWN, PSI_RESOURCE_IO));
        assert_true(waitfor_counts_for(WAIT_FOR_IO, PSI_RESOURCE_CPU));
        assert_string_equal(waitfor_to_string(WAIT_FOR_MEMORY), "memory");
        assert_string_equal(waitfor_to_string(WAIT_FOR_IO), "io");
        assert_null(waitfor_to_string(WAIT_FOR_UNKNOWN));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_needs_stack),
                cmocka_unit_test(test_counts_for),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
