/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "incident/incident.h"
#include "incident/jsonutil.h"
#include "tests/unit/test-util.h"

static const HostInfo host = {
        .hostname = "node-1",
        .kernel = "6.18.44",
        .boot_id = "7840f08a-03c2-46e9-b294-dfdea98b2399",
};

static json_t *build_and_reparse(const SampleResult *res, const IncidentContext *ctx, char **ret_line) {
        json_t *j = NULL, *back;
        json_error_t err;
        char *line;
        size_t len;

        assert_int_equal(incident_build(res, ctx, &j), 0);
        assert_non_null(j);
        assert_int_equal(incident_dump_line(j, &line, &len), 0);
        json_decref(j);
        /* One line: no raw newline inside, exactly one at the end. */
        assert_int_equal(line[len - 1], '\n');
        assert_null(memchr(line, '\n', len - 1));
        back = json_loadb(line, len, 0, &err);
        if (!back)
                fail_msg("incident is not valid JSON: %s: %s", err.text, line);
        *ret_line = line;
        return back;
}

static void test_pressure_incident(void **state) {
        Ranking rk = {};
        ThreadDelta threads[3] = {
                { .tid = 100,
                  .tgid = 100,
                  .comm = "web) Z 1 (x",
                  .score_ns = 600 * NS_PER_MS,
                  .total_ns = 600 * NS_PER_MS },
                { .tid = 101,
                  .tgid = 100,
                  .comm = "w\"k\n\x01",
                  .score_ns = 400 * NS_PER_MS,
                  .total_ns = 400 * NS_PER_MS },
                { .tid = 102, .tgid = 100, .comm = "idle", .score_ns = 0, .total_ns = 0 },
        };
        ProcessDelta procs[2] = {
                { .tgid = 100, .score_ns = 1000 * NS_PER_MS + 999, .total_ns = 1000 * NS_PER_MS, .first = 0, .n = 3 },
                { .tgid = 300,
                  .origin = PROCESS_SHORT,
                  .ppid = 100,
                  .uid = 33,
                  .comm = "gzip",
                  .score_ns = 5 * NS_PER_MS,
                  .total_ns = 5 * NS_PER_MS },
        };
        ProcessInfo info[2] = { {
                                        .comm = "\xff\xfe\"bad\\name\"",
                                        .comm_len = 12,
                                        .cmdline = "nginx -g \"daemon off;\"\n\t\x1b[31m\xc3",
                                        .cmdline_len = 30,
                                        .uid = 33,
                                        .cgroup = "/system.slice/nginx.service",
                                        .has_cgroup = true,
                                },
                                {
                                        .comm = "gzip",
                                        .comm_len = 4,
                                        .cmdline_len = -1,
                                        .uid = 33,
                                        /* read from inside a cgroup namespace of our own */
                                        .cgroup = "/../../system.slice/nginx.service",
                                        .has_cgroup = true,
                                } };
        Snapshot a = { .real_us = 1795337041123456ULL, .mono_us = 5000000, .listed = 6, .processes = 2 },
                 m = { .threads_mono_us = 5252000 }, b = { .mono_us = 5503000, .threads_mono_us = 5503000 };
        TaskStateCounts states = { .source = TASK_STATE_SOURCE_PROCFS, .running = 4, .sleeping = 2, .io_wait = -1 };
        SampleResult res;
        IncidentContext ctx;
        json_t *j, *p, *t;
        char *line;

        threads[0].delay_ns[TASK_DELAY_CPU] = 600 * NS_PER_MS;
        threads[1].delay_ns[TASK_DELAY_CPU] = 400 * NS_PER_MS;
        procs[0].delay_ns[TASK_DELAY_CPU] = 1000 * NS_PER_MS + 999;
        rk = (Ranking) { .threads = threads,
                         .n_threads = 3,
                         .procs = procs,
                         .n_procs = 2,
                         .present = TASK_DELAY_ALL & ~TASK_DELAY_MASK(TASK_DELAY_IRQ) };
        a.has_pressure[PSI_RESOURCE_CPU] = true;
        a.pressure[PSI_RESOURCE_CPU] = (PressureStats) {
                .line = { { 85.5, 20.25, 5, 19821775 }, { 0.32, 0.26, 0.06, 279339 } },
                .has = { true, true },
        };
        a.has_states = true;
        a.states = states;
        /* The end: the stall grew by 457832 us; an exit listener heard one exit and 4 processes
         * nobody placed. */
        b.has_pressure[PSI_RESOURCE_CPU] = true;
        b.pressure[PSI_RESOURCE_CPU] = a.pressure[PSI_RESOURCE_CPU];
        b.pressure[PSI_RESOURCE_CPU].line[PSI_STALL_SOME].total_us += 457832;
        b.taskstats_version = 16;
        b.has_exit_listener = true;
        b.exit_records = 1;
        b.unattributed = 4;
        b.unattributed_ns[TASK_DELAY_CPU] = 7 * NS_PER_MS;
        b.unattributed_present = TASK_DELAY_ALL;
        res = (SampleResult) {
                .basis = SAMPLE_BASIS_DELTA,
                .wakeup_real_us = a.real_us,
                .a = &a,
                .b = &b,
                .threads_base = &m,
                .ranking = &rk,
                .resource = PSI_RESOURCE_CPU,
                .has_stall = true,
                .stall = PSI_STALL_SOME,
                .procs = info,
                .n_procs = 2,
        };
        ctx = (IncidentContext) {
                .type = "pressure",
                .id = "7840f08a-1-2-3",
                .host = &host,
                .agent_version = "0.1.0",
                .delayacct = true,
                .has_trigger = true,
                .trigger_cgroup = "system.slice/nginx.service",
                .trigger = { PSI_RESOURCE_CPU, PSI_STALL_SOME, 100000, 2000000 },
                .trigger_spec = "cpu some 50ms 1s",
        };

        j = build_and_reparse(&res, &ctx, &line);
        assert_int_equal(json_integer_value(json_object_get(j, "schema_version")), 1);
        assert_string_equal(json_string_value(json_object_get(j, "time")), "2026-11-22T08:44:01.123456Z");
        assert_true(json_is_true(json_object_get(json_object_get(j, "agent"), "delayacct")));
        t = json_object_get(j, "trigger");
        assert_string_equal(json_string_value(json_object_get(t, "cgroup")), "/system.slice/nginx.service");
        assert_int_equal(json_integer_value(json_object_get(t, "window_us")), 2000000);
        assert_string_equal(json_string_value(json_object_get(t, "spec")), "cpu some 50ms 1s");
        assert_true(json_is_null(json_object_get(json_object_get(j, "pressure"), "memory")));
        assert_int_equal(
                json_integer_value(json_object_get(
                        json_object_get(json_object_get(json_object_get(j, "pressure"), "cpu"), "full"), "total_us")),
                279339);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "sample"), "stall_us")), 457832);
        assert_true(json_is_null(json_object_get(json_object_get(j, "states"), "io_wait")));

        p = json_array_get(json_object_get(j, "most_delayed"), 0);
        t = json_object_get(p, "meta");
        assert_string_equal(json_string_value(json_object_get(t, "unit")), "nginx.service");
        assert_string_equal(json_string_value(json_object_get(t, "slice")), "system.slice");
        assert_true(json_is_null(json_object_get(t, "pod_uid")) && json_is_null(json_object_get(t, "qos")));
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), 100);
        /* Invalid UTF-8 replaced, quotes and control characters escaped by the encoder. */
        assert_string_equal(json_string_value(json_object_get(p, "comm")), "\xef\xbf\xbd\xef\xbf\xbd\"bad\\name\"");
        assert_string_equal(json_string_value(json_object_get(p, "cmdline")),
                            "nginx -g \"daemon off;\"\n\t\x1b[31m\xef\xbf\xbd");
        assert_int_equal(json_integer_value(json_object_get(p, "score_us")), 1000000); /* ns truncated to us */
        assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "delay_us"), "cpu")), 1000000);
        /* irq is not in this kernel's struct: null, not 0. */
        assert_true(json_is_null(json_object_get(json_object_get(p, "delay_us"), "irq")));
        /* Threads: the two with delay, not the idle one. */
        assert_int_equal(json_array_size(json_object_get(p, "threads")), 2);
        assert_string_equal(
                json_string_value(json_object_get(json_array_get(json_object_get(p, "threads"), 1), "comm")),
                "w\"k\n\x01");
        assert_non_null(strstr(line, "\\u0001"));
        assert_true(json_is_false(json_object_get(p, "ended")));
        assert_true(json_is_null(json_object_get(p, "parent")));

        /* A process that started and ended in the sample, placed by its parent. */
        p = json_array_get(json_object_get(j, "most_delayed"), 1);
        assert_true(json_is_true(json_object_get(p, "ended")));
        assert_int_equal(json_integer_value(json_object_get(p, "parent")), 100);
        assert_true(json_is_null(json_object_get(p, "cmdline")));
        assert_int_equal(json_array_size(json_object_get(p, "threads")), 0);
        /* Its cgroup is outside the agent's cgroup namespace: no "/.." path that exists nowhere. */
        assert_string_equal(json_string_value(json_object_get(p, "cgroup")), "outside the agent's cgroup namespace");
        assert_string_equal(
                json_string_value(json_object_get(json_array_get(json_object_get(j, "most_delayed"), 0), "cgroup")),
                "/system.slice/nginx.service");

        t = json_object_get(j, "sample");
        assert_int_equal(json_integer_value(json_object_get(t, "processes")), 2);
        assert_int_equal(json_integer_value(json_object_get(t, "threads_ms")), 251);
        t = json_object_get(t, "unattributed");
        assert_int_equal(json_integer_value(json_object_get(t, "processes")), 4);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "delay_us"), "cpu")), 7000);
        free(line);
        json_decref(j);
}

