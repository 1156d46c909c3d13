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

#include "agent/pools.h"
#include "agent/recording.h"
#include "agent/sample.h"
#include "agent/stall.h"
#include "agent/watch.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define MS USEC_PER_MSEC
#define PRESSURE "sys/fs/cgroup/unified/app/cpu.pressure"
#define PROCS "sys/fs/cgroup/unified/app/cgroup.procs"

typedef struct Env {
        char dir[64], out[96];
        FakeTask tasks[3];
        Agent a;
        Config *config;
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
        assert_int_equal(fake_tree_write(env->dir, PRESSURE, text), 0);
}

static void on_break(struct ev_loop *loop, ev_timer *timer, int revents) {
        ev_break(loop, EVBREAK_ALL);
}

/* Runs the loop for ms (the recorder's ticks, a sample's window). */
static void run_for(Env *env, unsigned ms) {
        ev_timer t;

        ev_timer_init(&t, on_break, ms / 1000.0, 0.);
        ev_now_update(env->a.loop);
        ev_timer_start(env->a.loop, &t);
        ev_run(env->a.loop, 0);
        ev_timer_stop(env->a.loop, &t);
}

/* Runs the loop until the watch's sample has ended. */
static void run_sample(Env *env) {
        for (int i = 0; i < 100 && env->w->timing.sampling; i++)
                run_for(env, 20);
        assert_false(env->w->timing.sampling);
}

static size_t lines(const char *path) {
        FILE *f = fopen(path, "r");
        size_t n = 0;
        int c;

        if (!f)
                return 0;
        while ((c = fgetc(f)) != EOF)
                n += c == '\n';
        fclose(f);
        return n;
}

static int setup(void **state) {
        static Env env;
        static const uint64_t calm[_TASK_DELAY_MAX] = { 1000000 };
        char cmd[256], text[512], *error = NULL;
        Agent *a = &env.a;

        env = (Env) {
                .dir = "/tmp/psidiag-test-stall-XXXXXX",
                .tasks = {
                        { .tid = 100, .stats = fake_task_stats(100, 100, "web", calm) },
                        { .tid = 101, .stats = fake_task_stats(101, 100, "worker", calm) },
                        { .tid = 200, .stats = fake_task_stats(200, 200, "batch", calm) },
                },
        };
        assert_non_null(mkdtemp(env.dir));
        snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s'", fixture("hybrid"), env.dir);
        assert_int_equal(system(cmd), 0);
        snprintf(env.out, sizeof env.out, "%s/incidents.jsonl", env.dir);
        /* One sample at a time: a recording counted as running when it is not takes the only place. */
        snprintf(text, sizeof text,
                 "{ \"output\": \"%s\", \"sample_ms\": 100, \"cooldown_ms\": 0, \"record_s\": 60, "
                 "\"max_concurrent_samples\": 1, \"watch\": [ { \"cgroup\": \"app\", \"triggers\": [\"cpu some "
                 "100ms 2s\"] } ] }",
                 env.out);
        assert_int_equal(config_parse(text, strlen(text), "t.json", &env.config, &error), 0);

        a->config = env.config;
        a->loop = ev_loop_new(EVFLAG_AUTO);
        assert_int_equal(sysroot_open(env.dir, &a->rt.sysroot), 0);
        a->rt.taskstats = fake_taskstats_new(env.tasks, 3);
        a->top_max = 10;
        a->procs = (ProcessInfoBuffer) { .items = calloc(20, sizeof(ProcessInfo)), .cap = 20 };
        assert_int_equal(closer_new(4, NULL, &a->closer), 0);
        assert_int_equal(psi_set_new(&a->psi), 0);
        fd_budget_init(&a->fds, 64, a->closer);
        assert_int_equal(rate_limit_init(&a->rate, 0), 0);
        assert_int_equal(history_init(&a->history, 60 * USEC_PER_SEC), 0);
        assert_int_equal(pools_start(a), 0);
        assert_int_equal(pools_onwhat_reserve(a, 1), 0);
        assert_int_equal(recording_start(a, stall_trigger_fired), 0);

        /* The watch, and its trigger as arming leaves it (a fake tree has no trigger to write). */
        stall(&env, 0);
        env.w = watch_add(a, &env.config->watches[0], "app");
        assert_non_null(env.w);
        env.t = calloc(1, sizeof *env.t);
        *env.t = (Trigger) { .watch = env.w,
                             .cfg = &env.config->watches[0].triggers[0],
                             .effective = env.config->watches[0].triggers[0].spec,
                             .handle = -1 };
        snprintf(cmd, sizeof cmd, "%s/%s", env.dir, PRESSURE);
        env.t->fd = open(cmd, O_RDONLY | O_CLOEXEC);
        assert_true(env.t->fd >= 0);
        wakeup_total_arm(&env.t->total, env.total_us, now_usec(CLOCK_MONOTONIC));
        env.w->triggers[env.w->n_triggers++] = env.t;
        a->armed++;
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;
        Agent *a = &env->a;

        recording_stop(a);
        while (a->n_watches > 0)
                watch_remove(a, a->watches[a->n_watches - 1]);
        pools_stop(a);
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_free(a->sinks[i]);
        free(a->sinks);
        free(a->watches);
        free(a->procs.items);
        history_done(&a->history);
        counters_done(&a->counters);
        rate_limit_done(&a->rate);
        a->psi = psi_set_free(a->psi);
        a->closer = closer_free(a->closer);
        taskstats_source_free(a->rt.taskstats);
        sysroot_free(a->rt.sysroot);
        ev_loop_destroy(a->loop);
        config_free(env->config);
        assert_int_equal(fake_tree_remove(env->dir), 0);
        return 0;
}

