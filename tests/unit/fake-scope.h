/* SPDX-License-Identifier: MIT */
/* A watch's sample scope on a fake tree (fake-tree.h), built by the agent's own builder
 * (core_watch_scope(), agent/core.h) for a watch of the tree's root with top 10: the tree's /proc,
 * the cgroup, a culprit pass over a scope of its own, "on what" and the identities, so tests run
 * the real Sampler on the scope a trigger's sample has. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "agent/core.h"
#include "base/macro.h"
#include "sampling/sampler.h"
#include "tests/unit/test-util.h"

typedef struct FakeScope {
        Sysroot sysroot;
        int cgroup_fd;
        CulpritScope culprit;
        WatchConfig cfg;
        Agent agent; /* only what the builder reads: the sysroot, taskstats, the identities */
        Watch watch;
        SampleScope scope; /* points into the FakeScope: keep it where it is */
} FakeScope;

static inline void fake_scope_open(FakeScope *f, const char *dir, TaskstatsSource *ts, OnWhat *onwhat,
                                   ProcessInfoBuffer *ids) {
        char path[256];

        *f = (FakeScope) { .sysroot = { .root_fd = -1, .pressure_fd = -1, .cgroup2_fd = -1 } };
        snprintf(path, sizeof path, "%s/proc", dir);
        f->sysroot.proc_fd = open(path, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        f->cgroup_fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(f->sysroot.proc_fd >= 0 && f->cgroup_fd >= 0);
        f->culprit = (CulpritScope) { .resource = PSI_RESOURCE_CPU,
                                      .cgroup_fd = fcntl(f->cgroup_fd, F_DUPFD_CLOEXEC, 3),
                                      .v1_fd = -EBADF };
        f->cfg = (WatchConfig) { .top = 10 };
        f->agent.rt = (Runtime) { .sysroot = &f->sysroot, .taskstats = ts };
        f->watch = (Watch) { .agent = &f->agent, .cfg = &f->cfg, .path = (char *) "" };
        f->scope = core_watch_scope(&f->watch, f->cgroup_fd, PSI_RESOURCE_CPU, &f->culprit);
        f->scope.onwhat = onwhat;
        f->scope.identities = ids; /* the test's buffer, not the fake agent's */
}

static inline void fake_scope_close(FakeScope *f) {
        culprit_scope_close(&f->culprit);
        safe_close(f->cgroup_fd);
        safe_close(f->sysroot.proc_fd);
}
