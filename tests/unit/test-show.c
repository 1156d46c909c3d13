/* SPDX-License-Identifier: MIT */
/* `psidiag show`: the view of real and hostile incidents, durations, and what a terminal gets. */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sinks/journal.h"
#include "cmd/show.h"
#include "tests/unit/test-util.h"

/* Frozen incidents (the schema examples are regenerated as the agent changes). */
#define EXAMPLE FIXTURE_DIR "/incidents/pressure.json"
#define OOM_EXAMPLE FIXTURE_DIR "/incidents/oom.json"

static char *render(const char *line, int *ret) {
        char *buf = NULL, error[256];
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);

        assert_non_null(out);
        *ret = show_line(line, strlen(line), out, error, sizeof error);
        fclose(out);
        return buf;
}

/* The first line of a schema example. */
static void read_example(const char *path, char *line, size_t size) {
        FILE *f = fopen(path, "re");

        assert_non_null(f);
        assert_non_null(fgets(line, (int) size, f));
        fclose(f);
}

static void test_example_incident(void **state) {
        char line[16384];
        int r;

        read_example(EXAMPLE, line, sizeof line);
        char *out = render(line, &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "pressure  /demo  \"cpu some 20% 2s\"  on vm"));
        assert_non_null(strstr(out, "cpu 13.4% some"));
        assert_non_null(strstr(out, "stall +973ms"));
        assert_non_null(strstr(out, "4 running, 1 sleeping"));
        assert_non_null(strstr(out, "7570     1.03s    cpu 1.03s 100%"));
        assert_non_null(strstr(out, "health-check"));
        free(out);
}

/* A wakeup after the stall had passed: the window line says so, and the culprits are not named as
 * the cause. */
static void test_stall_passed(void **state) {
        char line[16384];
        int r;

        read_example(FIXTURE_DIR "/incidents/passed.json", line, sizeof line);
        char *out = render(line, &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "but the stall had passed before the sample: 2.6 ms seen of the 0.1 s in 2 s"));
        assert_non_null(strstr(out,
                               "window    after the wakeup: stall +2.6ms, 5% of the 50ms the trigger's rate gives: "
                               "the stall had passed before the sample"));
        assert_non_null(strstr(out, "these used it in a quiet window, none is named"));
        free(out);

        /* The example, whose window saw the stall: no such line. */
        read_example(EXAMPLE, line, sizeof line);
        out = render(line, &r);
        assert_int_equal(r, 0);
        assert_null(strstr(out, "had passed"));
        free(out);
}

/* A culprit that is a program of several live processes (psidiag 0.12): its row says how many. */
static void test_program_row(void **state) {
        char line[16384];
        json_error_t err;
        int r;

        read_example(SCHEMA_DIR "/examples/incident-pressure.json", line, sizeof line);
        json_t *inc = json_loads(line, 0, &err);
        assert_non_null(inc);
        json_t *p = json_array_get(json_object_get(json_object_get(inc, "culprits"), "processes"), 0);
        assert_non_null(json_string_value(json_object_get(p, "cmdline")));
        assert_int_equal(json_object_set_new(p, "processes", json_integer(4)), 0);
        char *text = json_dumps(inc, JSON_COMPACT);
        char *out = render(text, &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "  [4 processes]"));
        free(out);
        free(text);

        /* One process: no count. */
        assert_int_equal(json_object_set_new(p, "processes", json_integer(1)), 0);
        text = json_dumps(inc, JSON_COMPACT);
        out = render(text, &r);
        assert_null(strstr(out, " processes]"));
        free(out);
        free(text);
        json_decref(inc);
}

/* taskstats v17 (psidiag 0.8): a process's longest wait shows under its row when it falls in this
 * stall, here in the trigger's window before the sample; one from before the stall does not. */
static void test_worst_wait(void **state) {
        char line[16384];
        int r;

        read_example(FIXTURE_DIR "/incidents/worst.json", line, sizeof line);
        char *out = render(line, &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "longest wait 1.20s cpu (tid "));
        assert_non_null(strstr(out, "ended 300ms before the wakeup: in the trigger's window, before the sample"));
        /* The summary says it too; the second process's longest wait is from before the stall and
         * gets no line. */
        assert_non_null(
                strstr(out, "waited 1.03 s for cpu in 1 s, its longest wait, 1.2 s, ended 0.3 s before the wakeup"));
        assert_null(strstr(strstr(out, "\n           longest wait") + 1, "\n           longest wait"));
        free(out);
}

