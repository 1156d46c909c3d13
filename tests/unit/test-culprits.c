/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "incident/culprit-report.h"
#include "incident/onwhat-report.h"
#include "sampling/culprits.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static ProcessDelays *add(Snapshot *s, pid_t tgid, uint8_t origin, pid_t ppid, const char *comm, uint64_t cpu_ns) {
        ProcessDelays p = { .tgid = tgid,
                            .origin = origin,
                            .ppid = ppid,
                            .uid = origin ? 1000 : -1,
                            .cpu_run_ns = cpu_ns,
                            .has_cpu_run = true };

        snprintf(p.comm, sizeof p.comm, "%s", comm);
        assert_int_equal(snapshot_append_process(s, &p), 0);
        snapshot_sort(s);
        return (ProcessDelays *) snapshot_find_process(s, tgid);
}

static void mem(Snapshot *s, pid_t tgid, uint64_t rss_mib, uint64_t majflt) {
        ProcessDelays *p = (ProcessDelays *) snapshot_find_process(s, tgid);
        p->rss_bytes = rss_mib << 20;
        p->majflt = majflt;
        p->has_mem = true;
}

static void io(Snapshot *s, pid_t tgid, uint64_t r, uint64_t w) {
        ProcessDelays *p = (ProcessDelays *) snapshot_find_process(s, tgid);
        p->read_bytes = r;
        p->write_bytes = w;
        p->has_io = true;
}

/* A cgroup of a walk: path, parent index, cpu counter (us; UINT64_MAX: none), own processes. */
static void cg(CgroupUsages *t, const char *path, size_t parent, uint64_t cpu_us, const pid_t *pids, size_t n) {
        size_t len = strlen(path);

        t->items = realloc(t->items, (t->n + 1) * sizeof *t->items);
        t->names = realloc(t->names, t->names_len + len + 1);
        memcpy(t->names + t->names_len, path, len + 1);
        t->items[t->n] = (CgroupUsageEntry) {
                .path = t->names_len,
                .parent = parent,
                .first_pid = t->pids.n,
                .n_pids = n,
                .usage = { .has_cpu = cpu_us != UINT64_MAX, .cpu_us = cpu_us != UINT64_MAX ? cpu_us : 0 },
        };
        for (size_t i = 0; i < n; i++)
                assert_int_equal(tid_list_push(&t->pids, pids[i]), 0);
        t->names_len += len + 1;
        t->n++;
}

static void test_cpu(void **state) {
        Snapshot a = {}, b = {};
        Culprits c = {};
        pid_t victims[] = { 10 };

        add(&a, 10, PROCESS_MEASURED, 0, "", 100 * NS_PER_MS); /* the stalled worker */
        add(&a, 20, PROCESS_MEASURED, 0, "", 100 * NS_PER_MS); /* the neighbour */
        add(&a, 30, PROCESS_MEASURED, 0, "", 5 * NS_PER_MS);   /* idle */
        add(&b, 10, PROCESS_MEASURED, 0, "", 300 * NS_PER_MS);
        add(&b, 20, PROCESS_MEASURED, 0, "", 900 * NS_PER_MS);
        add(&b, 30, PROCESS_MEASURED, 0, "", 5 * NS_PER_MS);
        add(&b, 40, PROCESS_MEASURED, 0, "", 500 * NS_PER_MS)->born_in_sample = true; /* new: all of it */
        add(&b, 50, PROCESS_MEASURED, 0, "", 700 * NS_PER_MS);                        /* moved in: none of it */

        CulpritsInput in = {
                .resource = PSI_RESOURCE_CPU, .a = &a, .b = &b, .victims = victims, .n_victims = 1, .top = 2
        };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.total.cpu_us, 200000 + 800000 + 500000);
        assert_int_equal(c.n_procs, 2);
        assert_int_equal(c.procs[0].tgid, 20);
        assert_int_equal(c.procs[0].usage.cpu_us, 800000);
        assert_false(c.procs[0].victim);
        assert_int_equal(c.procs[1].tgid, 40);
        assert_true(c.procs[0].share > 0.53 && c.procs[0].share < 0.54);
        assert_int_equal(c.n_cgroups, 0); /* no walk given */

        /* The victim, when it ranks. */
        in.top = 10;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 3); /* 30 used nothing */
        assert_int_equal(c.procs[2].tgid, 10);
        assert_true(c.procs[2].victim);

        /* A sample of 0 ms: lifetime totals, 50 included. */
        in.a = NULL;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.procs[0].tgid, 20);
        assert_int_equal(c.procs[1].tgid, 50);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
}

static void test_aggregate(void **state) {
        Snapshot a = {}, b = {};
        CgroupUsages ga = {}, gb = {};
        Culprits c = {};
        pid_t make[] = { 7 };

        add(&a, 7, PROCESS_MEASURED, 0, "", 10 * NS_PER_MS);
        add(&a, 8, PROCESS_MEASURED, 0, "", 0); /* a compiler running at A, ended in the sample */
        add(&b, 7, PROCESS_MEASURED, 0, "", 12 * NS_PER_MS);
        add(&b, 8, PROCESS_ENDED, 7, "cc1", 60 * NS_PER_MS);
        add(&b, 100, PROCESS_SHORT, 7, "cc1", 100 * NS_PER_MS);
        add(&b, 101, PROCESS_SHORT, 7, "cc1", 100 * NS_PER_MS);
        add(&b, 102, PROCESS_SHORT, 7, "sh", 1 * NS_PER_MS);
        add(&b, 103, PROCESS_SHORT, 102, "cc1", 100 * NS_PER_MS); /* the shell's child: make's grandchild */
        add(&b, 200, PROCESS_SHORT, 999, "cc1", 50 * NS_PER_MS);  /* a parent gone too: no cgroup known */
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 1000, NULL, 0);
        cg(&ga, "build", 0, 100, make, 1);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 1500, NULL, 0);
        cg(&gb, "build", 0, 500, make, 1);

        CulpritsInput in = {
                .resource = PSI_RESOURCE_CPU, .a = &a, .b = &b, .ga = &ga, .gb = &gb, .scope_is_node = true, .top = 10
        };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 5);
        assert_int_equal(c.procs[0].tgid, 0);
        assert_string_equal(c.procs[0].comm, "cc1");
        assert_string_equal(c.procs[0].cgroup, "build");
        assert_int_equal(c.procs[0].ended, 3);
        assert_int_equal(c.procs[0].usage.cpu_us, 300000);
        /* The compiler measured at A keeps its pid: it ended, it is no stranger. */
        assert_int_equal(c.procs[1].tgid, 8);
        assert_int_equal(c.procs[1].origin, PROCESS_ENDED);
        assert_int_equal(c.procs[1].usage.cpu_us, 60000);
        assert_string_equal(c.procs[2].comm, "cc1");
        assert_null(c.procs[2].cgroup);
        assert_int_equal(c.procs[2].ended, 1);
        assert_int_equal(c.procs[3].tgid, 7);
        assert_string_equal(c.procs[4].comm, "sh");
        assert_int_equal(c.procs[4].ended, 1);
        /* The build cgroup's own counters have its ended compilers. */
        assert_int_equal(c.n_cgroups, 1);
        assert_string_equal(c.cgroups[0].path, "build");
        assert_true(c.cgroups[0].from_counters);
        assert_int_equal(c.cgroups[0].usage.cpu_us, 400);
        assert_true(c.cgroups[0].share == 1.0);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
}