/* A storm's incident: its episode, and culprits from a node pass that an earlier overlapping
 * sample started (its window is not the sample's own, and says so). */
static void test_episode_and_shared_pass(void **state) {
        Snapshot a = { .real_us = 1795337041123456ULL, .mono_us = 5000000 }, b = { .mono_us = 6000000 };
        Ranking rk = {};
        Culprits c = { .resource = PSI_RESOURCE_CPU };
        CulpritScope scope = { .resource = PSI_RESOURCE_CPU, .node = true };
        SampleResult res = {
                .basis = SAMPLE_BASIS_DELTA,
                .wakeup_real_us = a.real_us,
                .a = &a,
                .b = &b,
                .ranking = &rk,
                .resource = PSI_RESOURCE_CPU,
                .culprits = &c,
                .culprit_scope = &scope,
                .has_culprit_window = true,
                .culprit_start_real_us = a.real_us - 400 * USEC_PER_MSEC,
                .culprit_duration_us = 1000400,
        };
        IncidentContext ctx = {
                .type = "pressure",
                .id = "x",
                .host = &host,
                .agent_version = "0.1.0",
                .episode = "7840f08a-19a2-2a-e3",
                .culprit_pass = "7840f08a-19a2-2a-p5",
        };
        json_t *j, *w;
        char *line;

        j = build_and_reparse(&res, &ctx, &line);
        assert_string_equal(json_string_value(json_object_get(j, "episode")), "7840f08a-19a2-2a-e3");
        json_t *cj = json_object_get(j, "culprits");
        assert_string_equal(json_string_value(json_object_get(cj, "shared_pass")), "7840f08a-19a2-2a-p5");
        w = json_object_get(cj, "window");
        assert_string_equal(json_string_value(json_object_get(w, "start")), "2026-11-22T08:44:00.723456Z");
        assert_int_equal(json_integer_value(json_object_get(w, "duration_ms")), 1000);
        free(line);
        json_decref(j);

        /* Its own pass, and no episode (a snapshot): null, never absent. */
        ctx.episode = ctx.culprit_pass = NULL;
        res.has_culprit_window = false;
        j = build_and_reparse(&res, &ctx, &line);
        assert_true(json_is_null(json_object_get(j, "episode")));
        cj = json_object_get(j, "culprits");
        assert_true(json_is_null(json_object_get(cj, "shared_pass")));
        assert_true(json_is_null(json_object_get(cj, "window")));
        free(line);
        json_decref(j);
}

