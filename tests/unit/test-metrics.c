/* SPDX-License-Identifier: MIT */
/* The Prometheus textfile: exposition text, label escaping, and the atomic rewrite. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "sinks/metrics.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

static const MetricsOutput outputs[] = {
        { .path = "/var/log/psidiag/incidents.ndjson", .written = 7, .failed = 2 },
        { .path = "/tmp/odd\"name\\\n", .written = 1 },
};

static const MetricsCount wakeups[] = {
        { "sample", 9 }, { "no_growth", 1 }, { "busy", 2 }, { "cooldown", 5 }, { "capacity", 0 }, { "rate_limit", 0 },
};

static const MetricsSeries incidents[] = {
        { .labels = { "shop/db", "pressure", "io" }, .value = 4 },
        { .labels = { "kubepods/*/pod*", "oom", "memory" }, .value = 1 },
};

static const MetricsSeries stall[] = {
        { .labels = { "shop/db", "io" }, .value = 2500001 },
};

static const Metrics sample_metrics = {
        .incidents = incidents,
        .n_incidents = 2,
        .stall = stall,
        .n_stall = 1,
        .exit_records_lost = 6,
        .version = "0.3.0",
        .start_time_s = 1795000000,
        .watches = 2,
        .triggers_configured = 4,
        .triggers_armed = 3,
        .wakeups = wakeups,
        .n_wakeups = 6,
        .suppressed = wakeups + 3,
        .n_suppressed = 3,
        .samples = 9,
        .sample_thread_errors = 4,
        .cgroups_gone = 1,
        .oom_kills = 2,
        .kmsg_lost = 3,
        .outputs = outputs,
        .n_outputs = 2,
};

/* Every family with a value of its own, so a row out of order, a name, type, help or value
 * changed shows in the golden file. */
static const MetricsCount kills[] = { { "earlyoom", 11 }, { "unknown", 12 } };
static const MetricsCount prekill[] = { { "notify", 13 }, { "idle", 14 } };
static const MetricsCount unparsed[] = { { "pressure", 15 } };
static const MetricsCount windows[] = { { "after_wakeup", 16 }, { "recorded", 17 } };

static const Metrics full_metrics = {
        .version = "1.2.3",
        .start_time_s = 1795000001,
        .watches = 21,
        .triggers_configured = 22,
        .triggers_armed = 23,
        .wakeups = wakeups,
        .n_wakeups = 6,
        .suppressed = wakeups + 3,
        .n_suppressed = 3,
        .samples = 24,
        .sample_thread_errors = 25,
        .cgroups_gone = 26,
        .oom_kills = 27,
        .kmsg_lost = 28,
        .exit_records_lost = 29,
        .blkio_unstarted = 30,
        .unparsed = unparsed,
        .n_unparsed = 1,
        .episodes = 31,
        .culprit_passes = 32,
        .culprit_passes_shared = 33,
        .recordings = 34,
        .recordings_refused = 35,
        .recorder_entries = 36,
        .recorder_wakeups = 37,
        .recorder_us = 38000039,
        .recording_us = 40,
        .container_lookups = 41,
        .container_reads = 42,
        .container_evictions = 43,
        .containers_unnamed = 44,
        .containers_unverified = 45,
        .windows = windows,
        .n_windows = 2,
        .windows_passed = 46,
        .dir_watches = 47,
        .dir_watch_limit = 48,
        .dir_watches_refused = 49,
        .discovery_walks = 50,
        .discovery_walk_us = 51000052,
        .kills = kills,
        .n_kills = 2,
        .prekill = prekill,
        .n_prekill = 2,
        .incidents = incidents,
        .n_incidents = 2,
        .stall = stall,
        .n_stall = 1,
        .outputs = outputs,
        .n_outputs = 2,
};

/* The whole text, byte for byte, against tests/fixtures/metrics/full.prom. */
static void test_golden(void **state) {
        _cleanup_free_ char *text = NULL;
        char want[16384];
        FILE *f;

        assert_int_equal(metrics_format(&full_metrics, &text), 0);
        f = fopen(fixture("metrics/full.prom"), "re");
        assert_non_null(f);
        size_t n = fread(want, 1, sizeof want - 1, f);
        assert_true(feof(f));
        fclose(f);
        want[n] = '\0';
        assert_string_equal(text, want);
}

