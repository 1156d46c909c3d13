/* SPDX-License-Identifier: MIT */
/* oom incidents (agent/oom.c) on a real Agent (fake-agent.h) watching app (its output f.out) and
 * app/web (f.out2): which kills a watch covers, one incident per distinct output of the covering
 * watches, written at once with no window or after the sample of the victim's cgroup on the loop,
 * the victim's cgroup and delays, the related pressure incidents, the sampling bound of an OOM
 * storm, and the kills still sampling written when the agent stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/oom.h"
#include "agent/watch.h"
#include "tests/unit/fake-agent.h"
#include "tests/unit/test-util.h"

static int start(void **state, unsigned sample_ms) {
        static FakeAgent f;
        char text[1024];

        fake_agent_open(&f);
        snprintf(text, sizeof text,
                 "{ \"output\": \"%s\", \"sample_ms\": %u, \"watch\": [ { \"cgroup\": \"app\", \"triggers\": [\"cpu "
                 "some "
                 "100ms 2s\"] }, { \"cgroup\": \"app/web\", \"output\": \"%s\", \"triggers\": [\"memory some 100ms "
                 "2s\"] } ] }",
                 f.out, sample_ms, f.out2);
        fake_agent_start(&f, text);
        assert_non_null(watch_add(&f.a, &f.config->watches[0], "app"));
        assert_non_null(watch_add(&f.a, &f.config->watches[1], "app/web"));
        *state = &f;
        return 0;
}

static int setup_now(void **state) {
        return start(state, 0);
}

static int setup_sampled(void **state) {
        return start(state, 100);
}

static int setup_long(void **state) {
        return start(state, 60000);
}

static int teardown(void **state) {
        fake_agent_close(*state);
        return 0;
}

/* The string at a dotted path of incident j ("oom.victim.comm"), NULL when it is not a string. */
static const char *str_at(json_t *j, const char *path) {
        char key[64];

        while (j && strchr(path, '.')) {
                size_t n = strcspn(path, ".");
                snprintf(key, sizeof key, "%.*s", (int) n, path);
                j = json_object_get(j, key);
                path += n + 1;
        }
        return j ? json_string_value(json_object_get(j, path)) : NULL;
}

static json_int_t int_at(json_t *j, const char *object, const char *key) {
        return json_integer_value(json_object_get(json_object_get(j, object), key));
}

/* The kill of web (pid 100), as /dev/kmsg tells it. */
static OomKill web_kill(void) {
        OomKill k = { .has_header = true, .pid = 100, .uid = 0, .comm = "web", .comm_len = 3, .killed = true };

        snprintf(k.task_memcg, sizeof k.task_memcg, "/app/web");
        return k;
}

/* From /proc/<pid>/cgroup while the victim is there, else the kernel's task_memcg, else unknown. */
static void test_victim_cgroup(void **state) {
        FakeAgent *f = *state;
        OomKill k = web_kill();
        _cleanup_free_ char *live = NULL, *memcg = NULL, *unknown = NULL;

        snprintf(k.task_memcg, sizeof k.task_memcg, "/elsewhere");
        live = oom_victim_cgroup(&f->a, &k);
        assert_string_equal(live, "app/web"); /* the fixture's /proc/100/cgroup, not task_memcg */
        k.pid = 4242;                         /* gone from /proc */
        memcg = oom_victim_cgroup(&f->a, &k);
        assert_string_equal(memcg, "elsewhere");
        k.has_header = false;
        unknown = oom_victim_cgroup(&f->a, &k);
        assert_null(unknown);
}

/* A kill no watch covers (another cgroup; an unknown one, which only node-wide or root watches
 * cover) writes nothing and counts nothing. */
static void test_not_watched(void **state) {
        FakeAgent *f = *state;

        oom_report(&f->a, NULL, "other", "memory.events", 1);
        oom_report(&f->a, NULL, NULL, "memory.events", 1);
        assert_int_equal(fake_agent_lines(f->out), 0);
        assert_int_equal(fake_agent_lines(f->out2), 0);
        assert_int_equal(f->a.counters.oom_kills, 0);
}

/* With no window, a kill counted in app/web is written at once, once to each output of the two
 * watches covering it, with the pressure incidents before it in app as related and counted by the
 * deepest watch; one in app/batch only to app's output. */
