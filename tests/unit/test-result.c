/* SPDX-License-Identifier: MIT */
/* What sampling/result.h makes of a sample. The identities of its reported processes, on a ranking
 * and culprits made by hand: as the VM showed (tests/vm), a dd that ended during the sample was among
 * the most delayed with no cgroup ("dd (?) waited 0.47 s") while the culprits named its cgroup from
 * the start walk; the most delayed now take it from there. A result of pressure alone, read from a
 * cgroup directory made here, and the kill incident it makes, the same as the Sampler's. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "incident/incident.h"
#include "sampling/culprits.h"
#include "sampling/rank.h"
#include "sampling/result.h"
#include "sampling/sampler.h"
#include "incident/jsonutil.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

/* The containers of what a result names (docker's files as docker 20.10 wrote them here): each
 * reported process's in its ProcessInfo, a hot cgroup's looked up so that the incident peeks it
 * without reading; a process in no container, or no cache lent, names none. */
static void test_name_containers(void **state) {
        static const char id[] = "99136c90f14e908887f40326e5cc9d92e24b828ac295d3dd9f28966be22a4dfb";
        int fd = open(FIXTURE_DIR "/containers/docker", O_RDONLY | O_DIRECTORY | O_CLOEXEC), cg;
        char cgroups[] = "/tmp/psidiag-result-cg-XXXXXX", path[256];
        ContainerCache *c = NULL;
        ProcessInfo items[4] = {};
        ProcessInfoBuffer buf = { .items = items, .cap = ELEMENTSOF(items) };
        HotCgroup hot_items[1] = { { .path = "sub" } };
        HotCgroups hot = { .items = hot_items, .n = 1 };
        char hot_prefix[128];
        SampleResult r = { .procs = items, .n_procs = 2, .hot = &hot, .hot_prefix = hot_prefix };
        ContainerCacheStats st;

        assert_true(fd >= 0);
        assert_non_null(mkdtemp(cgroups));
        cg = open(cgroups, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(cg >= 0);
        snprintf(path, sizeof path, "/docker/%s/sub", id);
        assert_int_equal(fake_tree_cgroup(cgroups, path), 0);
        assert_int_equal(container_cache_new(fd, -1, cg, 4, &c), 0);
        snprintf(items[0].cgroup, sizeof items[0].cgroup, "/docker/%s", id);
        items[0].has_cgroup = true;
        snprintf(items[1].cgroup, sizeof items[1].cgroup, "/system.slice/cron.service");
        items[1].has_cgroup = true;
        items[1].has_container = true; /* left over from an earlier sample */
        snprintf(hot_prefix, sizeof hot_prefix, "docker/%s", id);

        sample_result_name_containers(&r, &buf, c);
        assert_ptr_equal(r.containers, c);
        assert_true(items[0].has_container);
        assert_string_equal(items[0].container.name, "names-web");
        assert_string_equal(items[0].container.image, "psidiag-names-bb:1");
        assert_false(items[1].has_container);
        assert_string_equal(container_cache_peek(c, path)->name, "names-web");
        container_cache_stats(c, &st);
        assert_int_equal(st.reads, 1);
        assert_int_equal(st.lookups, 2);

        /* no cache lent: nothing named, nothing read */
        sample_result_name_containers(&r, &buf, NULL);
        assert_null(r.containers);
        container_cache_free(c);
        close(cg);
        assert_int_equal(fake_tree_remove(cgroups), 0);
        close(fd);
}

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

        sample_result_identify(&r, proc_fd, NULL, &buf, 4);
        assert_int_equal(r.n_procs, 2);
        assert_int_equal(r.n_culprit_procs, 1);
        assert_true(r.culprit_procs[0].has_cgroup);
        assert_string_equal(r.culprit_procs[0].cgroup, "/iow");
        assert_string_equal(r.procs[0].comm, "dd");
        assert_true(r.procs[0].has_cgroup);
        assert_string_equal(r.procs[0].cgroup, "/iow");
        assert_int_equal(r.procs[0].placed_by, 0);
        /* One the culprits do not list stays unknown. */
        assert_string_equal(r.procs[1].comm, "gone");
        assert_false(r.procs[1].has_cgroup);

        /* One the walks found (a victim of culprits_build()) takes that cgroup, ended or gone from
         * /proc after the end snapshot. */
        CulpritVictim found[1] = { { .pid = 596, .cgroup = "svc" } };
        culprits.victims = found;
        culprits.n_victims = 1;
        ranked[1].origin = PROCESS_MEASURED;
        sample_result_identify(&r, proc_fd, NULL, &buf, 4);
        assert_true(r.procs[1].has_cgroup);
        assert_string_equal(r.procs[1].cgroup, "/svc");

        /* Without a culprit pass, nothing to take it from. */
        r.culprits = NULL;
        sample_result_identify(&r, proc_fd, NULL, &buf, 4);
        assert_false(r.procs[0].has_cgroup);
        assert_false(r.procs[1].has_cgroup);
        close(proc_fd);
        rmdir(dir);
}

