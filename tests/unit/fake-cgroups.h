/* SPDX-License-Identifier: MIT */
/* A scratch cgroup2 tree for the container lookups of one test file: the cache verifies a
 * container's cgroup (containers/ctrverify.h), so every cgroup a test looks up is made first, as its
 * runtime makes it (fake_tree_cgroup()). A cmocka group's setup and teardown; one tree per file. */
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "containers/containers.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static char fake_cgroups[] = "/tmp/psidiag-cgroups-XXXXXX";
static int fake_cgroups_fd = -EBADF;

static inline int fake_cgroups_make(void **state) {
        if (!mkdtemp(fake_cgroups))
                return -1;
        fake_cgroups_fd = open(fake_cgroups, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fake_cgroups_fd < 0 ? -1 : 0;
}

static inline int fake_cgroups_remove(void **state) {
        close(fake_cgroups_fd);
        return fake_tree_remove(fake_cgroups);
}

/* container_cache_lookup() of path, its cgroup made first as its runtime makes it. */
static inline const ContainerInfo *fake_cgroups_lookup(ContainerCache *c, const char *path) {
        if (path && !strstr(path, "/.."))
                assert_int_equal(fake_tree_cgroup(fake_cgroups, path), 0);
        return container_cache_lookup(c, path);
}
