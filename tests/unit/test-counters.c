/* SPDX-License-Identifier: MIT */
/* agent/counters.h: what an incident adds, the watch label, and the metrics series made of the
 * per-watch counts. */
#include <string.h>

#include "agent/counters.h"
#include "tests/unit/test-util.h"

static void test_watch_label(void **state) {
        char root_path[] = "", glob_path[] = "kubepods/*";
        WatchConfig node = { .cgroup = NULL }, root = { .cgroup = root_path }, glob = { .cgroup = glob_path };

        assert_string_equal(counters_watch_label(&node), "/");
        assert_string_equal(counters_watch_label(&root), "/");
        assert_string_equal(counters_watch_label(&glob), "kubepods/*");
        assert_string_equal(counters_watch_label(NULL), "/");
        /* a container watch: its selectors as configured, never what it matched */
        char web[] = "web*", text[] = "container=web*";
        WatchConfig by_name = { .select = { .name = web }, .select_text = text };
        assert_string_equal(counters_watch_label(&by_name), "container=web*");
}

static void test_count_incident(void **state) {
        Counters c = {};

        counters_count_incident(&c, &(CountedIncident) { .label = "a",
                                                         .type = COUNTERS_INCIDENT_PRESSURE,
                                                         .resource = PSI_RESOURCE_CPU,
                                                         .stall_us = 300,
                                                         .sample_thread_errors = 2,
                                                         .exit_records_lost = 5 });
        counters_count_incident(&c, &(CountedIncident) { .label = "a",
                                                         .type = COUNTERS_INCIDENT_PRESSURE,
                                                         .resource = PSI_RESOURCE_CPU,
                                                         .stall_us = 200 });
        counters_count_incident(&c, &(CountedIncident) { .label = "/",
                                                         .type = COUNTERS_INCIDENT_OOM,
                                                         .resource = PSI_RESOURCE_MEMORY,
                                                         .oom_kills = 3 });
        counters_count_incident(&c, &(CountedIncident) { .label = "a",
                                                         .type = COUNTERS_INCIDENT_KILL,
                                                         .resource = PSI_RESOURCE_MEMORY,
                                                         .has_killer = true,
                                                         .killer = KILLER_EARLYOOM });
        assert_int_equal(c.samples, 2); /* pressure incidents only */
        assert_int_equal(c.sample_thread_errors, 2);
        assert_int_equal(c.exit_records_lost, 5);
        assert_int_equal(c.oom_kills, 3);
        assert_int_equal(c.kills[KILLER_EARLYOOM], 1);
        assert_int_equal(c.kills[KILLER_UNKNOWN], 0);
        assert_int_equal(c.n_watch, 2);
        assert_string_equal(c.watch[0].label, "a");
        assert_int_equal(c.watch[0].incidents[COUNTERS_INCIDENT_PRESSURE][PSI_RESOURCE_CPU], 2);
        assert_int_equal(c.watch[0].stall_us[PSI_RESOURCE_CPU], 500);
        assert_int_equal(c.watch[0].incidents[COUNTERS_INCIDENT_KILL][PSI_RESOURCE_MEMORY], 1);
        assert_int_equal(c.watch[1].incidents[COUNTERS_INCIDENT_OOM][PSI_RESOURCE_MEMORY], 1);
        counters_done(&c);
        assert_int_equal(c.n_watch, 0);
}

/* psidiag_incidents_total{watch,type,resource} for every count above 0, then
 * psidiag_stall_us_total{watch,resource} for each watch and resource with a pressure incident
 * (an oom or kill incident has no stall series). */
static void test_series(void **state) {
        Counters c = {};
        MetricsSeries *buf = NULL;
        size_t cap = 0, n_incidents = 9, n_stall = 9;

        assert_int_equal(counters_series(&c, &buf, &cap, &n_incidents, &n_stall), 0);
        assert_int_equal(n_incidents, 0);
        assert_int_equal(n_stall, 0);

        counters_count_incident(&c, &(CountedIncident) { .label = "web",
                                                         .type = COUNTERS_INCIDENT_PRESSURE,
                                                         .resource = PSI_RESOURCE_IO,
                                                         .stall_us = 7000 });
        counters_count_incident(
                &c,
                &(CountedIncident) { .label = "web", .type = COUNTERS_INCIDENT_OOM, .resource = PSI_RESOURCE_MEMORY });
        counters_count_incident(
                &c,
                &(CountedIncident) { .label = "/", .type = COUNTERS_INCIDENT_KILL, .resource = PSI_RESOURCE_MEMORY });
        assert_int_equal(counters_series(&c, &buf, &cap, &n_incidents, &n_stall), 0);
        assert_int_equal(n_incidents, 3);
        assert_int_equal(n_stall, 1);
        assert_string_equal(buf[0].labels[0], "web");
        assert_string_equal(buf[0].labels[1], "pressure");
        assert_string_equal(buf[0].labels[2], "io");
        assert_int_equal(buf[0].value, 1);
        assert_string_equal(buf[1].labels[1], "oom");
        assert_string_equal(buf[1].labels[2], "memory");
        assert_string_equal(buf[2].labels[0], "/");
        assert_string_equal(buf[2].labels[1], "kill");
        assert_string_equal(buf[3].labels[0], "web");
        assert_string_equal(buf[3].labels[1], "io");
        assert_int_equal(buf[3].value, 7000);
        assert_true(cap >= 4);
        free(buf);
        counters_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_watch_label),
                cmocka_unit_test(test_count_incident),
                cmocka_unit_test(test_series),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