/* Where the walks found the most delayed: the end walk's cgroup, else the start walk's (one that
 * ended in the sample), else none. */
static void test_victim_cgroups(void **state) {
        Snapshot a = {}, b = {};
        CgroupUsages ga = {}, gb = {};
        Culprits c = {};
        pid_t start_build[] = { 7, 8 }, end_build[] = { 7 }, end_other[] = { 9 };
        pid_t victims[] = { 8, 9, 7, 300 };

        add(&a, 7, PROCESS_MEASURED, 0, "", 0);
        add(&a, 8, PROCESS_MEASURED, 0, "", 0);
        add(&b, 7, PROCESS_MEASURED, 0, "", 1 * NS_PER_MS);
        add(&b, 8, PROCESS_ENDED, 7, "dd", 1 * NS_PER_MS);
        add(&b, 9, PROCESS_MEASURED, 0, "", 1 * NS_PER_MS);
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 1000, NULL, 0);
        cg(&ga, "build", 0, 100, start_build, 2);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 1500, NULL, 0);
        cg(&gb, "build", 0, 500, end_build, 1);
        cg(&gb, "other", 0, 500, end_other, 1);
        CulpritsInput in = { .resource = PSI_RESOURCE_CPU,
                             .a = &a,
                             .b = &b,
                             .ga = &ga,
                             .gb = &gb,
                             .scope_is_node = true,
                             .victims = victims,
                             .n_victims = 4,
                             .top = 1 };

        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 1); /* cut to top: the victims' cgroups are not */
        assert_string_equal(culprits_victim_cgroup(&c, 7), "build");
        assert_string_equal(culprits_victim_cgroup(&c, 8), "build");
        assert_string_equal(culprits_victim_cgroup(&c, 9), "other");
        assert_null(culprits_victim_cgroup(&c, 300));
        assert_null(culprits_victim_cgroup(NULL, 7));
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
}

/* Processes rank by program (comm and cgroup), live and ended alike: as in a sid guest (7.2 under
 * TCG), six sleeps of the stalled shell's loop, 331 ms in all, against stress-ng's four workers of
 * 330, 324, 320 and 318 ms in /batch. Ranked one by one the sleeps came first; as programs,
 * stress-ng is first with its 4 workers, and an ended worker of it joins them. */
static void test_programs(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        Snapshot a = {}, b = {};
        CgroupUsages ga = {}, gb = {};
        Culprits c = {};
        pid_t victim[] = { 10 }, batch_a[] = { 20, 21, 22, 23, 24, 25 }, batch_b[] = { 20, 21, 22, 23, 24 };
        pid_t other[] = { 30 }, victims[] = { 10 };
        const uint64_t worker_ms[] = { 330, 324, 320, 318 };
        const uint64_t sleep_ms[] = { 56, 55, 55, 55, 55, 55 };
        int proc_fd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "10/comm", "sh\n"), 0);
        for (pid_t pid = 20; pid <= 24; pid++) {
                char path[32];
                snprintf(path, sizeof path, "%d/comm", pid);
                assert_int_equal(fake_tree_write(dir, path, "stress-ng\n"), 0);
        }
        assert_int_equal(fake_tree_write(dir, "30/comm", "stress-ng\n"), 0); /* another cgroup's */
        proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);

        add(&a, 10, PROCESS_MEASURED, 0, "", 0);
        add(&b, 10, PROCESS_MEASURED, 0, "", 2 * NS_PER_MS);
        add(&a, 20, PROCESS_MEASURED, 0, "", 0); /* stress-ng's parent: idle */
        add(&b, 20, PROCESS_MEASURED, 0, "", 0);
        for (pid_t i = 0; i < 4; i++) {
                add(&a, 21 + i, PROCESS_MEASURED, 0, "", 0);
                add(&b, 21 + i, PROCESS_MEASURED, 0, "", worker_ms[i] * NS_PER_MS);
        }
        add(&a, 25, PROCESS_MEASURED, 0, "", 0);
        add(&b, 25, PROCESS_ENDED, 20, "stress-ng", 4 * NS_PER_MS); /* a worker that ended */
        add(&a, 30, PROCESS_MEASURED, 0, "", 0);
        add(&b, 30, PROCESS_MEASURED, 0, "", 3 * NS_PER_MS);
        for (pid_t i = 0; i < 6; i++)
                add(&b, 100 + i, PROCESS_SHORT, 10, "sleep", sleep_ms[i] * NS_PER_MS);
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 0, NULL, 0);
        cg(&ga, "victim", 0, 0, victim, 1);
        cg(&ga, "batch", 0, 0, batch_a, 6);
        cg(&ga, "other", 0, 0, other, 1);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 3000, NULL, 0);
        cg(&gb, "victim", 0, 333, victim, 1);
        cg(&gb, "batch", 0, 1296, batch_b, 5);
        cg(&gb, "other", 0, 3, other, 1);

        CulpritsInput in = { .resource = PSI_RESOURCE_CPU,
                             .a = &a,
                             .b = &b,
                             .ga = &ga,
                             .gb = &gb,
                             .scope_is_node = true,
                             .victims = victims,
                             .n_victims = 1,
                             .top = 10,
                             .comm_of = proc_read_comm,
                             .comm_fd = proc_fd };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_string_equal(c.procs[0].comm, "stress-ng");
        assert_int_equal(c.n_procs, 4);
        assert_string_equal(c.procs[0].cgroup, "batch");
        assert_int_equal(c.procs[0].processes, 5); /* the 4 live workers and the ended one */
        assert_int_equal(c.procs[0].ended, 1);
        assert_int_equal(c.procs[0].tgid, 21); /* the one that used most */
        assert_int_equal(c.procs[0].origin, PROCESS_MEASURED);
        assert_int_equal(c.procs[0].n_pids, 4);
        for (unsigned i = 0; i < 4; i++)
                assert_int_equal(c.procs[0].pids[i], 21 + (pid_t) i);
        assert_int_equal(c.procs[0].usage.cpu_us, (330 + 324 + 320 + 318 + 4) * 1000);
        assert_false(c.procs[0].victim);
        /* The victim's own sleeps, one aggregate under the shell's cgroup. */
        assert_int_equal(c.procs[1].tgid, 0);
        assert_string_equal(c.procs[1].comm, "sleep");
        assert_string_equal(c.procs[1].cgroup, "victim");
        assert_int_equal(c.procs[1].processes, 6);
        assert_int_equal(c.procs[1].ended, 6);
        assert_int_equal(c.procs[1].n_pids, 0);
        assert_int_equal(c.procs[1].usage.cpu_us, 331000);
        /* Another cgroup's stress-ng is another program; the shell alone, a victim. */
        assert_int_equal(c.procs[2].tgid, 30);
        assert_int_equal(c.procs[2].processes, 1);
        assert_int_equal(c.procs[3].tgid, 10);
        assert_string_equal(c.procs[3].comm, "sh");
        assert_true(c.procs[3].victim);

        /* The incident's entry: one program, its count and its live pids. */
        CulpritScope scope = { .resource = PSI_RESOURCE_CPU, .node = true };
        ProcessInfo infos[10] = {};
        json_t *o = culprit_report_object(&c, &scope, infos, c.n_procs, NULL);
        json_t *p = json_array_get(json_object_get(o, "processes"), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), 21);
        assert_int_equal(json_integer_value(json_object_get(p, "processes")), 5);
        assert_int_equal(json_integer_value(json_object_get(p, "ended_processes")), 1);
        assert_int_equal(json_array_size(json_object_get(p, "pids")), 4);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(p, "pids"), 3)), 24);
        assert_false(json_is_true(json_object_get(p, "ended")));
        p = json_array_get(json_object_get(o, "processes"), 1);
        assert_true(json_is_null(json_object_get(p, "pid")));
        assert_int_equal(json_integer_value(json_object_get(p, "processes")), 6);
        assert_int_equal(json_array_size(json_object_get(p, "pids")), 0);
        json_decref(o);

        /* A live process whose comm cannot be read is an entry of its own. */
        char gone[64];
        snprintf(gone, sizeof gone, "%s/22/comm", dir);
        assert_int_equal(unlink(gone), 0);
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.procs[0].processes, 4);
        assert_int_equal(c.procs[0].usage.cpu_us, (330 + 320 + 318 + 4) * 1000);
        assert_int_equal(c.procs[1].tgid, 0); /* the sleeps, 331 ms */
        assert_int_equal(c.procs[2].tgid, 22);
        assert_int_equal(c.procs[2].processes, 1);

        /* More live processes than an entry lists pids of. */
        Snapshot pool = {};
        CgroupUsages gpool = {};
        pid_t many[CULPRIT_PIDS_MAX + 4];
        for (pid_t i = 0; i < (pid_t) ELEMENTSOF(many); i++) {
                char path[32];
                many[i] = 200 + i;
                snprintf(path, sizeof path, "%d/comm", many[i]);
                assert_int_equal(fake_tree_write(dir, path, "worker\n"), 0);
                add(&pool, many[i], PROCESS_MEASURED, 0, "", (uint64_t) (100 + i) * NS_PER_MS)->born_in_sample = true;
        }
        cg(&gpool, "", CGROUP_USAGE_NO_PARENT, 3000, NULL, 0);
        cg(&gpool, "pool", 0, 2000, many, ELEMENTSOF(many));
        in.b = &pool;
        in.ga = NULL;
        in.gb = &gpool;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 1);
        assert_int_equal(c.procs[0].processes, ELEMENTSOF(many));
        assert_int_equal(c.procs[0].n_pids, CULPRIT_PIDS_MAX);
        assert_int_equal(c.procs[0].pids[0], many[ELEMENTSOF(many) - 1]); /* most use first */
        assert_int_equal(c.procs[0].tgid, many[ELEMENTSOF(many) - 1]);

        close(proc_fd);
        assert_int_equal(fake_tree_remove(dir), 0);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        snapshot_done(&pool);
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
        cgroup_usages_done(&gpool);
}