/* psidiag 0.8: a process in a container gets a line naming it (its pod, or its name and image, and
 * since 0.10 its podman pod); a runtime's names are made terminal-safe. */
static void test_container_line(void **state) {
        int r;
        char *out =
                render("{\"type\":\"snapshot\",\"time\":\"t\",\"trigger\":null,\"sample\":{\"basis\":\"lifetime\"},"
                       "\"most_delayed\":[{\"pid\":1,\"comm\":\"nginx\",\"cgroup\":\"/docker/ab\",\"cmdline\":null,"
                       "\"score_us\":10,\"delay_us\":{\"cpu\":3},\"meta\":{\"container\":{\"name\":\"web\\u001b[2J\","
                       "\"image\":\"nginx:1.25\",\"pod\":null,\"unnamed\":null}}},"
                       "{\"pid\":2,\"comm\":\"api\",\"cgroup\":\"/kubepods/x\",\"cmdline\":null,"
                       "\"score_us\":5,\"delay_us\":{\"cpu\":3},\"meta\":{\"container\":{\"name\":null,"
                       "\"image\":null,\"pod\":{\"namespace\":\"payments\",\"name\":\"api-7d9f\",\"uid\":null,"
                       "\"container\":\"api\",\"sandbox\":false},\"unnamed\":null}}},"
                       "{\"pid\":3,\"comm\":\"sh\",\"cgroup\":\"/machine.slice/x\",\"cmdline\":null,"
                       "\"score_us\":4,\"delay_us\":{\"cpu\":3},\"meta\":{\"container\":{\"name\":\"podweb\","
                       "\"image\":\"bb:1\",\"pod\":null,\"unnamed\":null,\"runtime_pod\":\"web-pod\\u001b\"}}},"
                       /* a user's cgroup that claims a container's id: the reason, not the name */
                       "{\"pid\":4,\"comm\":\"sh\",\"cgroup\":\"/user.slice/x\",\"cmdline\":null,"
                       "\"score_us\":3,\"delay_us\":{\"cpu\":3},\"meta\":{\"container\":{\"name\":null,"
                       "\"image\":null,\"pod\":null,\"unnamed\":\"its cgroup is not verified as its runtime's\","
                       "\"unverified\":\"docker's cgroup below user@1000.service\\u001b\"}}}]}",
                       &r);

        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "\n           container web?[2J, image nginx:1.25\n"));
        assert_non_null(strstr(out, "\n           pod payments/api-7d9f, container api\n"));
        assert_non_null(strstr(out, "\n           container podweb, image bb:1, podman pod web-pod?\n"));
        assert_non_null(strstr(out, "\n           container unverified: docker's cgroup below user@1000.service?\n"));
        assert_null(strchr(out, '\x1b'));
        free(out);
}

/* psidiag 0.9: a wait that has not ended shows under its process's row. */
static void test_blocked_now_line(void **state) {
        int r;
        char *out = render("{\"type\":\"snapshot\",\"time\":\"t\",\"trigger\":null,\"sample\":{\"basis\":\"delta\"},"
                           "\"most_delayed\":[{\"pid\":812,\"comm\":\"dd\",\"cgroup\":\"/db\",\"cmdline\":null,"
                           "\"score_us\":3200000,\"delay_us\":{\"blkio\":0},\"blocked_now\":{\"tid\":813,\"ms\":3200}},"
                           "{\"pid\":900,\"comm\":\"pg\",\"cgroup\":\"/db\",\"cmdline\":null,"
                           "\"score_us\":50000,\"delay_us\":{\"blkio\":50000},\"blocked_now\":null}]}",
                           &r);

        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "\n           blocked 3.20s so far (tid 813), not yet ended\n"));
        assert_null(strstr(strstr(out, "so far") + 1, "so far")); /* pg: none */
        free(out);
        /* The on-what line says what the first group's wait is for (psidiag 0.10). */
        out = render("{\"type\":\"snapshot\",\"time\":\"t\",\"trigger\":null,\"sample\":{\"basis\":\"delta\"},"
                     "\"most_delayed\":[],\"blocked\":[{\"wchan\":\"rq_qos_wait\",\"resource\":\"memory\",\"seen\":1,"
                     "\"threads\":[],\"threads_total\":1,\"stack\":null}]}",
                     &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "  on what   1 thread in rq_qos_wait (memory)\n"));
        free(out);
}

