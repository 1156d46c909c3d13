/* SPDX-License-Identifier: MIT */
/* The identities of a sample's reported processes (sampling/result.h), on a ranking and culprits
 * made by hand: as the VM showed (tests/vm), a dd that ended during the sample was among
 * the most delayed with no cgroup ("dd (?) waited 0.47 s") while the culprits named its cgroup from
 * the start walk; the most delayed now take it from there. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "sampling/culprits.h"
#include "sampling/rank.h"
#include "sampling/result.h"
#include "tests/unit/test-util.h"

static void test_ended_victim_cgroup(void **state) {
        ProcessDelta ranked[2] = {
                { .tgid = 595, .origin = PROCESS_ENDED, .uid = 0, .comm = "dd" },
                { .tgid = 596, .origin = PROCESS_ENDED, .uid = 0, .comm = "gone" },
        };
        Ranking ranking = { .procs = ranked, .n_procs = 2 };
        CulpritProcess cp[1] = {
                { .tgid = 595, .origin = PROCESS_ENDED, .uid = 0, .comm = "dd", .cgroup = "iow" },
        };
        Culprits culprits = { .procs = cp, .n_procs = 1 };
        CulpritScope scope = { .node = true };
        ProcessInfo items[8];
        ProcessInfoBuffer buf = { .items = items, .cap = 8 };
        SampleResult r = { .ranking = &ranking, .culprits = &culprits, .culprit_scope = &scope };
        /* An empty directory as /proc: nothing of the ended pids is read from it. */
        char dir[] = "/tmp/psidiag-result-XXXXXX";
        assert_non_null(mkdtemp(dir));
        int proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);

        sample_result_identify(&r, proc_fd, &buf, 4);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.n_culprit_procs, 1);
        assert_true(r.culprit_procs[0].has_cgroup);
        assert_string_equal(r.culprit_procs[0].cgroup, "/iow");
        assert_string_equal(r.procs[0].comm, "dd");
        assert_true(r.procs[0].has_cgroup);
        assert_string_equal(r.procs[0].cgroup, "/iow");
        /* One the culprits do not list stays unknown. */
        assert_string_equal(r.procs[1].comm, "gone");
        assert_false(r.procs[1].has_cgroup);

        /* Without a culprit pass, nothing to take it from. */
        r.culprits = NULL;
        sample_result_identify(&r, proc_fd, &buf, 4);
        assert_false(r.procs[0].has_cgroup);
        close(proc_fd);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ended_victim_cgroup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
