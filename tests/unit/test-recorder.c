/* SPDX-License-Identifier: MIT */
/* The recorder (sampling/recorder.c): a ring of entries as deep as asked, the exit records each
 * entry needs kept and the older ones forgotten, the entry a window starts from, and a sample that
 * starts from it (sampler_start_recorded): its window and its culprits cover the recorded past. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "probes/limits-find.h"
#include "sampling/recorder.h"
#include "sampling/sampler.h"
#include "tests/unit/fake-host.h"
#include "tests/unit/fake-scope.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

typedef struct Env {
        FakeHost host;
        int fd;
        SampleScope scope;
} Env;

static int setup(void **state) {
        static Env env;

        fake_host_open_calm(&env.host, fixture("hybrid"));
        assert_int_equal(sysroot_open_cgroup(env.host.sysroot, "app", &env.fd), 0);
        env.scope = (SampleScope) { .sysroot = env.host.sysroot,
                                    .taskstats = env.host.ts,
                                    .cgroup_fd = env.fd,
                                    .resource = PSI_RESOURCE_CPU,
                                    .detail = 2 };
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;

        close(env->fd);
        fake_host_close(&env->host);
        return 0;
}

static void add_exit(Recorder *r, pid_t tid) {
        TaskStats t = fake_task_stats(tid, tid, "gone", NULL);
        assert_int_equal(exit_records_add(&r->exits, &t, NULL), 0);
}

/* Depth: the entries reaching depth_ms back, plus two; the oldest go, with the exit records only
 * they needed; the entry a window starts from is the newest at or before its start. */
static void test_ring(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Recorder r;

        recorder_init(&r, loop, NULL);
        assert_null(recorder_find(&r, 0));
        assert_int_equal(recorder_start(&r, &env->scope, 500, 2000), 0);
        assert_true(r.running);
        assert_int_equal(r.depth, 6);
        assert_int_equal(r.n, 1);
        assert_true(r.ring[0].a.processes == 2);
        for (int i = 0; i < 7; i++) {
                add_exit(&r, 1000 + i); /* one record after each entry */
                usleep(2000);
                assert_int_equal(recorder_take(&r), 0);
        }
        /* 8 taken, 6 kept: the two oldest gone, and the two records only they needed. */
        assert_int_equal(r.n, 6);
        assert_int_equal(r.entries_total, 8);
        assert_int_equal(r.exits.n, 5);
        assert_int_equal(r.exits.items[0].t.tid, 1002);
        for (size_t i = 0; i < r.n; i++)
                assert_int_equal(r.ring[(r.oldest + i) % r.depth].exits_from, i);

        RecordedEntry *oldest = &r.ring[r.oldest], *third = &r.ring[(r.oldest + 2) % r.depth];
        assert_ptr_equal(recorder_find(&r, 0), oldest); /* before everything: the oldest there is */
        assert_ptr_equal(recorder_find(&r, third->a.mono_us), third);
        assert_ptr_equal(recorder_find(&r, third->a.mono_us + 1), third);
        assert_ptr_equal(recorder_find(&r, UINT64_MAX), &r.ring[(r.oldest + 5) % r.depth]);

        recorder_stop(&r);
        assert_false(r.running);
        assert_null(recorder_find(&r, UINT64_MAX));
        /* A cgroup that cannot be listed: nothing runs. */
        SampleScope gone = env->scope;
        gone.cgroup_fd = -1;
        gone.sysroot = &(Sysroot) { .proc_fd = -1, .root_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 };
        assert_true(recorder_start(&r, &gone, 500, 2000) < 0);
        assert_false(r.running);
        recorder_free(&r);
        ev_loop_destroy(loop);
}

/* An exit storm: past RECORDER_EXITS_MAX records the oldest entries go first, then the oldest
 * records, counted as lost. */
static void test_exit_storm(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Recorder r;

        recorder_init(&r, loop, NULL);
        assert_int_equal(recorder_start(&r, &env->scope, 500, 2000), 0);
        assert_int_equal(recorder_take(&r), 0);
        for (int i = 0; i < RECORDER_EXITS_MAX + 10; i++)
                add_exit(&r, 5000 + i);
        assert_int_equal(recorder_take(&r), 0);
        /* The older entry went (the records came after the newer one), then 10 records beyond the
         * bound; the new entry follows. */
        assert_int_equal(r.n, 2);
        assert_int_equal(r.ring[r.oldest].exits_from, 0);
        assert_int_equal(r.exits.n, RECORDER_EXITS_MAX);
        assert_int_equal(r.lost_total, 10);
        recorder_free(&r);
        ev_loop_destroy(loop);
}

static void on_done(Sampler *s, int r) {
        *(int *) s->userdata = r;
}