/* The spawner of an aggregate: the nearest ancestor alive at the end, up the exit records'
 * parents through ancestors that ended (kernel-facts.md: exit-records), named from /proc. */
static void test_spawner(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX";
        Snapshot a = {}, b = {};
        Culprits c = {};
        int proc_fd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "7/comm", "make\n"), 0);
        assert_int_equal(fake_tree_write_bytes(dir, "7/cmdline", "make\0-j4\0", 9), 0); /* NUL-separated */
        assert_int_equal(fake_tree_write(dir, "5/comm", "bash\n"), 0);
        assert_int_equal(fake_tree_write_bytes(dir, "5/cmdline", "-bash\0", 6), 0);
        assert_int_equal(fake_tree_write(dir, "1/comm", "systemd\n"), 0);
        proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);

        /* make (7) alive; gcc 8 running at A ended; its cc1s started and ended under it. */
        add(&a, 7, PROCESS_MEASURED, 0, "", 0);
        add(&a, 8, PROCESS_MEASURED, 0, "", 0);
        add(&b, 7, PROCESS_MEASURED, 0, "", 1 * NS_PER_MS);
        add(&b, 8, PROCESS_ENDED, 7, "gcc", 1 * NS_PER_MS);
        add(&b, 100, PROCESS_SHORT, 8, "cc1", 100 * NS_PER_MS);
        add(&b, 101, PROCESS_SHORT, 8, "cc1", 100 * NS_PER_MS);
        add(&b, 102, PROCESS_SHORT, 7, "gcc", 1 * NS_PER_MS); /* a gcc born and ended in the sample */
        add(&b, 103, PROCESS_SHORT, 102, "cc1", 100 * NS_PER_MS);
        add(&b, 104, PROCESS_SHORT, 7, "cc1", 100 * NS_PER_MS);
        CulpritsInput in = { .resource = PSI_RESOURCE_CPU, .a = &a, .b = &b, .top = 10 };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_null(c.procs[0].spawner); /* not named before culprits_read_spawners() */
        assert_int_equal(culprits_read_spawners(&c, proc_fd), 0);
        assert_int_equal(c.procs[0].tgid, 0);
        assert_string_equal(c.procs[0].comm, "cc1");
        assert_int_equal(c.procs[0].ended, 4);
        assert_non_null(c.procs[0].spawner);
        assert_int_equal(c.procs[0].spawner->pid, 7);
        assert_int_equal(c.procs[0].spawner->processes, 4);
        assert_memory_equal(c.procs[0].spawner->comm, "make", 4);
        assert_int_equal(c.procs[0].spawner->comm_len, 4);
        assert_string_equal(c.procs[0].spawner->cmdline, "make -j4");
        for (size_t i = 0; i < c.n_procs; i++)
                if (c.procs[i].tgid > 0)
                        assert_null(c.procs[i].spawner); /* single processes have none */

        /* The spawner ended too: make 7 ended in the sample, its shell (5, outside the scope) is
         * still in /proc. */
        Snapshot b2 = {};
        add(&b2, 7, PROCESS_ENDED, 5, "make", 1 * NS_PER_MS);
        add(&b2, 8, PROCESS_ENDED, 7, "gcc", 1 * NS_PER_MS);
        add(&b2, 100, PROCESS_SHORT, 8, "cc1", 100 * NS_PER_MS);
        add(&b2, 104, PROCESS_SHORT, 7, "cc1", 100 * NS_PER_MS);
        in.b = &b2;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(culprits_read_spawners(&c, proc_fd), 0);
        assert_int_equal(c.procs[0].tgid, 0);
        assert_non_null(c.procs[0].spawner);
        assert_int_equal(c.procs[0].spawner->pid, 5);
        assert_string_equal(c.procs[0].spawner->cmdline, "-bash");
        assert_int_equal(c.procs[0].spawner->processes, 2);

        /* No live ancestor: the shell is gone from /proc too. */
        Snapshot b3 = {};
        add(&b3, 7, PROCESS_ENDED, 6, "make", 1 * NS_PER_MS);
        add(&b3, 100, PROCESS_SHORT, 7, "cc1", 100 * NS_PER_MS);
        in.b = &b3;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(culprits_read_spawners(&c, proc_fd), 0);
        assert_int_equal(c.procs[0].tgid, 0);
        assert_null(c.procs[0].spawner);
        /* Nor when the chain reaches a process of the start that ended unheard (8: in a, not in
         * b): its parent is unknown, and pid 8 in /proc would be another process. */
        Snapshot b4 = {};
        add(&b4, 7, PROCESS_MEASURED, 0, "", 1 * NS_PER_MS);
        add(&b4, 100, PROCESS_SHORT, 8, "cc1", 100 * NS_PER_MS);
        in.b = &b4;
        assert_int_equal(fake_tree_write(dir, "8/comm", "reused\n"), 0);
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(culprits_read_spawners(&c, proc_fd), 0);
        assert_null(c.procs[0].spawner);

        /* The JSON: the aggregate's spawner, null for a single process. */
        in.b = &b;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(culprits_read_spawners(&c, proc_fd), 0);
        CulpritScope scope = { .resource = PSI_RESOURCE_CPU, .node = true };
        ProcessInfo infos[10] = {};
        json_t *o = culprit_report_object(&c, &scope, infos, c.n_procs, NULL);
        assert_non_null(o);
        json_t *sp = json_object_get(json_array_get(json_object_get(o, "processes"), 0), "spawner");
        assert_int_equal(json_integer_value(json_object_get(sp, "pid")), 7);
        assert_string_equal(json_string_value(json_object_get(sp, "comm")), "make");
        assert_string_equal(json_string_value(json_object_get(sp, "cmdline")), "make -j4");
        assert_int_equal(json_integer_value(json_object_get(sp, "processes")), 4);
        json_t *last = json_array_get(json_object_get(o, "processes"), c.n_procs - 1);
        assert_true(json_is_null(json_object_get(last, "spawner")));
        json_decref(o);

        close(proc_fd);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        snapshot_done(&b2);
        snapshot_done(&b3);
        snapshot_done(&b4);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static TaskStats exit_record(pid_t pid, pid_t ppid, const char *comm, uint64_t hiwater_kib, uint64_t write_bytes) {
        TaskStats t = { .version = 16, .pid = pid, .tgid = pid, .ppid = ppid, .uid = 1000, .has_cpu_run = true };

        snprintf(t.comm, sizeof t.comm, "%s", comm);
        t.hiwater_rss_kib = hiwater_kib;
        t.has_hiwater_rss = true;
        t.write_bytes = write_bytes;
        t.has_io = true;
        return t;
}

