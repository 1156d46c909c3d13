/* SPDX-License-Identifier: MIT */
/* The end of every incident (agent/report.c) on a real Agent (fake-agent.h): the id numbered from
 * the agent's sequence (or the one reserved when the sample started), the incident written once to
 * each sink it is given and to no other, counted by watch, type and resource (a pressure
 * incident's stall, recorded window, passed stall and lost exit records from its result), and the
 * metrics file rewritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/report.h"
#include "agent/watch.h"
#include "tests/unit/fake-agent.h"
#include "tests/unit/test-util.h"

typedef struct Env {
        FakeAgent f;
        Watch *app, *web; /* app writes to f.out, app/web to f.out2 */
        Snapshot a, b;
        Ranking ranking;
        SampleResult res;
} Env;

static int setup(void **state) {
        static Env env;
        char text[1024];

        env = (Env) {};
        fake_agent_open(&env.f);
        snprintf(text, sizeof text,
                 "{ \"output\": \"%s\", \"metrics_file\": \"%s\", \"watch\": [ { \"cgroup\": \"app\", \"triggers\": "
                 "[\"cpu some 100ms 2s\"] }, { \"cgroup\": \"app/web\", \"output\": \"%s\", \"triggers\": [\"memory "
                 "some 100ms 2s\"] } ] }",
                 env.f.out, env.f.metrics, env.f.out2);
        fake_agent_start(&env.f, text);
        env.app = watch_add(&env.f.a, &env.f.config->watches[0], "app");
        env.web = watch_add(&env.f.a, &env.f.config->watches[1], "app/web");
        assert_non_null(env.app);
        assert_non_null(env.web);
        assert_ptr_not_equal(env.app->sink, env.web->sink);
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;

        fake_agent_close(&env->f);
        return 0;
}

/* A delta result of no process whose cpu some total grew by stall_us over one second. */
static const SampleResult *delta(Env *env, uint64_t stall_us) {
        PressureStats p = { .has = { [PSI_STALL_SOME] = true } };

        env->a = env->b = (Snapshot) { .has_pressure = { [PSI_RESOURCE_CPU] = true } };
        p.line[PSI_STALL_SOME].total_us = 5 * USEC_PER_SEC;
        env->a.pressure[PSI_RESOURCE_CPU] = p;
        p.line[PSI_STALL_SOME].total_us += stall_us;
        env->b.pressure[PSI_RESOURCE_CPU] = p;
        env->a.mono_us = 10 * USEC_PER_SEC;
        env->b.mono_us = 11 * USEC_PER_SEC;
        env->ranking = (Ranking) {};
        env->res = (SampleResult) { .basis = SAMPLE_BASIS_DELTA,
                                    .wakeup_real_us = 1700000000 * USEC_PER_SEC,
                                    .a = &env->a,
                                    .b = &env->b,
                                    .ranking = &env->ranking,
                                    .resource = PSI_RESOURCE_CPU,
                                    .has_stall = true,
                                    .stall = PSI_STALL_SOME };
        return &env->res;
}

/* The text of the file at path, or "" (a static buffer). */
static const char *text_of(const char *path) {
        static char buf[65536];
        FILE *f = fopen(path, "re");
        size_t n = 0;

        if (f) {
                n = fread(buf, 1, sizeof buf - 1, f);
                fclose(f);
        }
        buf[n] = '\0';
        return buf;
}

static bool contains(const char *path, const char *needle) {
        return strstr(text_of(path), needle) != NULL;
}

/* An oom incident ended through both watches' sinks, then one through app's alone: numbered 1 and
 * 2, each line where it was sent and nowhere else, counted by watch and type, and the metrics file
 * saying so. */
static void test_publish(void **state) {
        Env *env = *state;
        Agent *a = &env->f.a;
        char id[HISTORY_ID_MAX], first[HISTORY_ID_MAX], needle[HISTORY_ID_MAX + 16];
        OomReport rep = { .source = "memory.events", .kills = 2, .cgroup = "app", .victim_cgroup = "app/web" };
        IncidentContext ctx = { .type = "oom", .id = id, .host = &a->rt.host, .oom = &rep };
        Sink *both[] = { env->app->sink, env->web->sink };
        ReportEnd end = { .agent = a,
                          .id = id,
                          .id_size = sizeof id,
                          .sinks = both,
                          .n_sinks = 2,
                          .count = { .label = "app/web",
                                     .type = COUNTERS_INCIDENT_OOM,
                                     .resource = PSI_RESOURCE_MEMORY,
                                     .oom_kills = 2 } };

        assert_int_equal(report_publish(delta(env, 0), &ctx, &end), 0);
        assert_int_equal(a->seq, 1);
        assert_true(strlen(id) > 0);
        snprintf(first, sizeof first, "%s", id);
        snprintf(needle, sizeof needle, "\"id\":\"%s\"", id);
        assert_int_equal(fake_agent_lines(env->f.out), 1);
        assert_int_equal(fake_agent_lines(env->f.out2), 1);
        assert_true(contains(env->f.out, needle));
        assert_true(contains(env->f.out2, needle));
        assert_true(contains(env->f.out, "\"type\":\"oom\""));
        assert_int_equal(env->app->sink->written, 1);
        assert_int_equal(env->web->sink->written, 1);
        assert_int_equal(a->counters.oom_kills, 2);
        assert_int_equal(a->counters.samples, 0); /* an oom incident is not a pressure sample */
        assert_true(contains(env->f.metrics, "psidiag_oom_kills_total 2\n"));
        assert_true(contains(env->f.metrics,
                             "psidiag_incidents_total{watch=\"app/web\",type=\"oom\",resource=\"memory\"} 1\n"));

        end.n_sinks = 1;
        assert_int_equal(report_publish(delta(env, 0), &ctx, &end), 0);
        assert_int_equal(a->seq, 2);
        assert_string_not_equal(id, first);
        assert_int_equal(fake_agent_lines(env->f.out), 2);
        assert_int_equal(fake_agent_lines(env->f.out2), 1);
        assert_int_equal(a->counters.oom_kills, 4);
        assert_true(contains(env->f.metrics,
                             "psidiag_incidents_total{watch=\"app/web\",type=\"oom\",resource=\"memory\"} 2\n"));
}