static void test_snapshot_without_anything(void **state) {
        Snapshot a = {};
        Ranking rk = {};
        SampleResult res = { .basis = SAMPLE_BASIS_LIFETIME, .b = &a, .ranking = &rk, .resource = RANK_SCORE_ALL };
        IncidentContext ctx = {
                .type = "snapshot",
                .id = "x",
                .host = &host,
                .agent_version = "0.1.0",
        };
        ProcessInfo none = { .comm = "", .cmdline_len = -1, .uid = -1 };
        json_t *j, *p;
        char *line;

        j = build_and_reparse(&res, &ctx, &line);
        assert_true(json_is_null(json_object_get(j, "trigger")));
        assert_true(json_is_null(json_object_get(json_object_get(j, "agent"), "taskstats_version")));
        assert_true(json_is_null(json_object_get(json_object_get(j, "sample"), "stall_us")));
        /* No exit listener, no thread window: null, not 0. */
        assert_true(json_is_null(json_object_get(json_object_get(j, "sample"), "unattributed")));
        assert_true(json_is_null(json_object_get(json_object_get(j, "sample"), "threads_ms")));
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "states"), "source")), "procfs");
        assert_int_equal(json_array_size(json_object_get(j, "most_delayed")), 0);
        free(line);
        json_decref(j);

        /* An exited process: cmdline, uid and cgroup unknown. */
        ProcessDelta pd = { .tgid = 7, .total_ns = 1 };
        rk = (Ranking) { .procs = &pd, .n_procs = 1 };
        res.procs = &none;
        res.n_procs = 1;
        j = build_and_reparse(&res, &ctx, &line);
        p = json_array_get(json_object_get(j, "most_delayed"), 0);
        assert_true(json_is_null(json_object_get(p, "cmdline")));
        assert_true(json_is_null(json_object_get(p, "uid")));
        assert_true(json_is_null(json_object_get(p, "cgroup")));
        assert_true(json_is_null(json_object_get(json_object_get(p, "delay_us"), "cpu")));
        free(line);
        json_decref(j);
}