/* A memory sample that spans an OOM kill: the grower killed mid-sample stays the first culprit,
 * with the size its exit record says it reached, ended, with its pid; the page-cache reader
 * second. */
static void test_killed_grower(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        Culprits c = {};
        TaskStats t;

        add(&a, 1, PROCESS_MEASURED, 0, "", 0); /* the page-cache reader */
        add(&a, 2, PROCESS_MEASURED, 0, "", 0); /* the grower */
        add(&a, 3, PROCESS_MEASURED, 0, "", 0); /* idle */
        mem(&a, 1, 8, 100);
        mem(&a, 2, 30, 0);
        mem(&a, 3, 4, 0);
        add(&b, 1, PROCESS_MEASURED, 0, "", 0);
        add(&b, 3, PROCESS_MEASURED, 0, "", 0);
        mem(&b, 1, 12, 900);
        mem(&b, 3, 4, 0);
        t = exit_record(2, 1, "grower", 46 << 10, 0); /* 46 MiB when the OOM killer ended it */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);

        CulpritsInput in = { .resource = PSI_RESOURCE_MEMORY, .a = &a, .b = &b, .top = 5 };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 3);
        assert_int_equal(c.procs[0].tgid, 2);
        assert_int_equal(c.procs[0].origin, PROCESS_ENDED);
        assert_int_equal(c.procs[0].usage.rss_bytes, 46ull << 20);
        assert_int_equal(c.procs[0].usage.rss_growth_bytes, 16 << 20);
        assert_string_equal(c.procs[0].comm, "grower");
        assert_int_equal(c.procs[1].tgid, 1);

        CulpritScope scope = { .resource = PSI_RESOURCE_MEMORY, .node = true };
        ProcessInfo infos[5] = {};
        json_t *o = culprit_report_object(&c, &scope, infos, c.n_procs, NULL);
        json_t *p = json_array_get(json_object_get(o, "processes"), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), 2);
        assert_true(json_is_true(json_object_get(p, "ended")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "usage"), "rss_bytes")), 46 << 20);
        assert_true(json_is_null(json_object_get(p, "spawner")));
        json_decref(o);

        culprits_done(&c);
        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

/* A storm of short writers: the bytes their exit records carry are in their aggregate, not only
 * in their cgroup's counter. */
static void test_short_writers(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        Culprits c = {};
        TaskStats t;

        add(&a, 7, PROCESS_MEASURED, 0, "", 0); /* the spawner */
        add(&a, 9, PROCESS_MEASURED, 0, "", 0); /* a steady writer */
        io(&a, 7, 0, 0);
        io(&a, 9, 0, 1 << 20);
        add(&b, 7, PROCESS_MEASURED, 0, "", 0);
        add(&b, 9, PROCESS_MEASURED, 0, "", 0);
        io(&b, 7, 0, 0);
        io(&b, 9, 0, 9 << 20); /* 8 MiB in the sample */
        for (pid_t pid = 100; pid < 105; pid++) {
                t = exit_record(pid, 7, "writer", 1 << 10, 4 << 20);
                assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        }
        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);

        CulpritsInput in = { .resource = PSI_RESOURCE_IO, .a = &a, .b = &b, .top = 5 };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 2);
        assert_int_equal(c.procs[0].tgid, 0);
        assert_string_equal(c.procs[0].comm, "writer");
        assert_int_equal(c.procs[0].ended, 5);
        assert_int_equal(c.procs[0].usage.write_bytes, 20 << 20);
        assert_int_equal(c.procs[1].tgid, 9);
        assert_int_equal(c.total.write_bytes, 28 << 20);

        culprits_done(&c);
        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