/* An id reserved when the sample started is the incident's: not numbered again. */
static void test_reserved_id(void **state) {
        Env *env = *state;
        Agent *a = &env->f.a;
        char id[HISTORY_ID_MAX], reserved[HISTORY_ID_MAX], needle[HISTORY_ID_MAX + 16];
        OomReport rep = { .source = "kmsg", .kills = 1 };
        IncidentContext ctx = { .type = "oom", .id = id, .host = &a->rt.host, .oom = &rep };
        ReportEnd end = { .agent = a,
                          .id = id,
                          .reserved = true,
                          .id_size = sizeof id,
                          .sinks = &env->app->sink,
                          .n_sinks = 1,
                          .count = { .label = "app", .type = COUNTERS_INCIDENT_OOM, .resource = PSI_RESOURCE_MEMORY } };

        report_reserve_id(a, 1700000000 * USEC_PER_SEC, id, sizeof id);
        assert_int_equal(a->seq, 1);
        snprintf(reserved, sizeof reserved, "%s", id);
        assert_int_equal(report_publish(delta(env, 0), &ctx, &end), 0);
        assert_int_equal(a->seq, 1);
        assert_string_equal(id, reserved);
        snprintf(needle, sizeof needle, "\"id\":\"%s\"", reserved);
        assert_true(contains(env->f.out, needle));
}

/* A pressure incident counts a sample, its window's basis, its stall, and whether the stall that
 * fired had passed (cpu some 100ms 2s over a 1 s window expects 50 ms: 40 ms is seen, 1 ms has
 * passed); its lost exit records come from its result's B. */
static void test_pressure_counts(void **state) {
        Env *env = *state;
        Agent *a = &env->f.a;
        char id[HISTORY_ID_MAX];
        IncidentContext ctx = { .type = "pressure",
                                .id = id,
                                .host = &a->rt.host,
                                .has_trigger = true,
                                .trigger_cgroup = "app",
                                .trigger = env->app->cfg->triggers[0].spec,
                                .trigger_spec = "cpu some 100ms 2s" };
        ReportEnd end = { .agent = a,
                          .id = id,
                          .id_size = sizeof id,
                          .sinks = &env->app->sink,
                          .n_sinks = 1,
                          .count = {
                                  .label = "app", .type = COUNTERS_INCIDENT_PRESSURE, .resource = PSI_RESOURCE_CPU } };

        SampleResult *res = (SampleResult *) delta(env, 40 * US_PER_MS);
        res->recorded = true;
        env->b.lost_exit_records = 3;
        assert_int_equal(report_publish(res, &ctx, &end), 0);
        assert_int_equal(a->counters.samples, 1);
        assert_int_equal(a->counters.windows[1], 1); /* recorded */
        assert_int_equal(a->counters.windows_passed, 0);
        assert_int_equal(a->counters.exit_records_lost, 3);

        res = (SampleResult *) delta(env, 1 * US_PER_MS);
        assert_int_equal(report_publish(res, &ctx, &end), 0);
        assert_int_equal(a->counters.samples, 2);
        assert_int_equal(a->counters.windows[0], 1); /* after the wakeup */
        assert_int_equal(a->counters.windows_passed, 1);
        assert_int_equal(a->counters.exit_records_lost, 3);
        assert_int_equal(fake_agent_lines(env->f.out), 2);
        /* 41 ms of stall in app's two samples. */
        assert_true(contains(env->f.metrics, "psidiag_stall_seconds_total{watch=\"app\",resource=\"cpu\"} 0.041000\n"));
        assert_true(contains(env->f.metrics,
                             "psidiag_incidents_total{watch=\"app\",type=\"pressure\",resource=\"cpu\"} 2\n"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_publish, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reserved_id, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pressure_counts, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