/* A sample from a recorded entry: A is that entry (taken before the wakeup), the exit records
 * heard since then are merged, the culprit pass starts there, and the result says so. The delays
 * grow with every query, so the recorded window holds more than the sample after it. */
static void test_sample_from_recording(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        ProcessInfoBuffer ids = { .items = calloc(8, sizeof(ProcessInfo)), .cap = 8 };
        CulpritScope culprit = { .resource = PSI_RESOURCE_CPU, .same = true, .cgroup_fd = -1, .v1_fd = -EBADF };
        SampleScope scope = env->scope;
        Recorder rec;
        Sampler s, plain;
        int r = 1;

        scope.culprit = &culprit;
        scope.identities = &ids;
        fake_taskstats_set_growth(env->host.ts, 1 * NS_PER_MS);
        recorder_init(&rec, loop, NULL);
        assert_int_equal(recorder_start(&rec, &scope, 500, 2000), 0);
        usleep(20000);
        assert_int_equal(recorder_take(&rec), 0);
        usleep(20000);
        assert_int_equal(recorder_take(&rec), 0);
        /* A process that started after the first entry and ended: its record is merged. */
        TaskStats t = fake_task_stats(300, 300, "burst", (uint64_t[_TASK_DELAY_MAX]) { 40 * NS_PER_MS });
        t.ppid = 100;
        assert_int_equal(exit_records_add(&rec.exits, &t, NULL), 0);
        RecordedEntry *first = &rec.ring[rec.oldest];
        uint64_t first_mono = first->a.mono_us, first_real = first->a.real_us;

        sampler_init(&s, loop, NULL, on_done, &r);
        assert_int_equal(sampler_start_recorded(&s, &scope, 100, &rec, first_mono), 0);
        /* Borrowed: the entry and the older ones forgotten, the recorder running until its owner
         * stops it (here, so that the loop ends with the sample). */
        assert_true(rec.running);
        assert_int_equal(rec.n, 2);
        assert_true(rec.ring[rec.oldest].a.mono_us > first_mono);
        recorder_stop(&rec);
        ev_run(loop, 0);
        assert_int_equal(r, 0);
        assert_true(s.result.recorded);
        assert_int_equal(s.a.mono_us, first_mono);
        assert_int_equal(s.a.real_us, first_real);
        assert_true(s.b.mono_us >= first_mono + 140 * 1000); /* 40 ms recorded, 100 ms after */
        assert_true(s.result.has_culprit_window);
        assert_int_equal(s.result.culprit_start_real_us, first_real);
        const ProcessDelays *burst = snapshot_find_process(&s.b, 300);
        assert_non_null(burst);
        assert_int_equal(burst->origin, PROCESS_SHORT);
        uint64_t recorded_web = 0, plain_web = 0;
        for (size_t i = 0; i < s.ranking.n_procs; i++)
                if (s.ranking.procs[i].tgid == 100)
                        recorded_web = s.ranking.procs[i].delay_ns[TASK_DELAY_CPU];

        /* The same sample without the recording: its window starts now. */
        r = 1;
        sampler_init(&plain, loop, NULL, on_done, &r);
        assert_int_equal(sampler_start_recorded(&plain, &scope, 100, &rec, first_mono), 0); /* no entries: plain */
        ev_run(loop, 0);
        assert_int_equal(r, 0);
        assert_false(plain.result.recorded);
        assert_null(snapshot_find_process(&plain.b, 300));
        for (size_t i = 0; i < plain.ranking.n_procs; i++)
                if (plain.ranking.procs[i].tgid == 100)
                        plain_web = plain.ranking.procs[i].delay_ns[TASK_DELAY_CPU];
        /* Each query grows the delays: the recorded window saw the recorder's queries too. */
        assert_true(recorded_web > plain_web);

        fake_taskstats_set_growth(env->host.ts, 0);
        sampler_free(&s);
        sampler_free(&plain);
        recorder_free(&rec);
        free(ids.items);
        ev_loop_destroy(loop);
}

#define CTR "kubepods.slice/pod1.slice/ctr"

/* The cpu.stat of CTR's limit: kubepods.slice's cpu.max. */
static void write_cpu_stat(const char *dir, unsigned nr_throttled, unsigned throttled_usec) {
        char text[256];

        snprintf(text, sizeof text,
                 "usage_usec 800000\nuser_usec 500000\nsystem_usec 300000\nnr_periods 100\nnr_throttled %u\n"
                 "throttled_usec %u\n",
                 nr_throttled, throttled_usec);
        assert_int_equal(fake_tree_write(dir, "sys/fs/cgroup/kubepods.slice/cpu.stat", text), 0);
}