/* A parent's /proc/<pid>/io takes in what it reaps (kernel-facts.md: reaped-io): the spawner of
 * the writers, and of a shell whose child wrote too, is left with its own bytes, and nothing
 * counts twice. One that only reaped drops out. */
static void test_reaped_io(void **state) {
        Snapshot a = {}, b = {};
        ExitRecords e = {};
        Culprits c = {};
        TaskStats t;

        add(&a, 7, PROCESS_MEASURED, 0, "", 0);  /* the spawner: 2 MiB of its own */
        add(&a, 8, PROCESS_MEASURED, 0, "", 0);  /* a reaper that writes nothing */
        add(&a, 9, PROCESS_MEASURED, 0, "", 0);  /* a steady writer: 8 MiB */
        add(&a, 50, PROCESS_MEASURED, 0, "", 0); /* 8's child, measured at the start, ends */
        io(&a, 7, 0, 0);
        io(&a, 8, 0, 0);
        io(&a, 9, 0, 1 << 20);
        io(&a, 50, 0, 1 << 20);
        add(&b, 7, PROCESS_MEASURED, 0, "", 0);
        add(&b, 8, PROCESS_MEASURED, 0, "", 0);
        add(&b, 9, PROCESS_MEASURED, 0, "", 0);
        io(&b, 7, 0, (2 + 20 + 1 + 3) << 20);
        io(&b, 8, 0, 5 << 20); /* 50's whole life, reaped */
        io(&b, 9, 0, 9 << 20);
        for (pid_t pid = 100; pid < 105; pid++) {
                t = exit_record(pid, 7, "writer", 1 << 10, 4 << 20);
                assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        }
        t = exit_record(111, 110, "tar", 1 << 10, 3 << 20); /* the shell's child */
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_record(110, 7, "sh", 1 << 10, 1 << 20);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        t = exit_record(50, 8, "gzip", 1 << 10, 5 << 20);
        assert_int_equal(exit_records_add(&e, &t, NULL), 0);
        assert_int_equal(snapshot_merge_exits(&b, &a, NULL, &e), 0);

        CulpritsInput in = { .resource = PSI_RESOURCE_IO, .a = &a, .b = &b, .top = 10 };
        assert_int_equal(culprits_build(&c, &in), 0);
        uint64_t spawner = UINT64_MAX;
        for (size_t i = 0; i < c.n_procs; i++) {
                assert_int_not_equal(c.procs[i].tgid, 8); /* it only reaped */
                if (c.procs[i].tgid == 7)
                        spawner = c.procs[i].usage.write_bytes;
        }
        assert_int_equal(spawner, 2 << 20);
        /* 2 (spawner) + 8 (steady) + 20 (writers) + 1 (sh) + 3 (tar) + 4 (gzip's growth in the sample). */
        assert_int_equal(c.total.write_bytes, 38 << 20);

        culprits_done(&c);
        exit_records_done(&e);
        snapshot_done(&a);
        snapshot_done(&b);
}

static void test_cgroups(void **state) {
        Snapshot a = {}, b = {};
        CgroupUsages ga = {}, gb = {};
        Culprits c = {};
        pid_t in_root[] = { 1 }, in_a[] = { 2 }, in_c[] = { 3 }, in_d[] = { 4 };

        add(&a, 1, PROCESS_MEASURED, 0, "", 0);
        add(&a, 2, PROCESS_MEASURED, 0, "", 0);
        add(&a, 3, PROCESS_MEASURED, 0, "", 0);
        add(&a, 4, PROCESS_MEASURED, 0, "", 0);
        add(&b, 1, PROCESS_MEASURED, 0, "", 30 * NS_PER_MS);
        add(&b, 2, PROCESS_MEASURED, 0, "", 400 * NS_PER_MS);
        add(&b, 3, PROCESS_MEASURED, 0, "", 20 * NS_PER_MS);
        add(&b, 4, PROCESS_MEASURED, 0, "", 90 * NS_PER_MS);
        /* The node's root (its counter is the node's: processes); a; b holding none, with a child c;
         * d, whose cpu counter is missing (processes). */
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 10000, in_root, 1);
        cg(&ga, "a", 0, 1000, in_a, 1);
        cg(&ga, "b", 0, 0, NULL, 0);
        cg(&ga, "b/c", 2, 0, in_c, 1);
        cg(&ga, "d", 0, UINT64_MAX, in_d, 1);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 600000, in_root, 1);
        cg(&gb, "a", 0, 411000, in_a, 1);
        cg(&gb, "b", 0, 60000, NULL, 0); /* 40 ms of its own: a process of b that came and went */
        cg(&gb, "b/c", 2, 20000, in_c, 1);
        cg(&gb, "d", 0, UINT64_MAX, in_d, 1);
        cg(&gb, "e", 0, 0, NULL, 0); /* new and unused */

        CulpritsInput in = {
                .resource = PSI_RESOURCE_CPU, .a = &a, .b = &b, .ga = &ga, .gb = &gb, .scope_is_node = true, .top = 10
        };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_cgroups, 5);
        assert_string_equal(c.cgroups[0].path, "a");
        assert_true(c.cgroups[0].from_counters);
        assert_int_equal(c.cgroups[0].usage.cpu_us, 410000);
        assert_string_equal(c.cgroups[1].path, "d");
        assert_false(c.cgroups[1].from_counters);
        assert_int_equal(c.cgroups[1].usage.cpu_us, 90000);
        assert_string_equal(c.cgroups[2].path, "b");
        assert_true(c.cgroups[2].from_counters);
        assert_int_equal(c.cgroups[2].usage.cpu_us, 40000);
        assert_string_equal(c.cgroups[3].path, "");
        assert_false(c.cgroups[3].from_counters);
        assert_int_equal(c.cgroups[3].usage.cpu_us, 30000);
        assert_string_equal(c.cgroups[4].path, "b/c");
        assert_int_equal(c.cgroups[4].usage.cpu_us, 20000);
        double sum = 0;
        for (size_t i = 0; i < c.n_cgroups; i++)
                sum += c.cgroups[i].share;
        assert_true(sum > 0.999 && sum < 1.001);

        /* Not the node: the scope's own counters would count, but a child without the counter (d)
         * leaves its parent's own use unknown: its processes still. */
        in.scope_is_node = false;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_string_equal(c.cgroups[3].path, "");
        assert_false(c.cgroups[3].from_counters);
        gb.items[4].usage.has_cpu = ga.items[4].usage.has_cpu = true; /* d: 0 -> 0 */
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_string_equal(c.cgroups[1].path, ""); /* 600 - 411 - 60 ms, less 10 - 1 */
        assert_true(c.cgroups[1].from_counters);
        assert_int_equal(c.cgroups[1].usage.cpu_us, 120000);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
}

