/* SPDX-License-Identifier: MIT */
/* Dirwatch on a scratch directory: events reach the handler one by one, each burst ends with one
 * call without an event, a removed watch reports nothing more, and the loop dispatches it. */
#include <errno.h>
#include <ev.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/dirwatch.h"
#include "tests/unit/test-util.h"

typedef struct Seen {
        unsigned events, ends, creates, deletes;
        char last[NAME_MAX + 1];
} Seen;

static void handler(Dirwatch *d, const struct inotify_event *e, void *userdata) {
        Seen *s = userdata;

        if (!e) {
                s->ends++;
                return;
        }
        s->events++;
        if (e->mask & IN_CREATE)
                s->creates++;
        if (e->mask & IN_DELETE)
                s->deletes++;
        if (e->len)
                snprintf(s->last, sizeof s->last, "%s", e->name);
}

static void test_events_and_bursts(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", sub[64];
        struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
        Dirwatch *d = NULL;
        Seen s = {};
        int wd;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(dirwatch_new(loop, handler, &s, &d), 0);
        assert_true(dirwatch_fd(d) >= 0);
        wd = dirwatch_add(d, dir, IN_CREATE | IN_DELETE | IN_ONLYDIR);
        assert_true(wd >= 0);

        /* Nothing happened: a dispatch reads nothing, and still ends its burst once. */
        dirwatch_dispatch(d);
        assert_int_equal(s.events, 0);
        assert_int_equal(s.ends, 1);

        snprintf(sub, sizeof sub, "%s/a", dir);
        assert_int_equal(mkdir(sub, 0700), 0);
        snprintf(sub, sizeof sub, "%s/b", dir);
        assert_int_equal(mkdir(sub, 0700), 0);
        /* The loop sees the instance readable and dispatches both events in one burst. */
        ev_run(loop, EVRUN_ONCE);
        assert_int_equal(s.creates, 2);
        assert_int_equal(s.ends, 2);
        assert_string_equal(s.last, "b");

        assert_int_equal(rmdir(sub), 0);
        ev_run(loop, EVRUN_ONCE);
        assert_int_equal(s.deletes, 1);

        /* Removed: later changes are not reported (IN_IGNORED may still arrive once). */
        dirwatch_remove(d, wd);
        dirwatch_remove(d, wd); /* twice is harmless */
        snprintf(sub, sizeof sub, "%s/a", dir);
        assert_int_equal(rmdir(sub), 0);
        unsigned creates = s.creates, deletes = s.deletes;
        dirwatch_dispatch(d);
        assert_int_equal(s.creates, creates);
        assert_int_equal(s.deletes, deletes);

        assert_int_equal(dirwatch_add(d, "/nonexistent/psidiag", IN_CREATE), -ENOENT);
        assert_null(dirwatch_free(d));
        assert_null(dirwatch_free(NULL));
        ev_loop_destroy(loop);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_events_and_bursts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
