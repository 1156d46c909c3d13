/* SPDX-License-Identifier: MIT */
/* The oom_kill counters psidiag falls back on without /dev/kmsg: the parser on real memory.events
 * and memory.oom_control text (6.18), malformed and old-kernel text, and opening the counter in a
 * scratch sysroot: cgroup2 memory.events first, else the cgroup-v1 memcg of the same path with
 * its eventfd registered in cgroup.event_control. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "probes/memcg.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

/* Read on this VM: a cgroup2 memory.events and a v1 memcg's memory.oom_control after one kill. */
#define EVENTS "low 0\nhigh 0\nmax 1733\noom 1\noom_kill 1\noom_group_kill 0\n"
#define OOM_CONTROL "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"

static void test_parse(void **state) {
        uint64_t v = 99;

        assert_int_equal(memcg_parse_oom_kill(EVENTS, strlen(EVENTS), &v), 0);
        assert_int_equal(v, 1);
        assert_int_equal(memcg_parse_oom_kill(OOM_CONTROL, strlen(OOM_CONTROL), &v), 0);
        assert_int_equal(v, 1);
        /* No trailing newline; a large count. */
        assert_int_equal(memcg_parse_oom_kill("oom_kill 18446744073709551615", 29, &v), 0);
        assert_true(v == UINT64_MAX);
        /* oom_group_kill is another key, not oom_kill. */
        assert_int_equal(memcg_parse_oom_kill("oom_group_kill 5\n", 17, &v), -ENOENT);
        /* Kernels before 4.13 have no oom_kill line. */
        assert_int_equal(memcg_parse_oom_kill("oom_kill_disable 0\nunder_oom 0\n", 31, &v), -ENOENT);
        assert_int_equal(memcg_parse_oom_kill("", 0, &v), -ENOENT);
        /* Malformed values and overflow are refused, not misread. */
        assert_unparsed(UNPARSED_MEMORY_EVENTS, 4, {
                assert_int_equal(memcg_parse_oom_kill("oom_kill x\n", 11, &v), -ENOENT);
                assert_int_equal(memcg_parse_oom_kill("oom_kill 1 2\n", 13, &v), -ENOENT);
                assert_int_equal(memcg_parse_oom_kill("oom_kill 18446744073709551616\n", 30, &v), -ENOENT);
                assert_int_equal(memcg_parse_oom_kill("oom_kill \n", 10, &v), -ENOENT);
        });
        /* A line it cannot read costs only that line. */
        assert_unparsed(UNPARSED_MEMORY_EVENTS, 1,
                        assert_int_equal(memcg_parse_oom_kill("(unknown) \noom_kill 3\n", 22, &v), 0));
        assert_int_equal(v, 3);
}

/* Setup that must succeed: the shared fake-tree writers. */
#define put(root, rel, text) assert_int_equal(fake_tree_write((root), (rel), (text)), 0)
#define dir(root, rel) assert_int_equal(fake_tree_mkdirs((root), (rel)), 0)

static void test_open(void **state) {
        char root[] = "/tmp/psidiag-memcg-XXXXXX";
        static const char *dirs[] = { "proc",
                                      "proc/self",
                                      "sys",
                                      "sys/fs",
                                      "sys/fs/cgroup",
                                      "sys/fs/cgroup/unified",
                                      "sys/fs/cgroup/unified/a",
                                      "sys/fs/cgroup/unified/b",
                                      "sys/fs/cgroup/memory",
                                      "sys/fs/cgroup/memory/b",
                                      "sys/fs/cgroup/memory/c",
                                      "sys/fs/cgroup/memory/d" };
        Sysroot *s = NULL;
        MemcgCounterKind kind;
        int fd = -1, efd = -1;
        uint64_t v;
        char buf[64], want[64];

        assert_non_null(mkdtemp(root));
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
                dir(root, dirs[i]);
        put(root, "proc/self/mountinfo",
            "27 26 0:25 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
            "33 26 0:31 / /sys/fs/cgroup/memory rw,relatime shared:17 - cgroup cgroup rw,memory\n");
        put(root, "sys/fs/cgroup/unified/a/memory.events", EVENTS);
        put(root, "sys/fs/cgroup/memory/b/memory.oom_control", OOM_CONTROL);
        put(root, "sys/fs/cgroup/memory/b/cgroup.event_control", "");
        put(root, "sys/fs/cgroup/memory/c/memory.oom_control", OOM_CONTROL);
        /* d's memory.oom_control is a symlink planted to read something else: refused. */
        char link[4096];
        snprintf(link, sizeof link, "%s/sys/fs/cgroup/memory/d/memory.oom_control", root);
        assert_int_equal(symlink("/etc/hostname", link), 0);
        put(root, "sys/fs/cgroup/memory/d/cgroup.event_control", "");
        assert_int_equal(sysroot_open(root, &s), 0);

        /* cgroup2 with the memory controller: memory.events, no eventfd (inotify is the agent's). */
        assert_int_equal(memcg_open_oom_counter(s, "a", &kind, &fd, &efd), 0);
        assert_int_equal(kind, MEMCG_COUNTER_EVENTS);
        assert_true(fd >= 0 && efd < 0);
        assert_int_equal(memcg_read_oom_kill(fd, &v), 0);
        assert_int_equal(v, 1);
        assert_string_equal(memcg_counter_kind_to_string(kind), "memory.events");
        close(fd);

        /* Hybrid: b exists on cgroup2 without memory.events, and as a v1 memcg. The eventfd is
         * registered as "<eventfd> <memory.oom_control fd>". */
        assert_int_equal(memcg_open_oom_counter(s, "b", &kind, &fd, &efd), 0);
        assert_int_equal(kind, MEMCG_COUNTER_OOM_CONTROL);
        assert_true(fd >= 0 && efd >= 0);
        snprintf(want, sizeof want, "%d %d", efd, fd);
        snprintf(link, sizeof link, "%s/sys/fs/cgroup/memory/b/cgroup.event_control", root);
        ssize_t n = read_file_at(AT_FDCWD, link, buf, sizeof buf);
        assert_true(n > 0);
        assert_string_equal(buf, want);
        assert_int_equal(memcg_read_oom_kill(fd, &v), 0);
        assert_int_equal(v, 1);
        close(fd);
        close(efd);

        /* A v1 memcg without cgroup.event_control cannot announce OOMs: an error, not a silent miss. */
        assert_int_equal(memcg_open_oom_counter(s, "c", &kind, &fd, &efd), -ENOENT);
        assert_int_equal(memcg_open_oom_counter(s, "d", &kind, &fd, &efd), -ELOOP);
        /* No such cgroup anywhere. */
        assert_int_equal(memcg_open_oom_counter(s, "nope", &kind, &fd, &efd), -ENOENT);
        sysroot_free(s);
        assert_int_equal(fake_tree_remove(root), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_open),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