/* The agent is no culprit, at cgroup level either: its own processes are in no snapshot, but its
 * cgroup's counter holds its cpu. Measured here with the ASan build in a cgroup of its own beside
 * integration-window's workloads: that cgroup was among culprits.cgroups of every incident
 * (0.3-0.6% of the node's cpu). Its cpu over the walks (CgroupUsages.self) comes off its cgroup's
 * own use: alone there, the cgroup used nothing; beside a service, the service's use is left. */
static void test_agent_cgroup(void **state) {
        Snapshot a = {}, b = {};
        CgroupUsages ga = {}, gb = {};
        Culprits c = {};
        pid_t in_root[] = { 1 }, in_agent[] = { 900 }, in_web[] = { 2 }, in_svc[] = { 3, 900 };

        add(&a, 1, PROCESS_MEASURED, 0, "", 0);
        add(&a, 2, PROCESS_MEASURED, 0, "", 0);
        add(&b, 1, PROCESS_MEASURED, 0, "", 10 * NS_PER_MS);
        add(&b, 2, PROCESS_MEASURED, 0, "", 40 * NS_PER_MS);
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 100000, in_root, 1);
        cg(&ga, "psidiag.service", 0, 20000, in_agent, 1);
        cg(&ga, "web", 0, 5000, in_web, 1);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 158700, in_root, 1);
        cg(&gb, "psidiag.service", 0, 28700, in_agent, 1); /* 8.7 ms: the agent's own */
        cg(&gb, "web", 0, 45000, in_web, 1);
        ga.self = gb.self = 900;
        ga.has_self = gb.has_self = true;
        ga.self_before_us = 1000000, ga.self_after_us = 1000300;
        gb.self_before_us = 1008500, gb.self_after_us = 1009000; /* the walks' own cost around the reads */

        CulpritsInput in = {
                .resource = PSI_RESOURCE_CPU, .a = &a, .b = &b, .ga = &ga, .gb = &gb, .scope_is_node = true, .top = 10
        };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_cgroups, 2);
        assert_string_equal(c.cgroups[0].path, "web");
        assert_int_equal(c.cgroups[0].usage.cpu_us, 40000);
        assert_string_equal(c.cgroups[1].path, "");
        for (size_t i = 0; i < c.n_cgroups; i++)
                assert_string_not_equal(c.cgroups[i].path, "psidiag.service");

        /* A lifetime pass: the agent's whole life off its cgroup's total. */
        in.a = NULL, in.ga = NULL;
        gb.items[1].usage.cpu_us = 1009000;
        assert_int_equal(culprits_build(&c, &in), 0);
        for (size_t i = 0; i < c.n_cgroups; i++)
                assert_string_not_equal(c.cgroups[i].path, "psidiag.service");
        in.a = &a, in.ga = &ga;
        gb.items[1].usage.cpu_us = 28700;

        /* Beside a service in one cgroup: the service's 25 ms are left, not the agent's. */
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
        ga = gb = (CgroupUsages) {};
        add(&a, 3, PROCESS_MEASURED, 0, "", 0);
        add(&b, 3, PROCESS_MEASURED, 0, "", 25 * NS_PER_MS);
        cg(&ga, "", CGROUP_USAGE_NO_PARENT, 100000, in_root, 1);
        cg(&ga, "svc", 0, 20000, in_svc, 2);
        cg(&gb, "", CGROUP_USAGE_NO_PARENT, 200000, in_root, 1);
        cg(&gb, "svc", 0, 53700, in_svc, 2);
        ga.self = gb.self = 900;
        ga.has_self = gb.has_self = true;
        ga.self_before_us = 1000000, gb.self_after_us = 1008700;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_string_equal(c.cgroups[0].path, "svc");
        assert_int_equal(c.cgroups[0].usage.cpu_us, 25000);

        /* Not read at one end: nothing to take off (the counter as it is). */
        ga.has_self = false;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.cgroups[0].usage.cpu_us, 33700);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
        cgroup_usages_done(&ga);
        cgroup_usages_done(&gb);
}

/* A cgroup that holds the agent alone is no culprit of io or memory either: what its counters moved
 * by (its lines written back, the memory it keeps locked) is its own work. Beside another process
 * in one cgroup, or alone now but not at the start (one of its neighbours ended meanwhile), the
 * cgroup stays: that use cannot be told apart. */
static void test_agent_cgroup_alone(void **state) {
        static const PsiResource res[] = { PSI_RESOURCE_IO, PSI_RESOURCE_MEMORY };
        pid_t in_root[] = { 1 }, in_agent[] = { 900 }, in_web[] = { 2 }, in_both[] = { 3, 900 };

        for (size_t k = 0; k < ELEMENTSOF(res); k++)
                for (int shape = 0; shape < 3; shape++) {
                        Snapshot a = {}, b = {};
                        CgroupUsages ga = {}, gb = {};
                        Culprits c = {};
                        bool found = false;

                        add(&a, 2, PROCESS_MEASURED, 0, "", 0);
                        add(&b, 2, PROCESS_MEASURED, 0, "", 0);
                        cg(&ga, "", CGROUP_USAGE_NO_PARENT, UINT64_MAX, in_root, 1);
                        cg(&ga, "psidiag.service", 0, UINT64_MAX, shape == 0 ? in_agent : in_both, shape == 0 ? 1 : 2);
                        cg(&ga, "web", 0, UINT64_MAX, in_web, 1);
                        cg(&gb, "", CGROUP_USAGE_NO_PARENT, UINT64_MAX, in_root, 1);
                        cg(&gb, "psidiag.service", 0, UINT64_MAX, shape == 1 ? in_both : in_agent, shape == 1 ? 2 : 1);
                        cg(&gb, "web", 0, UINT64_MAX, in_web, 1);
                        for (size_t i = 0; i < 3; i++) {
                                CgroupUsage *ua = &ga.items[i].usage, *ub = &gb.items[i].usage;
                                ua->has_io = ub->has_io = ua->has_memory = ub->has_memory = true;
                                ua->write_bytes = 1 << 20, ua->memory_bytes = 8 << 20;
                                ub->write_bytes = (i == 2 ? 3 : 5) << 20, ub->memory_bytes = (i == 2 ? 9 : 40) << 20;
                        }
                        ga.self = gb.self = 900; /* no cpu read: has_self false */
                        CulpritsInput in = { .resource = res[k],
                                             .a = &a,
                                             .b = &b,
                                             .ga = &ga,
                                             .gb = &gb,
                                             .scope_is_node = true,
                                             .top = 10 };
                        assert_int_equal(culprits_build(&c, &in), 0);
                        for (size_t i = 0; i < c.n_cgroups; i++)
                                found |= strcmp(c.cgroups[i].path, "psidiag.service") == 0;
                        if (found != (shape != 0))
                                fail_msg("%s, shape %d: the agent's cgroup %s", psi_resource_to_string(res[k]), shape,
                                         found ? "blamed" : "not blamed");
                        assert_true(c.n_cgroups >= 1);
                        culprits_done(&c);
                        snapshot_done(&a);
                        snapshot_done(&b);
                        cgroup_usages_done(&ga);
                        cgroup_usages_done(&gb);
                }
}

