/* SPDX-License-Identifier: MIT */
/* A watch's sample scope on a fake tree (fake-tree.h), built as the agent builds it when a trigger
 * fires (agent/watch.c watch_start_sample()): the tree's /proc, the cgroup, a culprit pass over a
 * scope of its own, "on what" and the identities, so tests run the real Sampler on it. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base/macro.h"
#include "sampling/sampler.h"
#include "tests/unit/test-util.h"

typedef struct FakeScope {
        Sysroot sysroot;
        int cgroup_fd;
        CulpritScope culprit;
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
        f->scope = (SampleScope) { .sysroot = &f->sysroot,
                                   .taskstats = ts,
                                   .cgroup_fd = f->cgroup_fd,
                                   .resource = PSI_RESOURCE_CPU,
                                   .detail = 10,
                                   .culprit = &f->culprit,
                                   .onwhat = onwhat,
                                   .limits_cgroup = "",
                                   .limits_resource = PSI_RESOURCE_CPU,
                                   .cgroup_path = "",
                                   .identities = ids };
}

static inline void fake_scope_close(FakeScope *f) {
        culprit_scope_close(&f->culprit);
        safe_close(f->cgroup_fd);
        safe_close(f->sysroot.proc_fd);
}
