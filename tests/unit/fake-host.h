/* SPDX-License-Identifier: MIT */
/* A host for the sampling tests: a fixture tree's sysroot (tests/fixtures/) and a fake taskstats
 * source (fake-taskstats.h) answering for the fixture's tasks. Owns both and the task table the
 * source borrows, so a FakeHost stays where it is (a static of the test) while it is open. */
#pragma once

#include "probes/sysroot.h"
#include "tests/unit/fake-taskstats.h"

#define FAKE_HOST_TASKS_MAX 6

typedef struct FakeHost {
        FakeTask tasks[FAKE_HOST_TASKS_MAX]; /* the test may change one between two snapshots */
        size_t n_tasks;
        Sysroot *sysroot;
        TaskstatsSource *ts;
} FakeHost;

/* The hybrid fixture (fixture("hybrid")) as a busy host answers: web (tgid 100) with thread 100 at
 * 300 ms of cpu delay and 5 ms of reclaim, and thread 101 "worker" at 1 ms of cpu; 102 ended
 * (ESRCH); 200 refused (EPERM); 201 "cruncher" and 1 "systemd" at 1 ms of cpu. Asserts. */
void fake_host_open_busy(FakeHost *h);
/* The tree at root (the hybrid fixture or a copy of it) where every task answers, calm (1 ms of cpu
 * delay each): 100 "web", 101 "worker" (of 100) and 200 "batch". Asserts. */
void fake_host_open_calm(FakeHost *h, const char *root);
void fake_host_close(FakeHost *h);

/* cmocka group setup and teardown: *state a FakeHost of its own, opened busy, then closed. */
int fake_host_setup_busy(void **state);
int fake_host_teardown(void **state);
