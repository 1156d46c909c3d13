/* SPDX-License-Identifier: MIT */
/* A kill incident's "kill.prekill" (incident/prekill-report.h) from measures made by hand: the
 * times between the call, the answer, the second reading and the kill (each null when it did not
 * happen, before_kill_ms only for a kill), the delays' growth between the readings (clamped at 0
 * when a counter went back, null for a kind the kernel did not give), the memory limits (no limit
 * null, v1 with no high), the pressure, the processes summed over every one measured but listed
 * only up to PREKILL_REPORT_LISTED, and hostile names kept valid JSON. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "incident/prekill-report.h"
#include "tests/unit/test-util.h"

#define MS (1000ULL)
#define T0 (5000 * USEC_PER_SEC) /* the call, on CLOCK_MONOTONIC */

static PrekillMeasure *measure(size_t n_procs) {
        PrekillMeasure *m = calloc(1, sizeof *m);

        assert_non_null(m);
        strcpy(m->cgroup, "/system.slice/batch.service");
        m->notified_mono_us = T0;
        m->notified_real_us = 1767225600 * USEC_PER_SEC; /* 2026-01-01T00:00:00Z */
        m->n_procs = n_procs;
        m->processes_total = n_procs;
        m->procs = calloc(n_procs ? n_procs : 1, sizeof *m->procs);
        assert_non_null(m->procs);
        for (size_t i = 0; i < n_procs; i++) {
                PrekillProcess *p = &m->procs[i];
                p->pid = 1000 + (pid_t) i;
                snprintf(p->comm, sizeof p->comm, "worker%zu", i);
                p->has_memory = true;
                p->memory = (ProcMemory) {
                        .rss_kib = 100 * (i + 1), .anon_kib = 80, .file_kib = 20, .swap_kib = i, .uid = 1000
                };
        }
        return m;
}

static void measure_free(PrekillMeasure *m) {
        free(m->procs);
        free(m);
}

static json_int_t int_at(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);

        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

static void assert_null_at(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);

        assert_non_null(v); /* present, as the schema requires, and null */
        assert_true(json_is_null(v));
}

/* A kill 1.5 s after the call, answered in 2 ms, the second reading 1 s after it. */
static void test_killed(void **state) {
        PrekillMeasure *m = measure(2);
        m->replied_mono_us = T0 + 2 * MS;
        m->last_mono_us = T0 + 1000 * MS;

        json_t *o = prekill_report_object(m, "killed", T0 + 1500 * MS);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "cgroup")), "/system.slice/batch.service");
        assert_string_equal(json_string_value(json_object_get(o, "outcome")), "killed");
        assert_string_equal(json_string_value(json_object_get(o, "time")), "2026-01-01T00:00:00.000000Z");
        assert_int_equal(int_at(o, "answered_us"), 2000);
        assert_int_equal(int_at(o, "before_kill_ms"), 1500);
        assert_int_equal(int_at(o, "window_ms"), 1000);
        assert_true(json_is_false(json_object_get(o, "gone")));
        assert_int_equal(int_at(o, "processes_total"), 2);
        assert_int_equal(int_at(o, "rss_kib"), 100 + 200);
        assert_int_equal(int_at(o, "swap_kib"), 0 + 1);
        assert_null_at(o, "memory");   /* not read */
        assert_null_at(o, "pressure"); /* not read */
        json_t *procs = json_object_get(o, "processes");
        assert_int_equal(json_array_size(procs), 2);
        json_t *p = json_array_get(procs, 1);
        assert_int_equal(int_at(p, "pid"), 1001);
        assert_string_equal(json_string_value(json_object_get(p, "comm")), "worker1");
        assert_null_at(p, "cmdline");
        assert_int_equal(int_at(p, "uid"), 1000);
        assert_int_equal(int_at(p, "rss_kib"), 200);
        assert_int_equal(int_at(p, "swap_kib"), 1);
        assert_null_at(p, "delay_us"); /* no taskstats reading */
        assert_null_at(p, "delay_total_us");
        json_decref(o);
        measure_free(m);
}

/* No kill: no before_kill_ms, whatever time is passed; not answered (a oneway call) and no second
 * reading: null, not 0. */
