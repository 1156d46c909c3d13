/* SPDX-License-Identifier: MIT */
/* What the prekill hook measures (kills/prekill.h), on a fake sysroot: a cgroup2 cgroup of two
 * processes, their /proc files, a fake taskstats whose delays grow between the readings. */
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "kills/prekill.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static const char status_grower[] = "Name:\tgrower\nTgid:\t101\nUid:\t1000\t1000\t1000\t1000\nVmRSS:\t   40960 kB\n"
                                    "RssAnon:\t   38912 kB\nRssFile:\t    2048 kB\nRssShmem:\t       0 kB\n"
                                    "VmSwap:\t    1024 kB\n";
static const char status_small[] = "Name:\tsh\nTgid:\t102\nUid:\t0\t0\t0\t0\nVmRSS:\t     512 kB\n"
                                   "RssAnon:\t     256 kB\nRssFile:\t     256 kB\nRssShmem:\t       0 kB\n"
                                   "VmSwap:\t       0 kB\n";

static void make_tree(char *dir) {
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "proc/self/mountinfo",
                                         "28 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - "
                                         "cgroup2 cgroup2 rw,nsdelegate\n"),
                         0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/cgroup.procs", "102\n101\n"), 0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/memory.current", "43515904\n"), 0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/memory.max", "52428800\n"), 0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/memory.stat", "anon 39845888\nfile 2097152\n"),
                         0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/memory.events",
                                         "low 0\nhigh 0\nmax 7\noom 0\noom_kill 0\n"),
                         0);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/shop/app/memory.pressure",
                                         "some avg10=42.00 avg60=12.00 avg300=3.00 total=9000000\n"
                                         "full avg10=30.00 avg60=9.00 avg300=2.00 total=7000000\n"),
                         0);
        assert_int_equal(fake_tree_write(dir, "proc/101/status", status_grower), 0);
        assert_int_equal(fake_tree_write(dir, "proc/101/comm", "grower\n"), 0);
        assert_int_equal(fake_tree_write(dir, "proc/102/status", status_small), 0);
        assert_int_equal(fake_tree_write(dir, "proc/102/comm", "sh\n"), 0);
}

static void test_measure(void **state) {
        char dir[] = "/tmp/psidiag-test-prekill-XXXXXX";
        static const uint64_t d101[_TASK_DELAY_MAX] = { 1000000, 0, 0, 5000000, 3000000 };
        static const uint64_t d102[_TASK_DELAY_MAX] = { 2000 };
        FakeTask tasks[] = { { .tid = 101, .stats = fake_task_stats(101, 101, "grower", d101) },
                             { .tid = 102, .stats = fake_task_stats(102, 102, "sh", d102) } };
        TaskstatsSource *ts = fake_taskstats_new(tasks, ELEMENTSOF(tasks));
        Sysroot *s = NULL;
        PrekillMeasure *m = NULL;
        usec_t now = now_usec(CLOCK_MONOTONIC);

        make_tree(dir);
        assert_int_equal(sysroot_open(dir, &s), 0);
        assert_int_equal(prekill_measure_new("/shop/app", now, &m), 0);
        assert_int_equal(prekill_measure_cgroup(m, s, NULL), 0);
        assert_false(m->gone);
        assert_int_equal(m->processes_total, 2);
        assert_int_equal(m->n_procs, 2);
        assert_true(m->has_pressure);
        assert_true(m->has_memory);
        assert_int_equal(m->memory.current_bytes, 43515904);
        assert_int_equal(m->memory.events.max, 7);

        /* A deadline gone by: nothing is read, and the next call goes on from there. */
        assert_false(prekill_measure_first(m, s, ts, now - 1));
        assert_int_equal(m->next_first, 0);
        assert_true(prekill_measure_first(m, s, ts, UINT64_MAX));
        fake_taskstats_set_growth(ts, 1000);
        assert_true(prekill_measure_last(m, ts, UINT64_MAX));
        prekill_measure_rank(m);

        const PrekillProcess *g = &m->procs[0], *sh = &m->procs[1];
        assert_int_equal(g->pid, 101);
        assert_string_equal(g->comm, "grower");
        assert_true(g->has_memory);
        assert_int_equal(g->memory.rss_kib, 40960);
        assert_int_equal(g->memory.anon_kib, 38912);
        assert_int_equal(g->memory.swap_kib, 1024);
        assert_int_equal(g->memory.uid, 1000);
        assert_true(g->has_first && g->has_last);
        assert_int_equal(g->first_ns[TASK_DELAY_RECLAIM], 5000000);
        assert_true(g->last_ns[TASK_DELAY_CPU] > g->first_ns[TASK_DELAY_CPU]); /* grew between the readings */
        assert_int_equal(sh->pid, 102);
        assert_int_equal(sh->memory.rss_kib, 512);
        assert_false(sh->has_cmdline); /* no cmdline file: a kernel-thread-like process */
        assert_true(m->first_mono_us >= now && m->last_mono_us >= m->first_mono_us);
        prekill_measure_free(m);

        /* A cgroup that is not there (killed and removed already). */
        assert_int_equal(prekill_measure_new("/shop/gone", now, &m), 0);
        assert_int_equal(prekill_measure_cgroup(m, s, NULL), 0);
        assert_true(m->gone);
        assert_int_equal(m->n_procs, 0);
        assert_true(prekill_measure_first(m, s, ts, now));
        prekill_measure_free(m);

        sysroot_free(s);
        taskstats_source_free(ts);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_measure),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