static void test_counted_at_once(void **state) {
        FakeAgent *f = *state;
        json_t *j;

        assert_int_equal(history_add(&f->a.history, "app", "pressure-1", now_usec(CLOCK_MONOTONIC)), 0);
        oom_report(&f->a, NULL, "app/web", "memory.events", 3);
        assert_int_equal(fake_agent_lines(f->out), 1);
        assert_int_equal(fake_agent_lines(f->out2), 1);
        j = fake_agent_incident(f->out2, 0);
        assert_string_equal(str_at(j, "type"), "oom");
        assert_string_equal(str_at(j, "oom.source"), "memory.events");
        assert_int_equal(int_at(j, "oom", "kills"), 3);
        assert_string_equal(str_at(j, "oom.cgroup"), "/app/web");
        assert_true(json_is_null(json_object_get(json_object_get(j, "oom"), "victim")));
        assert_string_equal(str_at(j, "sample.basis"), "lifetime");
        assert_int_equal(json_array_size(json_object_get(j, "related")), 1);
        assert_string_equal(json_string_value(json_array_get(json_object_get(j, "related"), 0)), "pressure-1");
        json_decref(j);
        assert_int_equal(f->a.counters.oom_kills, 3);
        assert_int_equal(f->a.counters.n_watch, 1);
        assert_string_equal(f->a.counters.watch[0].label, "app/web");
        assert_int_equal(f->a.counters.watch[0].incidents[COUNTERS_INCIDENT_OOM][PSI_RESOURCE_MEMORY], 1);

        oom_report(&f->a, NULL, "app/batch", "memory.events", 1);
        assert_int_equal(fake_agent_lines(f->out), 2);
        assert_int_equal(fake_agent_lines(f->out2), 1);
        j = fake_agent_incident(f->out, 1);
        assert_string_equal(str_at(j, "oom.cgroup"), "/app/batch");
        json_decref(j);
}

/* A kill learnt from kmsg, sampled on the loop: written when the sample ends, naming the victim,
 * with its delays from taskstats right after the kill. */
static void test_kill_sampled(void **state) {
        FakeAgent *f = *state;
        OomKill k = web_kill();
        _cleanup_free_ char *victim = oom_victim_cgroup(&f->a, &k);
        json_t *j;

        oom_report(&f->a, &k, victim, "kmsg", 1);
        assert_int_equal(fake_agent_lines(f->out2), 0); /* sampling */
        for (int i = 0; i < 50 && fake_agent_lines(f->out2) == 0; i++)
                fake_agent_run_for(f, 20);
        assert_int_equal(fake_agent_lines(f->out2), 1);
        j = fake_agent_incident(f->out2, 0);
        assert_string_equal(str_at(j, "sample.basis"), "delta");
        assert_int_equal(int_at(json_object_get(j, "oom"), "victim", "pid"), 100);
        assert_string_equal(str_at(j, "oom.victim.comm"), "web");
        assert_string_equal(str_at(j, "oom.victim.cgroup"), "/app/web");
        assert_string_equal(str_at(j, "oom.victim.delay_source"), "taskstats");
        json_decref(j);
}

/* An OOM storm: OOM_SAMPLING_MAX kills sample at once, the next is written at once without
 * measuring a task; stopping the agent writes those still sampling, from snapshot A. */
static void test_storm_and_stop(void **state) {
        FakeAgent *f = *state;
        OomKill k = web_kill();
        json_t *j;

        for (int i = 0; i <= OOM_SAMPLING_MAX; i++)
                oom_report(&f->a, &k, "app/web", "kmsg", 1);
        assert_int_equal(fake_agent_lines(f->out2), 1);
        j = fake_agent_incident(f->out2, 0);
        assert_string_equal(str_at(j, "sample.basis"), "none");
        json_decref(j);

        oom_stop(&f->a);
        assert_int_equal(fake_agent_lines(f->out2), OOM_SAMPLING_MAX + 1);
        j = fake_agent_incident(f->out2, OOM_SAMPLING_MAX);
        assert_string_equal(str_at(j, "sample.basis"), "lifetime");
        json_decref(j);
        assert_int_equal(f->a.counters.oom_kills, OOM_SAMPLING_MAX + 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_victim_cgroup, setup_now, teardown),
                cmocka_unit_test_setup_teardown(test_not_watched, setup_now, teardown),
                cmocka_unit_test_setup_teardown(test_counted_at_once, setup_now, teardown),
                cmocka_unit_test_setup_teardown(test_kill_sampled, setup_sampled, teardown),
                cmocka_unit_test_setup_teardown(test_storm_and_stop, setup_long, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