static void test_no_kill(void **state) {
        PrekillMeasure *m = measure(0);
        m->gone = true;

        json_t *o = prekill_report_object(m, "no_kill", T0 + 900 * MS);
        assert_non_null(o);
        assert_string_equal(json_string_value(json_object_get(o, "outcome")), "no_kill");
        assert_null_at(o, "before_kill_ms");
        assert_null_at(o, "answered_us");
        assert_null_at(o, "window_ms");
        assert_true(json_is_true(json_object_get(o, "gone")));
        assert_int_equal(int_at(o, "rss_kib"), 0);
        assert_int_equal(json_array_size(json_object_get(o, "processes")), 0);
        json_decref(o);

        /* A kill time before the call (a victim of an earlier kill) says nothing of this call. */
        o = prekill_report_object(m, "killed", T0 - 1);
        assert_non_null(o);
        assert_null_at(o, "before_kill_ms");
        json_decref(o);
        measure_free(m);
}

/* delay_us is the growth between the readings, delay_total_us the second reading; a kind not in
 * present is null in both; a counter lower at the second reading grew by 0. */
static void test_delays(void **state) {
        PrekillMeasure *m = measure(1);
        PrekillProcess *p = &m->procs[0];
        p->has_first = p->has_last = true;
        p->present = TASK_DELAY_MASK(TASK_DELAY_CPU) | TASK_DELAY_MASK(TASK_DELAY_RECLAIM) |
                     TASK_DELAY_MASK(TASK_DELAY_THRASHING);
        p->first_ns[TASK_DELAY_CPU] = 5 * NS_PER_MS;
        p->last_ns[TASK_DELAY_CPU] = 305 * NS_PER_MS;
        p->first_ns[TASK_DELAY_RECLAIM] = 0;
        p->last_ns[TASK_DELAY_RECLAIM] = 40 * NS_PER_MS;
        p->first_ns[TASK_DELAY_THRASHING] = 9 * NS_PER_MS; /* went back */
        p->last_ns[TASK_DELAY_THRASHING] = 7 * NS_PER_MS;
        p->first_ns[TASK_DELAY_BLKIO] = 1 * NS_PER_MS; /* not present: ignored */
        p->last_ns[TASK_DELAY_BLKIO] = 3 * NS_PER_MS;

        json_t *o = prekill_report_object(m, "killed", T0 + 10 * MS);
        json_t *proc = json_array_get(json_object_get(o, "processes"), 0);
        json_t *d = json_object_get(proc, "delay_us"), *total = json_object_get(proc, "delay_total_us");
        assert_non_null(d);
        assert_non_null(total);
        assert_int_equal(int_at(d, "cpu"), 300000);
        assert_int_equal(int_at(d, "reclaim"), 40000);
        assert_int_equal(int_at(d, "thrashing"), 0);
        assert_null_at(d, "blkio");
        assert_int_equal(int_at(total, "cpu"), 305000);
        assert_int_equal(int_at(total, "thrashing"), 7000);
        assert_null_at(total, "blkio");
        assert_int_equal(json_object_size(d), _TASK_DELAY_MAX); /* every kind, null or not */
        json_decref(o);

        /* The first reading alone: no growth, its totals. */
        p->has_last = false;
        o = prekill_report_object(m, "killed", T0 + 10 * MS);
        proc = json_array_get(json_object_get(o, "processes"), 0);
        assert_null_at(proc, "delay_us");
        assert_int_equal(int_at(json_object_get(proc, "delay_total_us"), "cpu"), 5000);
        json_decref(o);
        measure_free(m);
}