static void test_format(void **state) {
        char *text = NULL;

        assert_int_equal(metrics_format(&sample_metrics, &text), 0);
        assert_non_null(strstr(text, "# TYPE psidiag_triggers_armed gauge\npsidiag_triggers_armed 3\n"));
        assert_non_null(strstr(text, "psidiag_info{version=\"0.3.0\"} 1\n"));
        assert_non_null(strstr(text, "psidiag_wakeups_total{verdict=\"sample\"} 9\n"));
        assert_non_null(strstr(text, "psidiag_wakeups_total{verdict=\"cooldown\"} 5\n"));
        assert_non_null(
                strstr(text, "psidiag_incidents_written_total{output=\"/var/log/psidiag/incidents.ndjson\"} 7\n"));
        assert_non_null(strstr(text, "psidiag_incidents_lost_total{output=\"/var/log/psidiag/incidents.ndjson\"} 2\n"));
        assert_non_null(strstr(text, "{output=\"/tmp/odd\\\"name\\\\\\n\"} 1\n"));
        assert_non_null(strstr(text, "psidiag_cgroups_gone_total 1\n"));
        assert_non_null(strstr(text, "psidiag_oom_kills_total 2\n"));
        assert_non_null(strstr(text, "# TYPE psidiag_kmsg_lost_total counter\npsidiag_kmsg_lost_total 3\n"));
        assert_non_null(strstr(text, "psidiag_incidents_suppressed_total{reason=\"cooldown\"} 5\n"));
        assert_non_null(
                strstr(text, "psidiag_incidents_total{watch=\"shop/db\",type=\"pressure\",resource=\"io\"} 4\n"));
        assert_non_null(strstr(
                text, "psidiag_incidents_total{watch=\"kubepods/*/pod*\",type=\"oom\",resource=\"memory\"} 1\n"));
        assert_non_null(strstr(text, "psidiag_stall_seconds_total{watch=\"shop/db\",resource=\"io\"} 2.500001\n"));
        assert_non_null(strstr(text, "psidiag_exit_records_lost_total 6\n"));
        /* Every line is a comment or "name[{labels}] value". */
        for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
                assert_true(l[0] == '#' || strncmp(l, "psidiag_", 8) == 0);
        free(text);
}

static void test_write_atomic(void **state) {
        char dir[] = "/tmp/psidiag-test-XXXXXX", path[128], link_path[128], buf[4096], why[160];
        FILE *f;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/psidiag.prom", dir);
        assert_int_equal(metrics_write(path, &sample_metrics, why, sizeof why), 0);
        assert_int_equal(metrics_write(path, &sample_metrics, why, sizeof why), 0);
        f = fopen(path, "re");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        assert_non_null(strstr(buf, "psidiag_samples_total 9\n"));
        /* No temporary file is left behind. */
        snprintf(link_path, sizeof link_path, "%s/.psidiag.prom.%d.tmp", dir, (int) getpid());
        assert_int_equal(access(link_path, F_OK), -1);

        /* A symlink at the path is replaced, never written through. */
        snprintf(link_path, sizeof link_path, "%s/victim", dir);
        f = fopen(link_path, "we");
        assert_non_null(f);
        fputs("precious\n", f);
        fclose(f);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("victim", path), 0);
        assert_int_equal(metrics_write(path, &sample_metrics, why, sizeof why), 0);
        f = fopen(link_path, "re");
        assert_non_null(fgets(buf, sizeof buf, f));
        fclose(f);
        assert_string_equal(buf, "precious\n");
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));

        snprintf(path, sizeof path, "%s/missing/psidiag.prom", dir);
        assert_int_equal(metrics_write(path, &sample_metrics, why, sizeof why), -ENOENT);
        assert_int_equal(fake_tree_remove(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_golden),
                cmocka_unit_test(test_write_atomic),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