/* "On what" over the recorded window: each entry reads the limit's counters, and a sample that
 * starts from an entry counts the cpu throttling from it, not from its wakeup. A reading at
 * another location (the limit moved) leaves the sample's own start. */
static void test_onwhat_from_recording(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        char dir[] = "/tmp/psidiag-test-recorder-XXXXXX";
        _cleanup_(sysroot_freep) Sysroot *root = NULL;
        _cleanup_(limits_hierarchy_freep) LimitsHierarchy *h = NULL;
        SampleScope scope = env->scope;
        OnWhat ow = {}, plain_ow = {};
        Recorder rec;
        Sampler s, plain;
        int r = 1;

        assert_int_equal(fake_tree_copy(dir, fixture("limits-cgroup2")), 0);
        write_cpu_stat(dir, 0, 0);
        assert_int_equal(sysroot_open(dir, &root), 0);
        assert_int_equal(limits_hierarchy_open(root, &h), 0);
        assert_int_equal(onwhat_init(&ow), 0);
        assert_int_equal(onwhat_init(&plain_ow), 0);
        scope.limits = h;
        scope.limits_cgroup = CTR;
        scope.limits_resource = PSI_RESOURCE_CPU;

        recorder_init(&rec, loop, NULL);
        assert_int_equal(recorder_start(&rec, &scope, 500, 2000), 0);
        assert_true(rec.located);
        assert_string_equal(rec.loc.limited_path, "kubepods.slice");
        RecordedEntry *first = &rec.ring[rec.oldest];
        assert_non_null(first->onwhat);
        assert_true(first->onwhat->has_limits);
        assert_int_equal(first->onwhat->cpu.throttled_us, 0);
        /* Throttled for 0.4 s while recorded, 0.2 s more by the wakeup. */
        write_cpu_stat(dir, 4, 400000);
        usleep(2000);
        assert_int_equal(recorder_take(&rec), 0);
        assert_int_equal(rec.ring[(rec.oldest + 1) % rec.depth].onwhat->cpu.throttled_us, 400000);
        write_cpu_stat(dir, 6, 600000);

        scope.onwhat = &ow;
        sampler_init(&s, loop, NULL, on_done, &r);
        assert_int_equal(sampler_start_recorded(&s, &scope, 100, &rec, first->a.mono_us), 0);
        recorder_stop(&rec); /* the owner's: the loop ends with the sample */
        ev_run(loop, 0);
        assert_int_equal(r, 0);
        assert_true(s.result.recorded);
        assert_true(ow.has_a && ow.has_b);
        assert_int_equal(ow.cpu_a.throttled_us, 0); /* the window's start, recorded */
        assert_int_equal(ow.cpu_b.throttled_us, 600000);

        /* Without the recording: from the wakeup, none of the recorded throttling. */
        r = 1;
        scope.onwhat = &plain_ow;
        sampler_init(&plain, loop, NULL, on_done, &r);
        assert_int_equal(sampler_start(&plain, &scope, 50), 0);
        ev_run(loop, 0);
        assert_int_equal(r, 0);
        assert_int_equal(plain_ow.cpu_a.throttled_us, 600000);
        assert_int_equal(plain_ow.cpu_b.throttled_us, 600000);

        /* A reading at another location is not the sample's start. */
        LimitsLocation moved = plain_ow.loc;
        snprintf(moved.limited_path, sizeof moved.limited_path, "kubepods.slice/pod1.slice");
        onwhat_begin_at(&plain_ow, &moved, first->onwhat);
        assert_int_equal(plain_ow.cpu_a.throttled_us, 600000);
        onwhat_begin_at(&plain_ow, &plain_ow.loc, first->onwhat);
        assert_int_equal(plain_ow.cpu_a.throttled_us, 0);

        sampler_free(&s);
        sampler_free(&plain);
        recorder_free(&rec);
        onwhat_done(&ow);
        onwhat_done(&plain_ow);
        assert_int_equal(fake_tree_remove(dir), 0);
        ev_loop_destroy(loop);
}

/* A sample can start from the ring only when the recorder records what it samples, and has a
 * past: an entry taken at least half the shortest period before the wakeup. */