static void test_oom(void **state) {
        Snapshot a = { .taskstats_version = 16 };
        Ranking rk = {};
        OomKill k = {
                .has_header = true,
                .constraint = "CONSTRAINT_MEMCG",
                .oom_memcg = "/kubepods",
                .task_memcg = "/kubepods/pod1",
                .pid = 4242,
                .uid = 1000,
                .comm = "bad\xff(x) ",
                .comm_len = 8,
                .killed = true,
                .has_rss = true,
                .total_vm_kib = 50492,
                .anon_rss_kib = 40704,
                .file_rss_kib = 6100,
        };
        const char *related[] = { "new", "old" };
        OomReport oom = {
                .source = "kmsg",
                .kill = &k,
                .kills = 1,
                .cgroup = "kubepods/pod1",
                .victim_cgroup = "kubepods/pod1",
                .has_victim_delay = true,
                .victim_present = TASK_DELAY_MASK(TASK_DELAY_CPU) | TASK_DELAY_MASK(TASK_DELAY_RECLAIM),
                .victim_delay_source = "exit_record",
                .related = related,
                .n_related = 2,
        };
        oom.victim_delay_ns[TASK_DELAY_CPU] = 3 * NS_PER_MS;
        oom.victim_delay_ns[TASK_DELAY_RECLAIM] = 7 * NS_PER_MS + 999;
        SampleResult res = {
                .basis = SAMPLE_BASIS_LIFETIME,
                .b = &a,
                .ranking = &rk,
                .resource = PSI_RESOURCE_MEMORY,
                .has_stall = true,
        };
        IncidentContext ctx = {
                .type = "oom",
                .id = "x",
                .host = &host,
                .agent_version = "0.3.0",
                .oom = &oom,
        };
        json_t *j, *o, *v;
        char *line;

        j = build_and_reparse(&res, &ctx, &line);
        assert_string_equal(json_string_value(json_object_get(j, "type")), "oom");
        assert_true(json_is_null(json_object_get(j, "trigger")));
        o = json_object_get(j, "oom");
        assert_string_equal(json_string_value(json_object_get(o, "source")), "kmsg");
        assert_int_equal(json_integer_value(json_object_get(o, "kills")), 1);
        assert_string_equal(json_string_value(json_object_get(o, "constraint")), "CONSTRAINT_MEMCG");
        assert_string_equal(json_string_value(json_object_get(o, "oom_memcg")), "/kubepods");
        assert_true(json_is_false(json_object_get(o, "global")));
        assert_string_equal(json_string_value(json_object_get(o, "cgroup")), "/kubepods/pod1");
        v = json_object_get(o, "victim");
        assert_int_equal(json_integer_value(json_object_get(v, "pid")), 4242);
        /* A hostile name is made valid UTF-8, nothing else changed. */
        assert_string_equal(json_string_value(json_object_get(v, "comm")), "bad\xef\xbf\xbd(x) ");
        assert_int_equal(json_integer_value(json_object_get(v, "uid")), 1000);
        assert_string_equal(json_string_value(json_object_get(v, "cgroup")), "/kubepods/pod1");
        assert_string_equal(json_string_value(json_object_get(v, "memcg")), "/kubepods/pod1");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "rss_kib"), "anon")), 40704);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "rss_kib"), "shmem")), 0);
        assert_int_equal(json_integer_value(json_object_get(v, "total_vm_kib")), 50492);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "delay_us"), "cpu")), 3000);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "delay_us"), "reclaim")), 7000);
        assert_true(json_is_null(json_object_get(json_object_get(v, "delay_us"), "blkio")));
        assert_string_equal(json_string_value(json_object_get(v, "delay_source")), "exit_record");
        assert_int_equal(json_array_size(json_object_get(j, "related")), 2);
        assert_string_equal(json_string_value(json_array_get(json_object_get(j, "related"), 0)), "new");
        free(line);
        json_decref(j);

        /* Counted without kmsg, not measured, node-wide: victim null, basis none, related empty. */
        oom = (OomReport) { .source = "memory.oom_control", .kills = 3 };
        res.basis = SAMPLE_BASIS_NONE;
        j = build_and_reparse(&res, &ctx, &line);
        o = json_object_get(j, "oom");
        assert_true(json_is_null(json_object_get(o, "victim")));
        assert_true(json_is_null(json_object_get(o, "constraint")));
        assert_true(json_is_null(json_object_get(o, "global")));
        assert_true(json_is_null(json_object_get(o, "cgroup")));
        assert_int_equal(json_integer_value(json_object_get(o, "kills")), 3);
        assert_int_equal(json_array_size(json_object_get(j, "related")), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "sample"), "basis")), "none");
        free(line);
        json_decref(j);

        /* A Killed process line alone (its oom-kill line rate-limited away): no memcg, rss known. */
        k.has_header = false;
        oom = (OomReport) { .source = "kmsg", .kill = &k, .kills = 1 };
        res.basis = SAMPLE_BASIS_LIFETIME;
        j = build_and_reparse(&res, &ctx, &line);
        v = json_object_get(json_object_get(j, "oom"), "victim");
        assert_true(json_is_null(json_object_get(v, "memcg")));
        assert_true(json_is_null(json_object_get(v, "cgroup")));
        assert_true(json_is_null(json_object_get(v, "delay_us")));
        assert_true(json_is_null(json_object_get(v, "delay_source")));
        assert_true(json_is_null(json_object_get(json_object_get(j, "oom"), "oom_memcg")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(v, "rss_kib"), "file")), 6100);
        free(line);
        json_decref(j);
}