/* A most delayed process that ended before the culprits' start walk saw it (that walk follows the
 * sample's snapshot A: a dd of a shell loop on 7.2) takes its parent's cgroup when the parent is
 * alive at the sample's end, as a short-lived one does; a parent not in the sample places nothing. */
static void test_ended_victim_by_parent(void **state) {
        ProcessDelta ranked[3] = {
                { .tgid = 597, .ppid = 590, .origin = PROCESS_ENDED, .comm = "dd" },
                { .tgid = 598, .ppid = 1, .origin = PROCESS_ENDED, .comm = "orphan" },
                { .tgid = 599, .ppid = 590, .origin = PROCESS_ENDED, .comm = "dd" },
        };
        Ranking ranking = { .procs = ranked, .n_procs = 3 };
        /* 599 the culprits' walk saw: its own cgroup, not its parent's. */
        CulpritProcess cp[1] = { { .tgid = 599, .origin = PROCESS_ENDED, .comm = "dd", .cgroup = "own" } };
        Culprits culprits = { .procs = cp, .n_procs = 1 };
        CulpritScope scope = { .node = true };
        ProcessDelays end[1] = { { .tgid = 590, .origin = PROCESS_MEASURED } };
        Snapshot b = { .procs = end, .n_procs = 1 };
        ProcessInfo items[8];
        ProcessInfoBuffer buf = { .items = items, .cap = 8 };
        SampleResult r = { .ranking = &ranking, .b = &b, .culprits = &culprits, .culprit_scope = &scope };
        char dir[] = "/tmp/psidiag-result-XXXXXX", path[256];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/590", dir);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof path, "%s/590/cgroup", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("0::/iodd\n", f);
        fclose(f);
        int proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);

        for (int pass = 0; pass < 2; pass++) {
                sample_result_identify(&r, proc_fd, NULL, &buf, 4);
                assert_true(r.procs[0].has_cgroup);
                assert_string_equal(r.procs[0].cgroup, "/iodd");
                assert_int_equal(r.procs[0].placed_by, 590);
                assert_false(r.procs[1].has_cgroup);
                assert_int_equal(r.procs[1].placed_by, 0);
                if (pass == 0) {
                        assert_string_equal(r.procs[2].cgroup, "/own");
                        assert_int_equal(r.procs[2].placed_by, 0);
                }
                /* Without a culprit pass, the parent still places them. */
                r.culprits = NULL;
        }
        assert_int_equal(r.procs[2].placed_by, 590);
        unlink(path);
        snprintf(path, sizeof path, "%s/590", dir);
        rmdir(path);
        close(proc_fd);
        rmdir(dir);
}

/* A live process whose /proc does not give its name (refused, as an AppArmor profile refuses a
 * container's agent, or gone between the sample and the read) is never nameless: taskstats'
 * per-pid ac_comm, else "?", and why in unreadable. */