static void test_hostile_and_broken(void **state) {
        int r;
        char *out = render("{\"type\":\"snapshot\",\"time\":\"t\\u007f\\u001b\",\"trigger\":null,\"sample\":{\"basis\":"
                           "\"lifetime\"},"
                           "\"most_delayed\":[{\"pid\":1,\"comm\":\"\\u001b]0;owned\\u0007\",\"cgroup\":\"/a\\nb\","
                           "\"cmdline\":null,\"score_us\":10,\"delay_us\":{\"cpu\":3,\"blkio\":7}}]}",
                           &r);

        assert_int_equal(r, 0);
        assert_null(strchr(out, '\x1b'));
        assert_null(strchr(out, '\x7f')); /* the time string too (found by fuzz-show) */
        assert_null(strchr(out, '\x07'));
        assert_non_null(strstr(out, "?]0;owned?"));
        assert_non_null(strstr(out, "/a?b"));
        assert_non_null(strstr(out, "blkio 7us 70%"));
        assert_non_null(strstr(out, "(exited)"));
        assert_non_null(strstr(out, "lifetime totals"));
        free(out);

        /* Processes that ended during the sample (psidiag 0.4), one placed by its parent. */
        out = render("{\"type\":\"snapshot\",\"time\":\"t\",\"trigger\":null,\"sample\":{\"basis\":\"delta\"},"
                     "\"most_delayed\":["
                     "{\"pid\":7,\"comm\":\"cron\",\"cmdline\":null,\"ended\":true,\"parent\":null,"
                     "\"score_us\":10,\"delay_us\":{\"cpu\":10}},"
                     "{\"pid\":8,\"comm\":\"gzip\",\"cmdline\":null,\"ended\":true,\"parent\":5,"
                     "\"score_us\":9,\"delay_us\":{\"cpu\":9}}]}",
                     &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "(ended)"));
        assert_non_null(strstr(out, "(ended; child of 5)"));
        assert_null(strstr(out, "(exited)"));
        free(out);

        /* C1 controls and bidirectional overrides, in a comm, a cgroup and the summary. */
        out = render("{\"type\":\"snapshot\",\"time\":\"t\",\"trigger\":null,\"sample\":{\"basis\":\"delta\"},"
                     "\"summary\":\"x\\u202ey\\u0085z\","
                     "\"most_delayed\":[{\"pid\":1,\"comm\":\"a\\u202egpj.exe\\u009b\",\"cgroup\":\"/b\\u2067c\","
                     "\"cmdline\":\"d\\u200fe\\u061c\",\"score_us\":10,\"delay_us\":{\"cpu\":3}}]}",
                     &r);
        assert_int_equal(r, 0);
        assert_null(strstr(out, "\xe2\x80\xae"));
        assert_null(strstr(out, "\xe2\x81\xa7"));
        assert_null(strstr(out, "\xe2\x80\x8f"));
        assert_null(strstr(out, "\xd8\x9c"));
        assert_null(strstr(out, "\xc2\x9b"));
        assert_null(strstr(out, "\xc2\x85"));
        assert_non_null(strstr(out, "a?gpj.exe?"));
        assert_non_null(strstr(out, "/b?c"));
        assert_non_null(strstr(out, "d?e?"));
        assert_non_null(strstr(out, "x?y?z"));
        free(out);

        out = render("{\"type\":\"pressure\"", &r);
        assert_int_equal(r, -EINVAL);
        free(out);
        out = render("[1,2]", &r);
        assert_int_equal(r, -EINVAL);
        free(out);
        out = render("{\"time\":\"t\"}", &r);
        assert_int_equal(r, -EINVAL);
        free(out);
}

