/* SPDX-License-Identifier: MIT */
/* agent/reload.h's decision: which watch of the new config a running watch becomes. */
#include "agent/reload.h"
#include "base/macro.h"
#include "tests/unit/test-util.h"

static void test_match_watch(void **state) {
        char a[] = "a", b[] = "b", c[] = "c";
        WatchConfig ow[] = { { .cgroup = a }, { .cgroup = NULL }, { .cgroup = a }, { .cgroup = b } };
        WatchConfig nw[] = { { .cgroup = b }, { .cgroup = a }, { .cgroup = c }, { .cgroup = NULL }, { .cgroup = a } };
        Config old = { .watches = ow, .n_watches = ELEMENTSOF(ow) };
        Config nc = { .watches = nw, .n_watches = ELEMENTSOF(nw) };
        Config shorter = { .watches = nw, .n_watches = 2 };

        assert_ptr_equal(reload_match_watch(&old, &ow[0], &nc), &nw[1]); /* the first "a" */
        assert_ptr_equal(reload_match_watch(&old, &ow[2], &nc), &nw[4]); /* the second "a" */
        assert_ptr_equal(reload_match_watch(&old, &ow[1], &nc), &nw[3]); /* node-wide */
        assert_ptr_equal(reload_match_watch(&old, &ow[3], &nc), &nw[0]);
        assert_null(reload_match_watch(&old, &ow[2], &shorter)); /* no second "a" any more */
        assert_null(reload_match_watch(&old, &ow[1], &shorter)); /* no node-wide watch */
}

/* A container watch is matched by its selector: the same globs, not merely "no cgroup". */
static void test_match_container_watch(void **state) {
        char web[] = "web*", api[] = "api", ns[] = "payments", any[] = "*";
        WatchConfig ow[] = { { .select = { .name = web } },
                             { .cgroup = NULL },
                             { .select = { .pod_namespace = ns, .pod_name = any } } };
        WatchConfig nw[] = { { .cgroup = NULL },
                             { .select = { .pod_namespace = ns, .pod_name = any } },
                             { .select = { .name = api } },
                             { .select = { .name = web } } };
        Config old = { .watches = ow, .n_watches = ELEMENTSOF(ow) };
        Config nc = { .watches = nw, .n_watches = ELEMENTSOF(nw) };

        assert_ptr_equal(reload_match_watch(&old, &ow[0], &nc), &nw[3]);
        assert_ptr_equal(reload_match_watch(&old, &ow[1], &nc), &nw[0]); /* node-wide, not a selector */
        assert_ptr_equal(reload_match_watch(&old, &ow[2], &nc), &nw[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match_watch),
                cmocka_unit_test(test_match_container_watch),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