static void test_memory_io(void **state) {
        Snapshot a = {}, b = {};
        Culprits c = {};

        for (pid_t p = 1; p <= 3; p++) {
                add(&a, p, PROCESS_MEASURED, 0, "", 0);
                add(&b, p, PROCESS_MEASURED, 0, "", 0);
        }
        mem(&a, 1, 8, 100); /* the page-cache reader: small, faulting */
        mem(&b, 1, 8, 180);
        mem(&a, 2, 40, 0); /* the grower */
        mem(&b, 2, 90, 0);
        mem(&a, 3, 200, 0); /* big and idle */
        mem(&b, 3, 200, 0);
        CulpritsInput in = { .resource = PSI_RESOURCE_MEMORY, .a = &a, .b = &b, .top = 10 };
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 3);
        assert_int_equal(c.procs[0].tgid, 2);
        assert_int_equal(c.procs[0].usage.rss_growth_bytes, 50 << 20);
        assert_int_equal(c.procs[1].tgid, 3); /* then size */
        assert_int_equal(c.procs[2].tgid, 1);
        assert_int_equal(c.procs[2].usage.majflt, 80);
        assert_true(c.procs[1].share > 0.67 && c.procs[1].share < 0.68); /* 200 of 298 MiB */
        /* Shrinking ranks below standing still. */
        mem(&b, 3, 150, 0);
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.procs[2].tgid, 3);
        assert_int_equal(c.procs[2].usage.rss_growth_bytes, -(50 << 20));

        /* io: read and write bytes; a process whose /proc/<pid>/io was refused at A is left out. */
        io(&a, 1, 0, 0);
        io(&b, 1, 4096, 1 << 20);
        io(&a, 2, 0, 0);
        io(&b, 2, 64 << 20, 512 << 20);
        io(&b, 3, 1 << 30, 0);
        in.resource = PSI_RESOURCE_IO;
        assert_int_equal(culprits_build(&c, &in), 0);
        assert_int_equal(c.n_procs, 2);
        assert_int_equal(c.procs[0].tgid, 2);
        assert_int_equal(c.procs[0].usage.write_bytes, 512 << 20);
        assert_int_equal(c.total.read_bytes, (64 << 20) + 4096);
        culprits_done(&c);
        snapshot_done(&a);
        snapshot_done(&b);
}

/* The real walk over a fake cgroup tree, counters and own processes. */
static void test_walk(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[512];
        CgroupUsages t = {};
        int fd;

        assert_non_null(mkdtemp(dir));
        const char *files[][2] = {
                { "cpu.stat", "usage_usec 500\nuser_usec 400\n" },
                { "cgroup.procs", "1\n" },
                { "a/cpu.stat", "usage_usec 300\n" },
                { "a/cgroup.procs", "10\n11\n" },
                { "a/memory.current", "4096\n" },
                { "a/b/cpu.stat", "usage_usec 100\n" },
                { "a/b/cgroup.procs", "" },
        };
        for (size_t i = 0; i < sizeof files / sizeof *files; i++)
                assert_int_equal(fake_tree_write(dir, files[i][0], files[i][1]), 0);
        fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(cgroup_usages_read(fd, -1, PSI_RESOURCE_CPU, &t), 0);
        assert_int_equal(t.n, 3);
        assert_string_equal(cgroup_usage_path(&t, &t.items[0]), "");
        assert_int_equal(t.items[0].parent, CGROUP_USAGE_NO_PARENT);
        assert_int_equal(t.items[0].usage.cpu_us, 500);
        assert_int_equal(t.items[0].n_pids, 1);
        assert_string_equal(cgroup_usage_path(&t, &t.items[1]), "a");
        assert_int_equal(t.items[1].parent, 0);
        assert_int_equal(t.items[1].n_pids, 2);
        assert_int_equal(t.pids.tids[t.items[1].first_pid + 1], 11);
        assert_false(t.items[1].usage.has_memory); /* only the resource's counter is read */
        assert_false(t.items[1].children_missing);
        assert_string_equal(cgroup_usage_path(&t, &t.items[2]), "a/b");
        assert_int_equal(t.items[2].parent, 1);
        assert_int_equal(t.items[2].n_pids, 0);
        cgroup_usages_clear(&t);
        assert_int_equal(t.n, 0);
        assert_int_equal(cgroup_usages_read(fd, -1, PSI_RESOURCE_MEMORY, &t), 0);
        assert_true(t.items[1].usage.has_memory);
        assert_int_equal(t.items[1].usage.memory_bytes, 4096);
        assert_false(t.items[0].usage.has_memory);
        cgroup_usages_clear(&t);

        /* Deeper than the walk goes: the deepest cgroup read says its children are missing, so
         * its counter is not taken for its own use. */
        size_t len = (size_t) snprintf(path, sizeof path, "%s/a/b", dir);
        for (int i = 0; i < 64; i++) {
                len += (size_t) snprintf(path + len, sizeof path - len, "/d");
                assert_int_equal(mkdir(path, 0755), 0);
        }
        assert_int_equal(cgroup_usages_read(fd, -1, PSI_RESOURCE_CPU, &t), 0);
        bool missing = false;
        for (size_t i = 0; i < t.n; i++)
                missing |= t.items[i].children_missing;
        assert_true(missing);
        assert_false(t.items[0].children_missing);
        close(fd);
        cgroup_usages_done(&t);
        assert_int_equal(fake_tree_remove(dir), 0);
}

/* Where culprits are looked for, on fixture trees. */
static void test_scope(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        CulpritScope c;

        assert_int_equal(sysroot_open(fixture("hybrid"), &s), 0);
        assert_int_equal(limits_hierarchy_open(s, &h), 0);
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_IRQ, &c), -EOPNOTSUPP);
        /* cpu: the node, unless the stalled cgroup limits itself. */
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_CPU, &c), 0);
        assert_true(c.node);
        assert_false(c.own_limit);
        assert_false(c.same);
        assert_true(c.cgroup_fd >= 0);
        culprit_scope_close(&c);
        assert_int_equal(culprit_scope_open(h, "/app/batch", PSI_RESOURCE_CPU, &c), 0);
        assert_false(c.node);
        assert_true(c.own_limit);
        assert_true(c.same);
        assert_string_equal(c.path, "app/batch");
        assert_int_equal(c.limit.kind, LIMITS_KIND_CPU_CFS_QUOTA);
        assert_int_equal(c.limit.value, 50000);
        assert_int_equal(c.limit.period_us, 100000);
        assert_true(c.v1_fd >= 0); /* cpu,cpuacct twin */
        culprit_scope_close(&c);
        /* memory: the nearest limited ancestor (web's memcg is app's: /proc/100/cgroup). */
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_MEMORY, &c), 0);
        assert_false(c.node);
        assert_false(c.own_limit);
        assert_false(c.same);
        assert_string_equal(c.path, "app");
        assert_string_equal(c.limit_path, "app");
        assert_int_equal(c.limit.kind, LIMITS_KIND_MEMORY_LIMIT_IN_BYTES);
        assert_int_equal(c.limit.value, 268435456);
        culprit_scope_close(&c);
        /* No blkio mount: no io limit, no error. */
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_IO, &c), 0);
        assert_true(c.node);
        assert_int_equal(c.limit.kind, LIMITS_KIND_NONE);
        culprit_scope_close(&c);
        /* A missing cgroup limits nothing. */
        assert_int_equal(culprit_scope_open(h, "no/such", PSI_RESOURCE_CPU, &c), 0);
        assert_true(c.node);
        culprit_scope_close(&c);
        /* A node-wide trigger: the sample is the node. */
        assert_int_equal(culprit_scope_open(h, NULL, PSI_RESOURCE_IO, &c), 0);
        assert_true(c.node);
        assert_true(c.same);
        culprit_scope_close(&c);
}

