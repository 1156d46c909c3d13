/* SPDX-License-Identifier: MIT */
/* Hottest cgroups: growth between two walks, the deepest explaining cgroup kept, quiet ones and
 * explained parents left out, cgroups born or gone during the sample; and the walk itself on a
 * fixture tree. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampling/hot.h"
#include "tests/unit/test-util.h"

static void add(CgroupTotals *t, const char *path, uint64_t some, uint64_t full) {
        size_t len = strlen(path);

        /* The same bookkeeping the walk does, through the public layout. */
        if (t->n == t->cap) {
                t->cap = t->cap ? t->cap * 2 : 16;
                t->items = realloc(t->items, t->cap * sizeof *t->items);
        }
        t->names = realloc(t->names, t->names_len + len + 1);
        t->items[t->n++] = (CgroupTotal) { .path = t->names_len, .total_us = { some, full }, .has = { true, true } };
        memcpy(t->names + t->names_len, path, len + 1);
        t->names_len += len + 1;
}

static void test_deepest_explaining(void **state) {
        CgroupTotals a = {}, b = {};
        HotCgroups h = {};

        /* kubepods/pod1/ctr-a is the busy leaf: its parents grew by the same (they contain it). */
        add(&a, "kubepods", 1000, 0);
        add(&a, "kubepods/pod1", 900, 0);
        add(&a, "kubepods/pod1/ctr-a", 800, 0);
        add(&a, "kubepods-x", 0, 0); /* sorts between "kubepods" and "kubepods/..." with strcmp */
        add(&a, "system.slice", 50, 0);
        add(&a, "system.slice/a.service", 20, 0);
        add(&a, "system.slice/b.service", 30, 0);
        add(&a, "gone", 5, 0);

        add(&b, "system.slice", 650, 10);
        add(&b, "system.slice/a.service", 320, 10);
        add(&b, "system.slice/b.service", 340, 0);
        add(&b, "kubepods", 501000, 100);
        add(&b, "kubepods/pod1", 500900, 100);
        add(&b, "kubepods/pod1/ctr-a", 500000, 100);
        add(&b, "kubepods-x", 0, 0);
        add(&b, "new", 70, 0); /* born during the sample: all of it counts */

        assert_int_equal(hot_cgroups_build(&h, &a, &b, PSI_STALL_SOME, HOT_CGROUPS_MAX), 0);
        assert_int_equal(h.n, 5);
        assert_string_equal(h.items[0].path, "kubepods/pod1/ctr-a");
        assert_int_equal(h.items[0].stall_us, 499200);
        assert_int_equal(h.items[0].full_us, 100);
        /* system.slice grew 600 from two halves: no child explains it, so it stays with both. */
        assert_string_equal(h.items[1].path, "system.slice");
        assert_int_equal(h.items[1].stall_us, 600);
        assert_string_equal(h.items[2].path, "system.slice/b.service");
        assert_string_equal(h.items[3].path, "system.slice/a.service");
        assert_string_equal(h.items[4].path, "new");
        assert_int_equal(h.items[4].stall_us, 70);

        /* By full stall, and capped. */
        assert_int_equal(hot_cgroups_build(&h, &a, &b, PSI_STALL_FULL, 1), 0);
        assert_int_equal(h.n, 1);
        assert_string_equal(h.items[0].path, "kubepods/pod1/ctr-a");

        /* A 0 ms sample: totals since each cgroup began. */
        assert_int_equal(hot_cgroups_build(&h, NULL, &b, PSI_STALL_SOME, HOT_CGROUPS_MAX), 0);
        assert_string_equal(h.items[0].path, "kubepods/pod1/ctr-a");
        assert_int_equal(h.items[0].stall_us, 500000);

        hot_cgroups_done(&h);
        cgroup_totals_done(&a);
        cgroup_totals_done(&b);
}

static void test_walk_fixture(void **state) {
        CgroupTotals t = {};
        int fd = open(fixture("hybrid/sys/fs/cgroup/unified"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        bool web = false;

        assert_true(fd >= 0);
        assert_int_equal(cgroup_totals_read(fd, PSI_RESOURCE_CPU, &t), 0);
        /* app, app/web, app/batch carry cpu.pressure; the symlink app/escape is not walked. */
        for (size_t i = 0; i < t.n; i++) {
                const char *p = cgroup_total_path(&t, &t.items[i]);
                assert_null(strstr(p, "escape"));
                if (strcmp(p, "app/web") == 0) {
                        web = true;
                        assert_true(t.items[i].has[PSI_STALL_SOME]);
                }
        }
        assert_true(web);
        assert_true(t.n >= 3);
        close(fd);
        cgroup_totals_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deepest_explaining),
                cmocka_unit_test(test_walk_fixture),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