static void test_unreadable_identity(void **state) {
        ProcessDelta ranked[3] = {
                { .tgid = 700, .origin = PROCESS_MEASURED },
                { .tgid = 701, .origin = PROCESS_MEASURED },
                { .tgid = 702, .origin = PROCESS_MEASURED },
        };
        Ranking ranking = { .procs = ranked, .n_procs = 3 };
        const uint64_t none[_TASK_DELAY_MAX] = {};
        FakeTask tasks[1] = { { .tid = 700, .stats = fake_task_stats(700, 700, "cc1", none) } };
        TaskstatsSource *ts = fake_taskstats_new(tasks, 1);
        ProcessInfo items[8];
        ProcessInfoBuffer buf = { .items = items, .cap = 8 };
        SampleResult r = { .ranking = &ranking };
        char dir[] = "/tmp/psidiag-result-XXXXXX";
        int proc_fd;

        /* 702 is readable; 700 and 701 have no /proc entry. */
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, "702/comm", "postgres\n"), 0);
        assert_int_equal(fake_tree_write(dir, "702/cgroup", "0::/db\n"), 0);
        proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(proc_fd >= 0);
        sample_result_identify(&r, proc_fd, ts, &buf, 4);
        assert_int_equal(r.n_procs, 3);
        assert_string_equal(r.procs[0].comm, "cc1"); /* taskstats still knew it */
        assert_string_equal(r.procs[0].unreadable, "it ended before its name was read");
        assert_string_equal(r.procs[1].comm, "?"); /* nothing did */
        assert_string_equal(r.procs[1].unreadable, "it ended before its name was read");
        assert_string_equal(r.procs[2].comm, "postgres");
        assert_string_equal(r.procs[2].unreadable, "");
        assert_string_equal(r.procs[2].cgroup, "/db");

        /* Refused: the reason is /proc's, the name taskstats'. */
        assert_int_equal(fake_tree_write(dir, "700/comm/x", ""), 0); /* a directory: EISDIR */
        sample_result_identify(&r, proc_fd, ts, &buf, 4);
        assert_string_equal(r.procs[0].comm, "cc1");
        assert_non_null(strstr(r.procs[0].unreadable, "/proc/700 is not readable: "));

        /* In the incident: comm never empty, unreadable says why. */
        json_t *o = json_object();
        assert_int_equal(incident_process_identity(o, &r.procs[1]), 0);
        assert_string_equal(json_string_value(json_object_get(o, "comm")), "?");
        assert_string_equal(json_string_value(json_object_get(o, "unreadable")), "it ended before its name was read");
        json_decref(o);
        o = json_object();
        assert_int_equal(incident_process_identity(o, &r.procs[2]), 0);
        assert_true(json_is_null(json_object_get(o, "unreadable")));
        json_decref(o);
        close(proc_fd);
        taskstats_source_free(ts);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static const char memory_pressure[] = "some avg10=1.50 avg60=0.70 avg300=0.20 total=4242\n"
                                      "full avg10=0.50 avg60=0.10 avg300=0.00 total=1717\n";

/* A cgroup directory with memory.pressure alone (or, node-wide, a /proc/pressure with memory
 * alone). */
static int pressure_dir(char *dir, const char *name) {
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fake_tree_write(dir, name, memory_pressure), 0);
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

static void remove_pressure_dir(const char *dir, int fd) {
        close(fd);
        assert_int_equal(fake_tree_remove(dir), 0);
}

static void assert_unmeasured(const SampleResult *r, const Snapshot *snap) {
        uint64_t total;

        assert_int_equal(r->basis, SAMPLE_BASIS_NONE);
        assert_null(r->a);
        assert_ptr_equal(r->b, snap);
        assert_null(r->threads_base);
        assert_int_equal(r->wakeup_real_us, snap->real_us);
        assert_true(snap->real_us > 0 && snap->mono_us > 0);
        assert_non_null(r->ranking); /* empty, never NULL */
        assert_int_equal(r->ranking->n_procs, 0);
        assert_int_equal(r->n_procs, 0);
        assert_int_equal(r->n_culprit_procs, 0);
        assert_null(r->hot);
        assert_null(r->culprits);
        assert_null(r->onwhat);
        assert_false(r->has_culprit_window);
        assert_false(r->recorded);
        assert_int_equal(r->resource, PSI_RESOURCE_MEMORY);
        assert_true(r->has_stall);
        assert_int_equal(r->stall, PSI_STALL_FULL);
        assert_true(snapshot_pressure_total(snap, PSI_RESOURCE_MEMORY, PSI_STALL_FULL, &total));
        assert_int_equal(total, 1717);
        assert_false(snap->has_pressure[PSI_RESOURCE_CPU]); /* no file: left out */
        assert_false(snap->has_pressure[PSI_RESOURCE_IO]);
        /* No window: no stall growth. */
        assert_false(sample_result_stall_us(r, &total));
}