/* A wakeup with stall, its sample, and whether it started from the recorder's ring. */
static bool sample_once(Env *env, bool fail) {
        stall(env, 300 * MS);
        stall_trigger_fired(env->t);
        assert_true(env->w->timing.sampling);
        bool recorded = env->w->sampler.recorded;
        /* B cannot list the cgroup: the sample fails as when its cgroup goes. */
        if (fail) {
                char path[128];
                snprintf(path, sizeof path, "%s/%s", env->dir, PROCS);
                assert_int_equal(unlink(path), 0);
        }
        run_sample(env);
        if (fail)
                assert_int_equal(fake_tree_write(env->dir, PROCS, ""), 0);
        return recorded;
}

/* The path as it goes: the first incident starts the recording, the next sample starts from it. */
static void test_recorded_path(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        assert_int_equal(lines(env->out), 1);
        assert_int_equal(env->a.counters.recordings, 1);
        run_for(env, 700); /* an entry of the past to start from */
        assert_true(sample_once(env, false));
        assert_int_equal(lines(env->out), 2);
        assert_int_equal(env->a.counters.wakeups[WAKEUP_SAMPLE], 2);
}

/* A recorded sample that fails (B cannot be taken) writes nothing, and the watch is still recorded:
 * its next sample starts from the ring again, and the one place for a recording is not held by a
 * recorder that stopped. */
static void test_failed_sample(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        run_for(env, 700);
        assert_true(sample_once(env, true));
        assert_int_equal(lines(env->out), 1);
        run_for(env, 700);
        assert_true(sample_once(env, false));
        assert_int_equal(lines(env->out), 2);
        assert_int_equal(env->a.counters.recordings_refused, 0);
}

/* A recorded sample dropped (a reload took its trigger; the agent stops) likewise. */
static void test_dropped_sample(void **state) {
        Env *env = *state;

        assert_false(sample_once(env, false));
        run_for(env, 700);
        stall(env, 300 * MS);
        stall_trigger_fired(env->t);
        assert_true(env->w->timing.sampling);
        assert_true(env->w->sampler.recorded);
        sample_drop(env->w, "a test");
        assert_false(env->w->timing.sampling);
        run_for(env, 700);
        assert_true(sample_once(env, false));
        assert_int_equal(lines(env->out), 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_recorded_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_failed_sample, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropped_sample, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