static void test_memory_and_pressure(void **state) {
        PrekillMeasure *m = measure(1);
        m->has_memory = true;
        m->memory = (MemoryLimits) {
                .source = LIMITS_SOURCE_V2,
                .has_current = true,
                .current_bytes = 96 << 20,
                .has_max = true,
                .max_bytes = 128 << 20,
                .has_high = true,
                .high_bytes = LIMITS_UNLIMITED,
                .has_anon = true,
                .anon_bytes = 64 << 20,
                .events = { .has_max = true, .max = 12, .has_oom_kill = true, .oom_kill = 0 },
        };
        m->has_pressure = true;
        m->pressure.has[PSI_STALL_SOME] = true;
        m->pressure.line[PSI_STALL_SOME] = (PressureLine) { .avg10 = 42.5, .total_us = 123456 };

        json_t *o = prekill_report_object(m, "killed", T0 + 10 * MS);
        json_t *mem = json_object_get(o, "memory");
        assert_true(json_is_object(mem));
        assert_string_equal(json_string_value(json_object_get(mem, "source")), "cgroup2");
        assert_int_equal(int_at(mem, "current_kib"), 96 * 1024);
        assert_int_equal(int_at(mem, "max_kib"), 128 * 1024);
        assert_null_at(mem, "high_kib"); /* "max": no limit */
        assert_int_equal(int_at(mem, "anon_kib"), 64 * 1024);
        assert_null_at(mem, "file_kib");
        assert_null_at(mem, "workingset_refault_anon");
        json_t *ev = json_object_get(mem, "events");
        assert_int_equal(int_at(ev, "max"), 12);
        assert_int_equal(int_at(ev, "oom_kill"), 0);
        assert_null_at(ev, "high");
        assert_null_at(ev, "oom");
        json_t *pr = json_object_get(o, "pressure");
        assert_true(json_is_object(pr));
        assert_null_at(pr, "full");
        json_t *some = json_object_get(pr, "some");
        assert_int_equal(int_at(some, "total_us"), 123456);
        assert_true(json_real_value(json_object_get(some, "avg10")) == 42.5);
        json_decref(o);

        /* A v1 memcg without a limit: max null, high null (v1 has none). */
        m->memory = (MemoryLimits) { .source = LIMITS_SOURCE_V1, .has_max = true, .max_bytes = LIMITS_UNLIMITED };
        o = prekill_report_object(m, "killed", T0 + 10 * MS);
        mem = json_object_get(o, "memory");
        assert_string_equal(json_string_value(json_object_get(mem, "source")), "cgroup-v1");
        assert_null_at(mem, "max_kib");
        assert_null_at(mem, "high_kib");
        json_decref(o);
        measure_free(m);
}

/* Every process measured counts in the sums, the first PREKILL_REPORT_LISTED alone are listed. */
static void test_listed_bound(void **state) {
        size_t n = PREKILL_REPORT_LISTED + 5;
        PrekillMeasure *m = measure(n);
        uint64_t rss = 0;

        m->processes_total = 40; /* more in the subtree than were measured */
        for (size_t i = 0; i < n; i++)
                rss += m->procs[i].memory.rss_kib;
        json_t *o = prekill_report_object(m, "killed", T0 + 10 * MS);
        assert_int_equal(json_array_size(json_object_get(o, "processes")), PREKILL_REPORT_LISTED);
        assert_int_equal(int_at(o, "rss_kib"), rss);
        assert_int_equal(int_at(o, "processes_total"), 40);
        assert_int_equal(int_at(json_array_get(json_object_get(o, "processes"), PREKILL_REPORT_LISTED - 1), "pid"),
                         1000 + PREKILL_REPORT_LISTED - 1);
        json_decref(o);
        measure_free(m);
}

/* A comm, a command line and a cgroup name that are not UTF-8, or hold NULs and escapes, still
 * make valid JSON strings. */
static void test_hostile_names(void **state) {
        PrekillMeasure *m = measure(1);
        PrekillProcess *p = &m->procs[0];
        static const char cmd[] = "sh\0-c\0\xff\xfe\"}\n";

        strcpy(m->cgroup, "/user.slice/\xc3(bad");
        memcpy(p->comm, "x\"\xff\x1b[2J", 8);
        memcpy(p->cmdline, cmd, sizeof cmd - 1);
        p->cmdline_len = sizeof cmd - 1;
        p->has_cmdline = true;

        json_t *o = prekill_report_object(m, "killed", T0 + 10 * MS);
        assert_non_null(o);
        char *text = json_dumps(o, 0);
        assert_non_null(text);
        json_t *back = json_loads(text, 0, NULL);
        assert_non_null(back); /* what was written parses */
        const char *cg = json_string_value(json_object_get(back, "cgroup"));
        assert_non_null(cg);
        assert_true(strncmp(cg, "/user.slice/", 12) == 0);
        json_t *proc = json_array_get(json_object_get(back, "processes"), 0);
        assert_non_null(json_string_value(json_object_get(proc, "comm")));
        const char *cl = json_string_value(json_object_get(proc, "cmdline"));
        assert_non_null(cl);
        assert_true(strncmp(cl, "sh", 2) == 0);
        json_decref(back);
        free(text);
        json_decref(o);
        measure_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_killed),       cmocka_unit_test(test_no_kill),
                cmocka_unit_test(test_delays),       cmocka_unit_test(test_memory_and_pressure),
                cmocka_unit_test(test_listed_bound), cmocka_unit_test(test_hostile_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