static void test_unmeasured(void **state) {
        char dir[] = "/tmp/psidiag-result-XXXXXX";
        int fd = pressure_dir(dir, "memory.pressure");
        Sysroot sysroot = { .root_fd = -1, .proc_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        SampleScope scope = {
                .sysroot = &sysroot, .cgroup_fd = fd, .resource = PSI_RESOURCE_MEMORY, .stall = PSI_STALL_FULL
        };
        Snapshot snap = {};
        SampleResult r;

        sample_result_unmeasured(&scope, &snap, &r);
        assert_unmeasured(&r, &snap);
        assert_int_equal(snap.listed + snap.processes + snap.errors, 0);
        assert_null(snap.procs); /* nothing allocated: no snapshot_done() */
        assert_null(snap.threads);
        remove_pressure_dir(dir, fd);

        /* Node-wide: /proc/pressure's file. */
        char node[] = "/tmp/psidiag-result-XXXXXX";
        sysroot.pressure_fd = pressure_dir(node, "memory");
        scope.cgroup_fd = -1;
        snap = (Snapshot) {};
        sample_result_unmeasured(&scope, &snap, &r);
        assert_unmeasured(&r, &snap);
        remove_pressure_dir(node, sysroot.pressure_fd);
}

/* The kill incident of the result, as agent/killwatch.c builds it, at a fixed time. */
static char *kill_line(SampleResult *r, Snapshot *snap) {
        static const HostInfo host = { .hostname = "node-1", .kernel = "6.1.0", .boot_id = "7840f08a-03c2" };
        static KillGroup g = { .n_listed = 1, .total = 1, .sigkill = true };
        KillerChoice killer = { .killer = KILLER_UNKNOWN };
        KillReport rep = { .group = &g, .cgroup = "work.slice", .killer = &killer };
        json_t *j = NULL;
        char *line;
        size_t len;

        g.listed[0] = (KillVictim) { .pid = 42, .signal = 9, .comm = "stress", .uid = -1 };
        snap->real_us = r->wakeup_real_us = 1795337041123456ULL;
        snap->mono_us = 5000000;
        assert_int_equal(incident_build(r,
                                        &(IncidentContext) { .type = "kill",
                                                             .id = "7840f08a-1-2-3",
                                                             .host = &host,
                                                             .agent_version = "0.1.0",
                                                             .kill = &rep },
                                        &j),
                         0);
        assert_int_equal(incident_dump_line(j, &line, &len), 0);
        json_decref(j);
        return line;
}

/* What the Sampler made for a kill incident before (sampler_result_unmeasured() on a new
 * Sampler), and what sample_result_unmeasured() makes: the same incident, byte for byte. */
static void test_unmeasured_as_sampler(void **state) {
        char dir[] = "/tmp/psidiag-result-XXXXXX";
        int fd = pressure_dir(dir, "memory.pressure");
        Sysroot sysroot = { .root_fd = -1, .proc_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        ProcessInfo items[8];
        ProcessInfoBuffer ids = { .items = items, .cap = ELEMENTSOF(items) };
        SampleScope scope = { .sysroot = &sysroot,
                              .cgroup_fd = fd,
                              .resource = PSI_RESOURCE_MEMORY,
                              .cgroup_path = "work.slice",
                              .identities = &ids };
        Sampler *s = calloc(1, sizeof *s);
        Snapshot snap = {};
        SampleResult r;

        assert_non_null(s);
        sampler_init(s, NULL, NULL, NULL, NULL);
        sampler_result_unmeasured(s, &scope);
        sample_result_unmeasured(&scope, &snap, &r);
        char *before = kill_line(&s->result, &s->a), *after = kill_line(&r, &snap);
        assert_string_equal(before, after);
        assert_non_null(strstr(after, "\"basis\":\"none\""));
        assert_non_null(strstr(after, "\"total_us\":4242"));
        free(before);
        free(after);
        sampler_free(s);
        free(s);
        remove_pressure_dir(dir, fd);
}

/* The decision on a sample as the Sampler hands it: trixie's writeback case (tests/vm/waits.py),
 * "io some 50ms 2s" on the fsync loop's cgroup, a 1 s window that saw 3.1 ms of io stall (under
 * the 6.25 ms line) while its dd was in D 486 ms at the last look (add_transaction_credits(), in
 * no io pressure): blocked, not passed. The same window without the blocked thread, or for a cpu
 * trigger (a D sleep is no wait for cpu), passed. */
static void test_fired_blocked(void **state) {
        const PsiTriggerSpec io = {
                .resource = PSI_RESOURCE_IO, .stall = PSI_STALL_SOME, .threshold_us = 50000, .window_us = 2000000
        };
        const PsiTriggerSpec cpu = {
                .resource = PSI_RESOURCE_CPU, .stall = PSI_STALL_SOME, .threshold_us = 50000, .window_us = 2000000
        };
        Snapshot a = { .mono_us = 10000000 }, b = { .mono_us = 11000000 };
        ProcessDelta procs[2] = {
                { .tgid = 700, .origin = PROCESS_MEASURED, .uid = -1, .score_ns = 1000000 },
                { .tgid = 701, .origin = PROCESS_MEASURED, .uid = -1, .blocked_tid = 701, .blocked_ns = 486000000 },
        };
        Ranking rk = { .procs = procs, .n_procs = ELEMENTSOF(procs) };
        SampleResult r = { .basis = SAMPLE_BASIS_DELTA,
                           .a = &a,
                           .b = &b,
                           .ranking = &rk,
                           .resource = PSI_RESOURCE_IO,
                           .has_stall = true,
                           .stall = PSI_STALL_SOME };

        for (int res = 0; res < PSI_RESOURCE_IRQ; res++) {
                a.has_pressure[res] = b.has_pressure[res] = true;
                a.pressure[res].has[PSI_STALL_SOME] = b.pressure[res].has[PSI_STALL_SOME] = true;
                a.pressure[res].line[PSI_STALL_SOME].total_us = 5000000;
                b.pressure[res].line[PSI_STALL_SOME].total_us = 5003100;
        }
        assert_int_equal(sample_result_blocked_us(&r, PSI_RESOURCE_IO), 486000);
        FiredCoverage c = sample_result_fired(&r, &io);
        assert_int_equal(c.verdict, FIRED_BLOCKED);
        assert_int_equal(c.expected_us, 25000);

        /* Blocked less than the line: the stall had passed. */
        procs[1].blocked_ns = 6000000;
        assert_int_equal(sample_result_fired(&r, &io).verdict, FIRED_PASSED);
        procs[1].blocked_ns = 486000000;
        /* No thread in D at the last look. */
        procs[1].blocked_tid = 0;
        assert_int_equal(sample_result_blocked_us(&r, PSI_RESOURCE_IO), 0);
        assert_int_equal(sample_result_fired(&r, &io).verdict, FIRED_PASSED);
        procs[1].blocked_tid = 701;
        /* cpu: a D sleep says nothing of it. */
        r.resource = PSI_RESOURCE_CPU;
        assert_int_equal(sample_result_blocked_us(&r, PSI_RESOURCE_CPU), 0);
        assert_int_equal(sample_result_fired(&r, &cpu).verdict, FIRED_PASSED);
        /* A ranking of another resource than the trigger's says nothing of its waits. */
        assert_int_equal(sample_result_blocked_us(&r, PSI_RESOURCE_IO), 0);
}

/* The identities' buffer: a sample's most delayed and its culprits per detailed process, the
 * product taken in size_t (a top near UINT_MAX does not wrap). */
static void test_process_info_buffer_cap(void **state) {
        (void) state;
        assert_int_equal(process_info_buffer_cap(1), 2);
        assert_int_equal(process_info_buffer_cap(20), 40);
        assert_true(process_info_buffer_cap(UINT_MAX) == (size_t) UINT_MAX * 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ended_victim_cgroup), cmocka_unit_test(test_ended_victim_by_parent),
                cmocka_unit_test(test_name_containers),     cmocka_unit_test(test_unreadable_identity),
                cmocka_unit_test(test_unmeasured),          cmocka_unit_test(test_unmeasured_as_sampler),
                cmocka_unit_test(test_fired_blocked),       cmocka_unit_test(test_process_info_buffer_cap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