static void test_matches(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        CulpritScope node = { .resource = PSI_RESOURCE_CPU, .node = true, .cgroup_fd = -1, .v1_fd = -EBADF },
                     limit = node;
        SampleScope scope = env->scope, other;
        Recorder r;

        limit.node = false;
        snprintf(limit.path, sizeof limit.path, "app");
        scope.culprit = &node;
        scope.cgroup_path = "app";
        recorder_init(&r, loop, NULL);
        assert_false(recorder_matches(&r, &scope, UINT64_MAX)); /* not recording */
        assert_int_equal(recorder_start(&r, &scope, 500, 2000), 0);
        uint64_t first = r.ring[0].a.mono_us;
        assert_false(recorder_matches(&r, &scope, first)); /* began at this wakeup */
        assert_false(recorder_matches(&r, &scope, first + 249 * 1000));
        assert_true(recorder_matches(&r, &scope, first + 250 * 1000));
        other = scope;
        other.resource = PSI_RESOURCE_IO;
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        other = scope;
        other.culprit = &limit;
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        other.culprit = NULL;
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        other = scope;
        other.cgroup_fd = -1; /* node-wide */
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        /* Another cgroup: its path says so, whatever its descriptor. */
        other = scope;
        other.cgroup_path = "app/web";
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        other.cgroup_path = NULL;
        assert_false(recorder_matches(&r, &other, UINT64_MAX));
        other.cgroup_path = "app";
        assert_true(recorder_matches(&r, &other, UINT64_MAX));
        recorder_free(&r);
        ev_loop_destroy(loop);
}

static void set_total(RecordedEntry *e, uint64_t total_us) {
        e->a.has_pressure[PSI_RESOURCE_CPU] = true;
        e->a.pressure[PSI_RESOURCE_CPU].has[PSI_STALL_SOME] = true;
        e->a.pressure[PSI_RESOURCE_CPU].line[PSI_STALL_SOME].total_us = total_us;
}

/* The window starts where the fired line's stall began: a burst after quiet entries starts at the
 * entry just before it; a stall spread over the window at the first entry. */
static void test_onset(void **state) {
        Env *env = *state;
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Recorder r;

        recorder_init(&r, loop, NULL);
        assert_null(recorder_find_onset(&r, 0, PSI_RESOURCE_CPU, PSI_STALL_SOME, 0));
        assert_int_equal(recorder_start(&r, &env->scope, 500, 4000), 0);
        for (int i = 0; i < 4; i++)
                assert_int_equal(recorder_take(&r), 0);
        RecordedEntry *e[5];
        for (size_t i = 0; i < 5; i++)
                e[i] = &r.ring[(r.oldest + i) % r.depth];
        /* A burst between the third and the fourth entry: 1 ms of trickle, then 300 ms. */
        uint64_t quiet[5] = { 1000, 1200, 1500, 1800, 300000 };
        for (size_t i = 0; i < 5; i++)
                set_total(e[i], quiet[i]);
        assert_ptr_equal(recorder_find_onset(&r, 0, PSI_RESOURCE_CPU, PSI_STALL_SOME, 310000), e[3]);
        /* The growth over a window before the newest entry: from the entry at or before its start
         * (the oldest, when the ring is not so deep), to the newest. */
        uint64_t growth, total;
        assert_true(recorder_growth(&r, PSI_RESOURCE_CPU, PSI_STALL_SOME, UINT64_MAX / 2, &growth, &total));
        assert_int_equal(growth, 300000 - 1000);
        assert_int_equal(total, 300000);
        assert_true(recorder_growth(&r, PSI_RESOURCE_CPU, PSI_STALL_SOME, e[4]->a.mono_us - e[2]->a.mono_us, &growth,
                                    &total));
        assert_int_equal(growth, 300000 - 1500);
        assert_false(recorder_growth(&r, PSI_RESOURCE_CPU, PSI_STALL_SOME, 0, &growth, &total)); /* one entry */
        /* From a later start: never before it. */
        assert_ptr_equal(recorder_find_onset(&r, e[1]->a.mono_us, PSI_RESOURCE_CPU, PSI_STALL_SOME, 310000), e[3]);
        /* Spread: the first entry. */
        uint64_t spread[5] = { 1000, 80000, 160000, 240000, 320000 };
        for (size_t i = 0; i < 5; i++)
                set_total(e[i], spread[i]);
        assert_ptr_equal(recorder_find_onset(&r, 0, PSI_RESOURCE_CPU, PSI_STALL_SOME, 400000), e[0]);
        /* No growth, or no pressure read: the first entry. */
        assert_ptr_equal(recorder_find_onset(&r, 0, PSI_RESOURCE_CPU, PSI_STALL_SOME, 1000), e[0]);
        for (size_t i = 0; i < 5; i++)
                e[i]->a.has_pressure[PSI_RESOURCE_IO] = false;
        assert_ptr_equal(recorder_find_onset(&r, 0, PSI_RESOURCE_IO, PSI_STALL_SOME, 400000), e[0]);
        recorder_free(&r);
        ev_loop_destroy(loop);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ring),
                cmocka_unit_test(test_exit_storm),
                cmocka_unit_test(test_sample_from_recording),
                cmocka_unit_test(test_onwhat_from_recording),
                cmocka_unit_test(test_matches),
                cmocka_unit_test(test_onset),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
