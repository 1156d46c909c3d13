/* SPDX-License-Identifier: MIT */
/* The pressure path of a watch (agent/stall.c) on a fake tree, with the recording module
 * (agent/recording.c) that follows it: a wakeup judged, its sample started (from the recorder's
 * ring once the watch is recorded), its incident written; and a sample that fails or is dropped,
 * after which the watch is still recorded and its next sample starts from the ring. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/sample.h"
#include "agent/stall.h"
#include "agent/watch.h"
#include "tests/unit/fake-agent.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define PRESSURE "sys/fs/cgroup/unified/app/cpu.pressure"
#define PROCS "sys/fs/cgroup/unified/app/cgroup.procs"

typedef struct Env {
        FakeAgent f;
        Watch *w;
        Trigger *t;
        uint64_t total_us;
} Env;

/* The fired line's total grows by us (the kernel's stall), as cpu.pressure says it. */
static void stall(Env *env, uint64_t us) {
        char text[256];

        env->total_us += us;
        snprintf(text, sizeof text,
                 "some avg10=40.00 avg60=10.00 avg300=2.00 total=%llu\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
                 "total=0\n",
                 (unsigned long long) env->total_us);
        assert_int_equal(fake_tree_write(env->f.dir, PRESSURE, text), 0);
}

/* Runs the loop until the watch's sample has ended. */
static void run_sample(Env *env) {
        for (int i = 0; i < 100 && env->w->timing.sampling; i++)
                fake_agent_run_for(&env->f, 20);
        assert_false(env->w->timing.sampling);
}

static int setup(void **state) {
        static Env env;
        char path[256], text[512];
        Agent *a = &env.f.a;

        env = (Env) {};
        fake_agent_open(&env.f);
        /* One sample at a time: a recording counted as running when it is not takes the only place. */
        snprintf(text, sizeof text,
                 "{ \"output\": \"%s\", \"sample_ms\": 100, \"cooldown_ms\": 0, \"record_s\": 60, "
                 "\"max_concurrent_samples\": 1, \"watch\": [ { \"cgroup\": \"app\", \"triggers\": [\"cpu some "
                 "100ms 2s\"] } ] }",
                 env.f.out);
        fake_agent_start(&env.f, text);

        /* The watch, and its trigger as arming leaves it (a fake tree has no trigger to write). */
        stall(&env, 0);
        env.w = watch_add(a, &env.f.config->watches[0], "app");
        assert_non_null(env.w);
        env.t = calloc(1, sizeof *env.t);
        *env.t = (Trigger) { .watch = env.w,
                             .cfg = &env.f.config->watches[0].triggers[0],
                             .effective = env.f.config->watches[0].triggers[0].spec,
                             .handle = -1 };
        snprintf(path, sizeof path, "%s/%s", env.f.dir, PRESSURE);
        env.t->fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(env.t->fd >= 0);
        wakeup_total_arm(&env.t->total, env.total_us, now_usec(CLOCK_MONOTONIC));
        env.w->triggers[env.w->n_triggers++] = env.t;
        a->armed++;
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;

        fake_agent_close(&env->f);
        return 0;
}

/* A wakeup with stall, its sample, and whether it started from the recorder's ring. */
static bool sample_once(Env *env, bool fail) {
        stall(env, 300 * US_PER_MS);
        stall_trigger_fired(env->t);
        assert_true(env->w->timing.sampling);
        bool recorded = env->w->sampler.recorded;
        /* B cannot list the cgroup: the sample fails as when its cgroup goes. */
        if (fail) {
                char path[128];
                snprintf(path, sizeof path, "%s/%s", env->f.dir, PROCS);
                assert_int_equal(unlink(path), 0);
        }
        run_sample(env);
        if (fail)
                assert_int_equal(fake_tree_write(env->f.dir, PROCS, ""), 0);
        return recorded;
}

/* The path as it goes: the first incident starts the recording, the next sample starts from it. */
static void test_recorded_path(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        assert_int_equal(fake_agent_lines(env->f.out), 1);
        assert_int_equal(env->f.a.counters.recordings, 1);
        fake_agent_run_for(&env->f, 700); /* an entry of the past to start from */
        assert_true(sample_once(env, false));
        assert_int_equal(fake_agent_lines(env->f.out), 2);
        assert_int_equal(env->f.a.counters.wakeups[WAKEUP_SAMPLE], 2);
}

/* A recorded sample that fails (B cannot be taken) writes nothing, and the watch is still recorded:
 * its next sample starts from the ring again, and the one place for a recording is not held by a
 * recorder that stopped. */
static void test_failed_sample(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        fake_agent_run_for(&env->f, 700);
        assert_true(sample_once(env, true));
        assert_int_equal(fake_agent_lines(env->f.out), 1);
        fake_agent_run_for(&env->f, 700);
        assert_true(sample_once(env, false));
        assert_int_equal(fake_agent_lines(env->f.out), 2);
        assert_int_equal(env->f.a.counters.recordings_refused, 0);
}

/* A recorded sample dropped (a reload took its trigger; the agent stops) likewise. */
static void test_dropped_sample(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        fake_agent_run_for(&env->f, 700);
        stall(env, 300 * US_PER_MS);
        stall_trigger_fired(env->t);
        assert_true(env->w->timing.sampling);
        assert_true(env->w->sampler.recorded);
        sample_drop(env->w, "a test");
        assert_false(env->w->timing.sampling);
        fake_agent_run_for(&env->f, 700);
        assert_true(sample_once(env, false));
        assert_int_equal(fake_agent_lines(env->f.out), 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_recorded_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_sample, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropped_sample, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