static void test_oom_incident(void **state) {
        char line[16384];
        int r;

        read_example(OOM_EXAMPLE, line, sizeof line);
        char *out = render(line, &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "oom  /psidiag-it-oom-2149  on vm\n"));
        assert_non_null(strstr(out, "  killed    pid 2194 h,pid=1) (x in /psidiag-it-oom-2149 (limit hit: "
                                    "/psidiag-it-oom-2149), anon 47360 KiB, file 1024 KiB\n"));
        assert_non_null(strstr(out, "  related   2 pressure incidents, newest 7840f08a-660dbb7bd9553-88e-2\n"));
        free(out);

        /* Counted, node-wide, nothing related. */
        out = render("{\"type\":\"oom\",\"time\":\"t\",\"trigger\":null,\"oom\":{\"source\":\"memory.events\","
                     "\"kills\":2,\"cgroup\":null,\"victim\":null},\"related\":[]}",
                     &r);
        assert_int_equal(r, 0);
        assert_non_null(strstr(out, "oom  node  on"));
        assert_non_null(strstr(out, "killed    2 task(s) in node, counted from memory.events (victim unknown)"));
        assert_non_null(strstr(out, "related   no pressure incident before it"));
        free(out);
}

/* journal_summary() of the incident text is the line of. */
static int summary(const char *text, char *message, size_t message_size, char *type, size_t type_size, char *id,
                   size_t id_size, const char **ret_message_id) {
        json_t *inc = json_loads(text, 0, NULL);
        int r;

        assert_non_null(inc);
        r = journal_summary(inc, message, message_size, type, type_size, id, id_size, ret_message_id);
        json_decref(inc);
        return r;
}

static void test_journal_summary(void **state) {
        char line[16384], message[1024], type[32], id[128];
        const char *message_id;

        read_example(EXAMPLE, line, sizeof line);
        assert_int_equal(summary(line, message, sizeof message, type, sizeof type, id, sizeof id, &message_id), 0);
        assert_string_equal(message, "pressure on /demo \"cpu some 20% 2s\": api-worker[7570] 1.03s, "
                                     "api-worker[7569] 984ms, health-check[7571] 5.6ms");
        assert_string_equal(message_id, JOURNAL_MESSAGE_ID_PRESSURE);
        assert_string_equal(type, "pressure");
        assert_string_equal(id, "7840f08a-660d9ba4c38d4-1d8f-1");

        const char *hostile = "{\"type\":\"snapshot\",\"id\":\"x\",\"trigger\":null,\"most_delayed\":"
                              "[{\"pid\":1,\"comm\":\"\\u001b[2Jx\",\"score_us\":5}]}";
        assert_int_equal(summary(hostile, message, sizeof message, type, sizeof type, id, sizeof id, &message_id), 0);
        assert_string_equal(message, "snapshot: ?[2Jx[1] 5us");
        assert_string_equal(message_id, JOURNAL_MESSAGE_ID_SNAPSHOT);
        /* An oom incident: the victim, where, how many related, then the cgroup after the kill. */
        read_example(OOM_EXAMPLE, line, sizeof line);
        assert_int_equal(summary(line, message, sizeof message, type, sizeof type, id, sizeof id, &message_id), 0);
        assert_string_equal(message, "oom in /psidiag-it-oom-2149: killed h,pid=1) (x[2194], 2 related: "
                                     "psidiag-thrash[2191] 96ms, h,pid=1) (x[2194] 1.6ms");
        assert_string_equal(message_id, JOURNAL_MESSAGE_ID_OOM);
        assert_int_equal(summary("[]", message, sizeof message, type, sizeof type, id, sizeof id, &message_id),
                         -EINVAL);
        /* Since 0.6 the incident's own sentence is the message. */
        assert_int_equal(summary("{\"type\":\"pressure\",\"id\":\"y\",\"summary\":\"api (/a) waited 1 s for cpu "
                                 "in 1 s\",\"most_delayed\":[]}",
                                 message, sizeof message, type, sizeof type, id, sizeof id, &message_id),
                         1);
        assert_string_equal(message, "api (/a) waited 1 s for cpu in 1 s");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_example_incident),   cmocka_unit_test(test_stall_passed),
                cmocka_unit_test(test_program_row),        cmocka_unit_test(test_worst_wait),
                cmocka_unit_test(test_container_line),     cmocka_unit_test(test_blocked_now_line),
                cmocka_unit_test(test_hostile_and_broken), cmocka_unit_test(test_oom_incident),
                cmocka_unit_test(test_journal_summary),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