/* The same on a plain cgroup2 host (tests/fixtures/cgroup2). */
static void test_scope_cgroup2(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        CulpritScope c;

        assert_int_equal(sysroot_open(fixture("cgroup2"), &s), 0);
        assert_int_equal(limits_hierarchy_open(s, &h), 0);
        /* pod1 sets no memory limit (memory.max "max"); its parent's memory.high does. */
        assert_int_equal(culprit_scope_open(h, "/kubepods.slice/pod1", PSI_RESOURCE_MEMORY, &c), 0);
        assert_false(c.node);
        assert_string_equal(c.path, "kubepods.slice");
        assert_string_equal(c.limit_path, "kubepods.slice");
        assert_int_equal(c.limit.kind, LIMITS_KIND_MEMORY_HIGH);
        assert_int_equal(c.limit.value, 1073741824);
        assert_string_equal(limits_kind_file(c.limit.kind), "memory.high");
        culprit_scope_close(&c);
        /* Its own cpu.max. */
        assert_int_equal(culprit_scope_open(h, "kubepods.slice/pod1", PSI_RESOURCE_CPU, &c), 0);
        assert_true(c.own_limit);
        assert_int_equal(c.limit.kind, LIMITS_KIND_CPU_MAX);
        assert_int_equal(c.limit.value, 50000);
        assert_int_equal(c.limit.period_us, 100000);
        culprit_scope_close(&c);
        /* io.max with every value "max" limits nothing. */
        assert_int_equal(culprit_scope_open(h, "kubepods.slice/pod1", PSI_RESOURCE_IO, &c), 0);
        assert_true(c.node);
        assert_int_equal(c.limit.kind, LIMITS_KIND_NONE);
        culprit_scope_close(&c);
}

/* A hybrid host whose v1 memcg has another path than cgroup2 (tests/fixtures/limits-hybrid:
 * app/web's tasks are in memcg mem/web-v1, limited by mem's 128 MiB): the culprit scope finds the
 * limit "limits" reports, and the incident's culprits.limit and limits.memory say the same. */
static void test_scope_agrees_with_limits(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        static const Culprits none = { .resource = PSI_RESOURCE_MEMORY };
        CulpritScope c;
        OnWhat w = {};
        json_t *culprits, *limits, *cl, *lm;

        assert_int_equal(sysroot_open(fixture("limits-hybrid"), &s), 0);
        assert_int_equal(limits_hierarchy_open(s, &h), 0);
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_MEMORY, &c), 0);
        onwhat_begin(&w, h, "app/web", PSI_RESOURCE_MEMORY);
        onwhat_end(&w, h);
        assert_true(w.located && w.loc.limited);

        assert_false(c.node);
        assert_string_equal(c.limit_path, w.loc.limited_path);
        assert_string_equal(c.limit_path, "mem");
        assert_int_equal(c.limit_source, LIMITS_SOURCE_V1);
        assert_int_equal(c.limit.kind, LIMITS_KIND_MEMORY_LIMIT_IN_BYTES);
        assert_int_equal(c.limit.value, w.mem_b.max_bytes);
        assert_int_equal(c.limit.value, 134217728);
        /* Its processes: mem is one level above mem/web-v1, app one above app/web. */
        assert_string_equal(c.path, "app");
        assert_false(c.own_limit || c.same);

        culprits = culprit_report_object(&none, &c, NULL, 0, NULL);
        limits = onwhat_limits_object(&w, false, false, 0, 1000000);
        assert_non_null(culprits);
        assert_non_null(limits);
        cl = json_object_get(culprits, "limit");
        lm = json_object_get(limits, "memory");
        assert_true(json_is_object(cl) && json_is_object(lm));
        assert_string_equal(json_string_value(json_object_get(cl, "cgroup")), "/mem");
        assert_string_equal(json_string_value(json_object_get(cl, "cgroup")),
                            json_string_value(json_object_get(lm, "cgroup")));
        assert_string_equal(json_string_value(json_object_get(cl, "file")), "memory.limit_in_bytes");
        assert_int_equal(json_integer_value(json_object_get(cl, "bytes")),
                         json_integer_value(json_object_get(lm, "max_bytes")));
        assert_string_equal(json_string_value(json_object_get(culprits, "scope")), "/app");
        json_decref(culprits);
        json_decref(limits);
        culprit_scope_close(&c);
        onwhat_done(&w);

        /* cpu: app.slice/web's quota is its parent app.slice's, one level up on both. */
        assert_int_equal(culprit_scope_open(h, "app/web", PSI_RESOURCE_CPU, &c), 0);
        assert_string_equal(c.limit_path, "app.slice");
        assert_int_equal(c.limit.kind, LIMITS_KIND_CPU_CFS_QUOTA);
        assert_int_equal(c.limit.value, 50000);
        assert_string_equal(c.path, "app");
        assert_false(c.own_limit);
        culprit_scope_close(&c);
        /* On v1 no process below idle tells its memcg: the node, as "limits" has none. */
        assert_int_equal(culprit_scope_open(h, "idle", PSI_RESOURCE_MEMORY, &c), 0);
        assert_true(c.node);
        assert_int_equal(c.limit.kind, LIMITS_KIND_NONE);
        culprit_scope_close(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpu),
                cmocka_unit_test(test_aggregate),
                cmocka_unit_test(test_victim_cgroups),
                cmocka_unit_test(test_programs),
                cmocka_unit_test(test_spawner),
                cmocka_unit_test(test_killed_grower),
                cmocka_unit_test(test_short_writers),
                cmocka_unit_test(test_reaped_io),
                cmocka_unit_test(test_cgroups),
                cmocka_unit_test(test_agent_cgroup),
                cmocka_unit_test(test_agent_cgroup_alone),
                cmocka_unit_test(test_memory_io),
                cmocka_unit_test(test_walk),
                cmocka_unit_test(test_scope),
                cmocka_unit_test(test_scope_cgroup2),
                cmocka_unit_test(test_scope_agrees_with_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