static void test_id(void **state) {
        char a[96], b[96];

        incident_format_id(&host, 1795337041123456ULL, 0x1234, 7, a, sizeof a);
        assert_string_equal(a, "7840f08a-660d97a969880-1234-7");
        incident_format_id(&host, 1795337041123456ULL, 0x1234, 8, b, sizeof b);
        assert_string_not_equal(a, b);
}

static void test_string_from_bytes(void **state) {
        char big[1000];
        json_t *s;

        memset(big, '\xff', sizeof big);
        s = json_string_from_bytes(big, sizeof big);
        assert_non_null(s);
        assert_int_equal(json_string_length(s), 3000);
        json_decref(s);
}

/* jansson's _new setters release the value themselves when they fail (a NULL container, or an
 * object into itself): set_new() and append_new() must not release it a second time. The extra
 * reference taken here shows whether they did. */
static void test_failed_set_releases_once(void **state) {
        json_t *v = json_string("x"), *o = json_object();

        assert_non_null(v);
        assert_non_null(o);
        json_incref(v);
        assert_int_equal(set_new(NULL, "k", v), -ENOMEM);
        assert_int_equal(v->refcount, 1);
        json_incref(v);
        assert_int_equal(append_new(NULL, v), -ENOMEM);
        assert_int_equal(v->refcount, 1);
        json_incref(o);
        assert_int_equal(set_new(o, "self", o), -ENOMEM);
        assert_int_equal(o->refcount, 1);
        assert_int_equal(set_new(o, "k", NULL), -ENOMEM);
        assert_int_equal(append_new(NULL, NULL), -ENOMEM);
        json_decref(v);
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pressure_incident),
                cmocka_unit_test(test_snapshot_without_anything),
                cmocka_unit_test(test_episode_and_shared_pass),
                cmocka_unit_test(test_oom),
                cmocka_unit_test(test_id),
                cmocka_unit_test(test_string_from_bytes),
                cmocka_unit_test(test_failed_set_releases_once),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
