/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "probes/cglimit.h"
#include "tests/unit/test-util.h"

static void test_find_cgroup2(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        CgroupLimit l;
        size_t len;

        assert_int_equal(sysroot_open(fixture("cgroup2"), &s), 0);
        /* pod1 sets no memory limit (memory.max "max"); its parent's memory.high does. */
        assert_int_equal(cgroup_limit_find(s, "kubepods.slice/pod1", PSI_RESOURCE_MEMORY, &len, &l), 0);
        assert_int_equal(len, strlen("kubepods.slice"));
        assert_int_equal(l.kind, CGROUP_LIMIT_MEMORY_HIGH);
        assert_int_equal(l.value, 1073741824);
        assert_string_equal(cgroup_limit_file(l.kind), "memory.high");
        /* A leading '/' is kept in the length. */
        assert_int_equal(cgroup_limit_find(s, "/kubepods.slice/pod1/", PSI_RESOURCE_MEMORY, &len, &l), 0);
        assert_int_equal(len, strlen("/kubepods.slice"));
        /* Its own cpu.max. */
        assert_int_equal(cgroup_limit_read(s, "kubepods.slice/pod1", PSI_RESOURCE_CPU, &l), 0);
        assert_int_equal(l.kind, CGROUP_LIMIT_CPU_MAX);
        assert_int_equal(l.value, 50000);
        assert_int_equal(l.period_us, 100000);
        /* io.max with every value "max" limits nothing. */
        assert_int_equal(cgroup_limit_read(s, "kubepods.slice/pod1", PSI_RESOURCE_IO, &l), 0);
        assert_int_equal(l.kind, CGROUP_LIMIT_NONE);
        assert_int_equal(cgroup_limit_find(s, "kubepods.slice/pod1", PSI_RESOURCE_IO, &len, &l), -ENOENT);
        /* The root is never a limit's scope; a missing cgroup limits nothing. */
        assert_int_equal(cgroup_limit_find(s, "", PSI_RESOURCE_MEMORY, &len, &l), -ENOENT);
        assert_int_equal(cgroup_limit_find(s, "no/such", PSI_RESOURCE_CPU, &len, &l), -ENOENT);
}

static void test_find_hybrid(void **state) {
        _cleanup_(sysroot_freep) Sysroot *s = NULL;
        CgroupLimit l;
        size_t len;

        assert_int_equal(sysroot_open(fixture("hybrid"), &s), 0);
        assert_string_equal(s->cpu_v1_path, "/sys/fs/cgroup/cpu,cpuacct");
        assert_string_equal(s->cpuacct_v1_path, "/sys/fs/cgroup/cpu,cpuacct");
        assert_null(s->blkio_v1_path);
        /* web's v1 twin is unlimited (PAGE_COUNTER_MAX); app's is 256 MiB. */
        assert_int_equal(cgroup_limit_find(s, "app/web", PSI_RESOURCE_MEMORY, &len, &l), 0);
        assert_int_equal(len, strlen("app"));
        assert_int_equal(l.kind, CGROUP_LIMIT_MEMORY_LIMIT_IN_BYTES);
        assert_int_equal(l.value, 268435456);
        assert_int_equal(cgroup_limit_read(s, "app/batch", PSI_RESOURCE_CPU, &l), 0);
        assert_int_equal(l.kind, CGROUP_LIMIT_CPU_CFS_QUOTA);
        assert_int_equal(l.value, 50000);
        assert_int_equal(l.period_us, 100000);
        assert_int_equal(cgroup_limit_read(s, "app/web", PSI_RESOURCE_CPU, &l), 0);
        assert_int_equal(l.kind, CGROUP_LIMIT_NONE);
        /* No blkio mount: no io limit, no error. */
        assert_int_equal(cgroup_limit_read(s, "app/web", PSI_RESOURCE_IO, &l), 0);
        assert_int_equal(l.kind, CGROUP_LIMIT_NONE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find_cgroup2),
                cmocka_unit_test(test_find_hybrid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
