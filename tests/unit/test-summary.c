/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "incident/summary.h"
#include "tests/unit/test-util.h"

static json_t *load(const char *text) {
        json_error_t err;
        json_t *j = json_loads(text, 0, &err);

        if (!j)
                fail_msg("bad test JSON: %s at %d", err.text, err.position);
        return j;
}

static void assert_summary(const char *incident, const char *want) {
        json_t *j = load(incident);
        char *s = NULL;

        assert_int_equal(summary_format(j, &s), 0);
        if (strcmp(s, want) != 0)
                fail_msg("summary\n  got:  %s\n  want: %s", s, want);
        free(s);
        json_decref(j);
}

/* The issue's own example: a database stalled on io by a batch job's writer. */
static void test_io_culprit_and_device(void **state) {
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/shop/db\", \"resource\": \"io\"},"
                " \"sample\": {\"duration_ms\": 1001, \"stall_us\": 800000},"
                " \"most_delayed\": [{\"pid\": 7, \"comm\": \"pgbench\", \"cgroup\": \"/shop/db\","
                "   \"delay_us\": {\"cpu\": 900000, \"blkio\": 310000}}],"
                " \"culprits\": {\"resource\": \"io\", \"own_limit\": false, \"limit\": null,"
                "   \"processes\": [{\"pid\": 4242, \"comm\": \"fio\", \"cgroup\": \"/batch\", \"processes\": 1,"
                "     \"ended\": false, \"victim\": false, \"usage\": {\"read_bytes\": 0, \"write_bytes\": "
                "1503238554}}],"
                "   \"cgroups\": [{\"path\": \"/batch\", \"share\": 0.93}, {\"path\": \"/shop/db\", \"share\": 0.07}]},"
                " \"limits\": {\"io\": {\"devices_source\": \"cgroup\", \"devices\": [{\"device\": \"vdb\","
                "   \"major\": 254, \"minor\": 16, \"rbytes\": 10, \"wbytes\": 0},"
                "   {\"device\": \"vda\", \"major\": 254, \"minor\": 0, \"rbytes\": 0, \"wbytes\": 1503238554}],"
                "   \"node_devices\": [{\"device\": \"vda\", \"major\": 254, \"minor\": 0, \"util\": 1.0}]}}}",
                "pgbench (/shop/db) waited 0.31 s for io on vda (100% busy) in 1 s: fio (/batch, pid 4242) wrote 1.4 "
                "GiB");
        /* A hybrid host: blkio saw nothing, the node's counters name the disk. */
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"comm\": \"postgres\", \"cgroup\": \"/db\","
                "   \"delay_us\": {\"blkio\": 90000}}],"
                " \"culprits\": {\"own_limit\": false, \"limit\": null, \"processes\": [{\"pid\": 9, \"comm\": \"fio\","
                "   \"cgroup\": \"/batch\", \"processes\": 1, \"ended\": false, \"victim\": false,"
                "   \"usage\": {\"read_bytes\": 52428800, \"write_bytes\": 0}}], \"cgroups\": [{\"path\": \"/batch\", "
                "\"share\": 1.0}]},"
                " \"limits\": {\"io\": {\"devices_source\": \"node\", \"devices\": [{\"device\": \"vda\", \"major\": "
                "254,"
                "   \"minor\": 0, \"rbytes\": 0, \"wbytes\": 0}], \"node_devices\": [{\"device\": \"vdb\", \"major\": "
                "254,"
                "   \"minor\": 16, \"util\": 0.874}, {\"device\": \"vda\", \"major\": 254, \"minor\": 0, \"util\": "
                "0.1}]}}}",
                "postgres (/db) waited 90 ms for io on vdb (87% busy) in 1 s: fio (/batch, pid 9) read 50.0 MiB");
}

/* psidiag 0.8: a process in a container is named by its container and image, one in a pod by its
 * pod and its container in it, a sandbox as the pod's; unnamed ones by their cgroup; control
 * characters in a runtime's names escaped. */
static void test_container_names(void **state) {
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/machine.slice\", \"resource\": \"cpu\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"pid\": 7, \"comm\": \"nginx\","
                " \"cgroup\": \"/machine.slice/libpod-ab.scope\", \"delay_us\": {\"cpu\": 500000},"
                " \"meta\": {\"container\": {\"name\": \"web\", \"image\": \"nginx:1.25\", \"pod\": null}}}],"
                " \"culprits\": {\"own_limit\": false, \"limit\": null, \"dominant\": true,"
                "   \"processes\": [{\"pid\": 9, \"comm\": \"api\", \"cgroup\": \"/kubepods/pod1/cd\", \"processes\": "
                "1,"
                "   \"ended\": false, \"victim\": false, \"usage\": {\"cpu_us\": 900000},"
                "   \"meta\": {\"container\": {\"name\": null, \"image\": \"api:2\", \"pod\": {\"namespace\": "
                "\"payments\","
                "   \"name\": \"api-7d9f\", \"uid\": null, \"container\": \"api\", \"sandbox\": false}}}}],"
                "   \"cgroups\": [{\"path\": \"/kubepods/pod1/cd\", \"share\": 0.9}]}}",
                "nginx (container web, image nginx:1.25) waited 0.5 s for cpu in 1 s: api (pod payments/api-7d9f, "
                "container api, pid 9) used 0.9 s of cpu");
        assert_summary("{\"type\": \"snapshot\", \"sample\": {}, \"most_delayed\": [{\"comm\": \"pause\", \"cgroup\": "
                       "\"/k/x\", \"delay_us\": {\"cpu\": 1000}, \"meta\": {\"container\": {\"name\": \"\\u001b]0;x\","
                       " \"image\": null, \"pod\": null}}}]}",
                       "pause (container \\x1b]0;x) waited 1.0 ms for cpu");
        assert_summary("{\"type\": \"snapshot\", \"sample\": {}, \"most_delayed\": [{\"comm\": \"pause\", \"cgroup\": "
                       "\"/k/x\", \"delay_us\": {\"cpu\": 1000}, \"meta\": {\"container\": {\"name\": null,"
                       " \"image\": null, \"pod\": {\"namespace\": \"a\", \"name\": \"b\", \"sandbox\": true}}}}]}",
                       "pause (pod a/b, its sandbox) waited 1.0 ms for cpu");
        /* psidiag 0.10: a podman container in a `podman pod` */
        assert_summary("{\"type\": \"snapshot\", \"sample\": {}, \"most_delayed\": [{\"comm\": \"sh\", \"cgroup\": "
                       "\"/machine.slice/x\", \"delay_us\": {\"cpu\": 1000}, \"meta\": {\"container\": {\"name\": "
                       "\"podweb\", \"image\": \"bb:1\", \"pod\": null, \"runtime_pod\": \"web-pod\"}}}]}",
                       "sh (container podweb, image bb:1, podman pod web-pod) waited 1.0 ms for cpu");
        assert_summary("{\"type\": \"snapshot\", \"sample\": {}, \"most_delayed\": [{\"comm\": \"sh\", \"cgroup\": "
                       "\"/docker/ab\", \"delay_us\": {\"cpu\": 1000}, \"meta\": {\"container\": {\"name\": null,"
                       " \"image\": null, \"pod\": null, \"unnamed\": \"gone\"}}}]}",
                       "sh (/docker/ab) waited 1.0 ms for cpu");
}

/* taskstats v17: the named process's longest wait ended in the trigger's window before the sample
 * and is longer than all it waited in it: the summary says so; a wait in the window, one from
 * before, one shorter than the sample's, or none dated (older kernels) adds nothing. */
#define WORST_BASE                                                                                                     \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"                           \
        " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"pid\": 7, \"comm\": \"postgres\","                \
        " \"cgroup\": \"/db\", \"delay_us\": {\"blkio\": 50000}, \"worst\": %s}]}"

static void test_worst_wait(void **state) {
        static const char fired[] = "{\"delay\": \"blkio\", \"us\": 900000, \"tid\": 7, \"ended\": "
                                    "\"2026-11-27T08:00:00Z\", \"before_time_ms\": 300, \"when\": \"trigger_window\"}";
        static const char plain[] = "postgres (/db) waited 50 ms for io in 1 s";
        char buf[1024];

        snprintf(buf, sizeof buf, WORST_BASE, fired);
        assert_summary(buf, "postgres (/db) waited 50 ms for io in 1 s, its longest wait, 0.9 s, ended 0.3 s before "
                            "the wakeup");
        snprintf(buf, sizeof buf, WORST_BASE, "null");
        assert_summary(buf, plain);
        snprintf(buf, sizeof buf, WORST_BASE,
                 "{\"delay\": \"blkio\", \"us\": 900000, \"tid\": 7, \"before_time_ms\": -300, \"when\": "
                 "\"window\"}");
        assert_summary(buf, plain);
        snprintf(buf, sizeof buf, WORST_BASE,
                 "{\"delay\": \"blkio\", \"us\": 900000, \"tid\": 7, \"before_time_ms\": 3600000, \"when\": "
                 "\"before\"}");
        assert_summary(buf, plain);
        snprintf(buf, sizeof buf, WORST_BASE,
                 "{\"delay\": \"blkio\", \"us\": 40000, \"tid\": 7, \"before_time_ms\": 300, \"when\": "
                 "\"trigger_window\"}");
        assert_summary(buf, plain);
}

/* A stuck device said plainly (its queue waiting, nothing completed), not "100% busy". */
static void test_stuck_device(void **state) {
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/psidiag-rw-db\", \"resource\": \"io\"},"
                       " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                       " \"limits\": {\"io\": {\"devices_source\": \"node\", \"devices\": [], \"node_devices\": ["
                       "   {\"device\": \"vda\", \"major\": 254, \"minor\": 0, \"rios\": 0, \"wios\": 0, \"util\": 1.0,"
                       "    \"in_flight\": 21, \"in_flight_start\": 21, \"verdict\": \"stuck\"}]}}}",
                       "/psidiag-rw-db stalled 1 s on io on vda (stuck: 21 requests in flight, none completed) in 1 s, "
                       "no process measured waiting");
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"
                       " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                       " \"limits\": {\"io\": {\"devices_source\": \"node\", \"devices\": [], \"node_devices\": ["
                       "   {\"device\": \"vda\", \"major\": 254, \"minor\": 0, \"rios\": 1, \"wios\": 2, \"util\": 1.0,"
                       "    \"in_flight\": 9, \"verdict\": \"stuck\"}]}}}",
                       "/db stalled 1 s on io on vda (stuck: 9 requests in flight, 3 completed) in 1 s, no process "
                       "measured waiting");
}

/* No wait ended in the sample, but a look saw a thread in D: it is named, not "no process". */
static void test_blocked_now(void **state) {
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"
                       " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                       " \"blocked\": [{\"wchan\": \"blkdev_issue_flush\", \"seen\": 2, \"threads_total\": 3,"
                       "   \"threads\": [{\"pid\": 812, \"tid\": 815, \"comm\": \"postgres\"}]}]}",
                       "/db stalled 1 s on io in 1 s, no wait ended in it; blocked now: postgres (pid 812) in "
                       "blkdev_issue_flush and 2 more threads");
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"
                       " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                       " \"blocked\": [{\"wchan\": null, \"seen\": 1, \"threads_total\": 1,"
                       "   \"threads\": [{\"pid\": 812, \"tid\": 812, \"comm\": \"dd\"}]}]}",
                       "/db stalled 1 s on io in 1 s, no wait ended in it; blocked now: dd (pid 812)");
        /* How long, where a look could tell (psidiag 0.9). */
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"cpu\"},"
                       " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                       " \"blocked\": [{\"wchan\": \"wait_for_vfork_done\", \"seen\": 2, \"threads_total\": 1,"
                       "   \"threads\": [{\"pid\": 812, \"tid\": 812, \"comm\": \"sh\", \"blocked_ms\": 3200}]}]}",
                       "/db stalled 1 s on cpu in 1 s, no wait ended in it; blocked now: sh (pid 812) for 3.2 s in "
                       "wait_for_vfork_done");
        /* What the wait is for (psidiag 0.10): a memory stall names the thread waiting for memory, not
         * the one blocked on io listed first; with only io waits, it says they are io's. */
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"memory\"},"
                " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                " \"blocked\": [{\"wchan\": \"bio_await\", \"resource\": \"io\", \"seen\": 2, \"threads_total\": 1,"
                "   \"threads\": [{\"pid\": 700, \"tid\": 700, \"comm\": \"dd\", \"blocked_ms\": 2100}]},"
                "  {\"wchan\": \"__mem_cgroup_handle_over_high\", \"resource\": \"memory\", \"seen\": 1,"
                "   \"threads_total\": 1, \"threads\": [{\"pid\": 812, \"tid\": 812, \"comm\": \"grower\","
                "   \"blocked_ms\": 1500}]}]}",
                "/db stalled 1 s on memory in 1 s, no wait ended in it; blocked now: grower (pid 812) for 1.5 s "
                "in __mem_cgroup_handle_over_high");
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"memory\"},"
                " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                " \"blocked\": [{\"wchan\": \"bio_await\", \"resource\": \"io\", \"seen\": 2, \"threads_total\": 1,"
                "   \"threads\": [{\"pid\": 700, \"tid\": 700, \"comm\": \"dd\", \"blocked_ms\": 2100}]}]}",
                "/db stalled 1 s on memory in 1 s, no wait ended in it; blocked now for io: dd (pid 700) for 2.1 s "
                "in bio_await");
        /* For cpu no D sleep is the stall's: the first group, and what it waits for where told. */
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"cpu\"},"
                " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": [],"
                " \"blocked\": [{\"wchan\": \"bio_await\", \"resource\": \"io\", \"seen\": 2, \"threads_total\": 1,"
                "   \"threads\": [{\"pid\": 700, \"tid\": 700, \"comm\": \"dd\", \"blocked_ms\": 2100}]}]}",
                "/db stalled 1 s on cpu in 1 s, no wait ended in it; blocked now for io: dd (pid 700) for 2.1 s "
                "in bio_await");
}

/* A wait not ended ranked first (psidiag 0.9): the process stuck 3.2 s is named before the one that
 * waited 50 ms, with where it sleeps; for cpu a D sleep never leads the sentence. */
#define BLOCKED_TOP_FMT                                                                                                \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"%s\"},"                           \
        " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 1000000}, \"most_delayed\": ["                             \
        "  {\"pid\": 812, \"comm\": \"dd\", \"cgroup\": \"/db\", \"delay_us\": {\"cpu\": 0, \"blkio\": 0},"            \
        "   \"blocked_now\": {\"tid\": 813, \"ms\": 3200}},"                                                           \
        "  {\"pid\": 900, \"comm\": \"postgres\", \"cgroup\": \"/db\", \"delay_us\": {\"cpu\": 9000, "                 \
        "\"blkio\": 50000},"                                                                                           \
        "   \"blocked_now\": null}],"                                                                                  \
        " \"blocked\": [{\"wchan\": \"blk_mq_get_tag\", \"seen\": 2, \"threads_total\": 1,"                            \
        "   \"threads\": [{\"pid\": 812, \"tid\": 813, \"comm\": \"dd\", \"blocked_ms\": 3200}]}]}"

static void test_blocked_top(void **state) {
        char in[2048];

        snprintf(in, sizeof in, BLOCKED_TOP_FMT, "io");
        assert_summary(in, "dd (/db) blocked for io, 3.2 s so far in blk_mq_get_tag");
        snprintf(in, sizeof in, BLOCKED_TOP_FMT, "cpu");
        assert_summary(in, "postgres (/db) waited 9.0 ms for cpu in 1 s");
        /* Blocked for less than the sample: between two waits, not stuck; the waits lead. */
        snprintf(in, sizeof in, BLOCKED_TOP_FMT, "io");
        memcpy(strstr(in, "\"ms\": 3200"), "\"ms\":  800", 10);
        assert_summary(in, "postgres (/db) waited 50 ms for io in 1 s");
}

/* Writeback (psidiag 0.9): a buffered writer's bytes are what it dirtied; with the node's page cache
 * queued for the disks the summary says so, and names the cgroup that holds it where cgroup2 says;
 * under 32 MiB queued it is a plain writer. */
#define WRITEBACK_FMT                                                                                                  \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"                           \
        " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 800000},"                                                  \
        " \"most_delayed\": [{\"pid\": 7, \"comm\": \"postgres\", \"cgroup\": \"/db\","                                \
        "   \"delay_us\": {\"blkio\": 310000}}],"                                                                      \
        " \"culprits\": {\"resource\": \"io\", \"own_limit\": false, \"limit\": null,"                                 \
        "   \"processes\": [{\"pid\": 4224, \"comm\": \"dd\", \"cgroup\": \"/batch\", \"processes\": 1,"               \
        "     \"ended\": false, \"victim\": false, \"usage\": {\"read_bytes\": 0, \"write_bytes\": "                   \
        "437268480}}],"                                                                                                \
        "   \"cgroups\": [{\"path\": \"/batch\", \"share\": 0.93, \"dirty_bytes\": %s},"                               \
        "     {\"path\": \"/db\", \"share\": 0.07, \"dirty_bytes\": 0}]},"                                             \
        " \"limits\": {\"io\": {\"devices_source\": \"node\", \"devices\": [],"                                        \
        "   \"writeback\": {\"dirty_bytes\": %s, \"writeback_bytes\": 4194304}}}}"

static void test_writeback(void **state) {
        char in[4096];

        snprintf(in, sizeof in, WRITEBACK_FMT, "null", "2147483648");
        assert_summary(in, "postgres (/db) waited 0.31 s for io in 1 s: dd (/batch, pid 4224) dirtied 417 MiB, "
                           "writeback of 2.0 GiB waiting on the node");
        snprintf(in, sizeof in, WRITEBACK_FMT, "2040109465", "2147483648");
        assert_summary(in, "postgres (/db) waited 0.31 s for io in 1 s: writeback of 1.9 GiB dirtied by /batch: dd "
                           "(pid 4224) dirtied 417 MiB in the sample");
        /* The cgroup holds less than half of what is queued: the node's figure, not a claim. */
        snprintf(in, sizeof in, WRITEBACK_FMT, "104857600", "2147483648");
        assert_summary(in, "postgres (/db) waited 0.31 s for io in 1 s: dd (/batch, pid 4224) dirtied 417 MiB, "
                           "writeback of 2.0 GiB waiting on the node");
        snprintf(in, sizeof in, WRITEBACK_FMT, "null", "0");
        assert_summary(in, "postgres (/db) waited 0.31 s for io in 1 s: dd (/batch, pid 4224) wrote 417 MiB");
        /* The writer held in balance_dirty_pages() all along: no process of /batch listed, the cgroup
         * holds the queue. */
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"io\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"pid\": 7, \"comm\": \"postgres\","
                "   \"cgroup\": \"/db\", \"delay_us\": {\"blkio\": 310000}}],"
                " \"culprits\": {\"resource\": \"io\", \"own_limit\": false, \"limit\": null, \"processes\": [],"
                "   \"cgroups\": [{\"path\": \"/batch\", \"share\": 0.99, \"dirty_bytes\": 286261248,"
                "     \"usage\": {\"write_bytes\": 16777216}}]},"
                " \"limits\": {\"io\": {\"writeback\": {\"dirty_bytes\": 46870528, \"writeback_bytes\": 240009216}}}}",
                "postgres (/db) waited 0.31 s for io in 1 s: writeback of 273 MiB dirtied by /batch");
        /* 20 MiB dirty beside a writer of 417 MiB: not its bytes waiting (an O_DIRECT writer's). */
        snprintf(in, sizeof in, WRITEBACK_FMT, "null", "16777216");
        assert_summary(in, "postgres (/db) waited 0.31 s for io in 1 s: dd (/batch, pid 4224) wrote 417 MiB");
}

/* A node-wide storm: 100 cgroups, the largest 4%: nobody is named. */
static void test_no_dominant_culprit(void **state) {
        json_t *j =
                load("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/\", \"resource\": \"cpu\"},"
                     " \"sample\": {\"duration_ms\": 1000, \"stall_us\": 500000}, \"most_delayed\": [],"
                     " \"culprits\": {\"resource\": \"cpu\", \"own_limit\": false, \"limit\": null,"
                     "   \"processes\": [{\"pid\": 9, \"comm\": \"worker\", \"cgroup\": \"/w/0\", \"processes\": 1,"
                     "     \"ended\": false, \"victim\": false, \"usage\": {\"cpu_us\": 40000}}], \"cgroups\": []}}");
        json_t *cgroups = json_object_get(json_object_get(j, "culprits"), "cgroups");
        char *s = NULL;

        for (int i = 0; i < 100; i++)
                json_array_append_new(cgroups,
                                      json_pack("{s:s, s:f}", "path", "/w/x", "share", i == 0 ? 0.04 : 0.0097));
        assert_false(summary_culprit_dominant(json_object_get(j, "culprits")));
        assert_int_equal(summary_format(j, &s), 0);
        assert_string_equal(s,
                            "the node stalled 0.5 s on cpu in 1 s, no process measured waiting: no dominant culprit: "
                            "100 cgroups share the cpu, the largest 4%");
        free(s);
        json_decref(j);
}

static void test_dominance_rule(void **state) {
        static const struct {
                const char *cgroups;
                bool dominant;
        } cases[] = {
                { "[]", false },
                { "[{\"share\": 1.0}]", true },
                { "[{\"share\": 0.5}, {\"share\": 0.5}]", true },
                { "[{\"share\": 0.3}, {\"share\": 0.2}]", false },
                { "[{\"share\": 0.3}, {\"share\": 0.1}]", true },
                { "[{\"share\": 0.2}, {\"share\": 0.05}]", false },
        };

        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
                char text[256];
                snprintf(text, sizeof text, "{\"cgroups\": %s}", cases[i].cgroups);
                json_t *c = load(text);
                assert_int_equal(summary_culprit_dominant(c), cases[i].dominant);
                json_decref(c);
        }
}

/* A comm is whatever a task set: control bytes are escaped, never passed to a pager. */
static void test_hostile_comm(void **state) {
        assert_summary("{\"type\": \"snapshot\", \"trigger\": null, \"sample\": {\"duration_ms\": 0},"
                       " \"most_delayed\": [{\"comm\": \"foo) Z \\n\\u001b[31m\", \"cgroup\": \"/a\\tb\","
                       "   \"delay_us\": {\"cpu\": 2500}}], \"culprits\": null}",
                       "foo) Z \\x0a\\x1b[31m (/a\\x09b) waited 2.5 ms for cpu");
}

/* C1 controls and bidirectional overrides in a name are escaped as code points: an RLO (U+202E)
 * would show "gpj.exe" as "exe.jpg", and U+009B is a CSI to a terminal that takes C1. */
static void test_hostile_comm_c1_and_bidi(void **state) {
        assert_summary("{\"type\": \"snapshot\", \"trigger\": null, \"sample\": {\"duration_ms\": 0},"
                       " \"most_delayed\": [{\"comm\": \"a\\u202egpj.exe\\u009b2J\", \"cgroup\": "
                       "\"/b\\u2066c\\u2069\\u200f\\u061c\\u0085\","
                       "   \"delay_us\": {\"cpu\": 2500}}], \"culprits\": null}",
                       "a\\u202egpj.exe\\u009b2J (/b\\u2066c\\u2069\\u200f\\u061c\\u0085) waited 2.5 ms for cpu");
}

/* A compiler storm: the ended processes aggregated by comm, the stalled service's own use. */
static void test_ended_aggregate_and_own_processes(void **state) {
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/svc\", \"resource\": \"cpu\"},"
                " \"sample\": {\"duration_ms\": 2000}, \"most_delayed\": [{\"comm\": \"api\", \"cgroup\": \"/svc\","
                "   \"delay_us\": {\"cpu\": 42000}}],"
                " \"culprits\": {\"own_limit\": false, \"limit\": null, \"processes\": [{\"pid\": null, \"comm\": "
                "\"cc1\","
                "   \"cgroup\": \"/build\", \"processes\": 35, \"ended\": true, \"victim\": false,"
                "   \"usage\": {\"cpu_us\": 3500000}}], \"cgroups\": [{\"path\": \"/build\", \"share\": 0.8}, "
                "{\"share\": 0.2}]}}",
                "api (/svc) waited 42 ms for cpu in 2 s: 35 cc1 processes (/build, ended) used 3.5 s of cpu");
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/svc\", \"resource\": \"cpu\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"comm\": \"api\", \"cgroup\": \"/svc\","
                "   \"delay_us\": {\"cpu\": 420000}}],"
                " \"culprits\": {\"own_limit\": false, \"limit\": null, \"processes\": [{\"pid\": 5, \"comm\": \"api\","
                "   \"cgroup\": \"/svc\", \"processes\": 1, \"ended\": false, \"victim\": true,"
                "   \"usage\": {\"cpu_us\": 990000}}], \"cgroups\": [{\"path\": \"/svc\", \"share\": 0.99}]}}",
                "api (/svc) waited 0.42 s for cpu in 1 s: api (/svc, pid 5) used 0.99 s of cpu, itself among the "
                "stalled");
}

/* A program's workers are one culprit (culprits.processes by program): stress-ng's four in /batch,
 * and with one of them ended in the sample. */
static void test_program_culprit(void **state) {
#define PROGRAM_CULPRIT(procs)                                                                                         \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/svc\", \"resource\": \"cpu\"},"                         \
        " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"comm\": \"sh\", \"cgroup\": \"/svc\","            \
        "   \"delay_us\": {\"cpu\": 420000}}],"                                                                        \
        " \"culprits\": {\"own_limit\": false, \"limit\": null, \"processes\": [{\"pid\": 21, \"comm\": "              \
        "\"stress-ng\", \"cgroup\": \"/batch\", " procs ", \"ended\": false, \"victim\": false,"                       \
        "   \"usage\": {\"cpu_us\": 1292000}}], \"cgroups\": [{\"path\": \"/batch\", \"share\": 0.8}, "                \
        "{\"share\": 0.2}]}}"
        assert_summary(PROGRAM_CULPRIT("\"processes\": 4, \"ended_processes\": 0, \"pids\": [21, 22, 23, 24]"),
                       "sh (/svc) waited 0.42 s for cpu in 1 s: stress-ng (/batch, 4 processes) used 1.29 s of cpu");
        assert_summary(PROGRAM_CULPRIT("\"processes\": 5, \"ended_processes\": 1, \"pids\": [21, 22, 23, 24]"),
                       "sh (/svc) waited 0.42 s for cpu in 1 s: stress-ng (/batch, 5 processes, 1 ended) used 1.29 s "
                       "of cpu");
#undef PROGRAM_CULPRIT
}

/* The stall that fired had passed before the sample (window.verdict passed): the victim as
 * measured, what it saw of the stall against what fired, and no culprit, dominant or throttling,
 * however the shares look. */
#define PASSED_BASE                                                                                                    \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/web\", \"resource\": \"cpu\", \"threshold_us\": "       \
        "100000, \"window_us\": 2000000}, \"sample\": {\"duration_ms\": 1000, \"stall_us\": 2600},"                    \
        " %s \"most_delayed\": [{\"comm\": \"nginx\", \"cgroup\": \"/web\", \"delay_us\": {\"cpu\": 3100}}],"          \
        " \"culprits\": {\"own_limit\": %s, \"limit\": {\"file\": \"cpu.max\", \"cgroup\": \"/web\"},"                 \
        " \"processes\": [{\"pid\": 5, \"comm\": \"nginx\", \"cgroup\": \"/web\", \"processes\": 1, \"ended\": false," \
        " \"victim\": true, \"usage\": {\"cpu_us\": 9000}}], \"cgroups\": [{\"path\": \"/web\", \"share\": 0.9}]}}"
static void test_stall_passed(void **state) {
        static const char want[] = "nginx (/web) waited 3.1 ms for cpu in 1 s, but the stall had passed before the "
                                   "sample: 2.6 ms seen of the 0.1 s in 2 s that fired; no dominant culprit";
        char buf[2048];
        json_t *j;

        /* From the window object. */
        snprintf(buf, sizeof buf, PASSED_BASE,
                 "\"window\": {\"basis\": \"after_wakeup\", \"stall_us\": 2600, \"expected_us\": 50000, \"seen\": "
                 "0.052, \"verdict\": \"passed\"},",
                 "false");
        assert_summary(buf, want);
        j = summary_add(load(buf));
        assert_true(json_is_false(json_object_get(json_object_get(j, "culprits"), "dominant")));
        json_decref(j);
        /* Throttling claimed from a quiet window is no better. */
        snprintf(buf, sizeof buf, PASSED_BASE,
                 "\"window\": {\"basis\": \"after_wakeup\", \"stall_us\": 2600, \"verdict\": \"passed\"},", "true");
        assert_summary(buf, want);
        /* A line written before the window existed: the same rule on trigger and sample. */
        snprintf(buf, sizeof buf, PASSED_BASE, "", "false");
        assert_summary(buf, want);
        j = summary_add(load(buf));
        assert_true(json_is_false(json_object_get(json_object_get(j, "culprits"), "dominant")));
        json_decref(j);
        /* A window that measured the stall names the culprit as before. */
        snprintf(buf, sizeof buf, PASSED_BASE, "\"window\": {\"stall_us\": 2600, \"verdict\": \"measured\"},", "false");
        assert_summary(buf, "nginx (/web) waited 3.1 ms for cpu in 1 s: nginx (/web, pid 5) used 9.0 ms of cpu, itself "
                            "among the stalled");
        j = summary_add(load(buf));
        assert_true(json_is_true(json_object_get(json_object_get(j, "culprits"), "dominant")));
        json_decref(j);
}

/* The culprit named is the dominant cgroup's top process, not the scope's first process when that
 * one is a lesser cgroup's; with none of the dominant cgroup's listed, the cgroup itself. And the
 * count of cgroups is every one that used the resource, not the listed few. (A macro: the format
 * must be a literal for -Wformat-nonliteral.) */
#define DOMINANT_BASE                                                                                                  \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/web\", \"resource\": \"cpu\"},"                         \
        " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [], \"culprits\": {\"own_limit\": false,"             \
        " \"limit\": null, \"processes\": [%s], \"cgroups\": [{\"path\": \"/batch\", \"share\": 0.6,"                  \
        " \"usage\": {\"cpu_us\": 1200000}}, {\"path\": \"/web\", \"share\": 0.1}]}}"

static void test_dominant_cgroup_process(void **state) {
        char text[1024];

        snprintf(text, sizeof text, DOMINANT_BASE,
                 "{\"pid\": 7, \"comm\": \"nginx\", \"cgroup\": \"/web\", \"processes\": 1, \"usage\": {\"cpu_us\": "
                 "200000}},"
                 " {\"pid\": 9, \"comm\": \"cc1\", \"cgroup\": \"/batch/job1\", \"processes\": 1,"
                 " \"usage\": {\"cpu_us\": 150000}}");
        assert_summary(text, "/web stalled on cpu in 1 s, no process measured waiting: cc1 (/batch/job1, pid 9) used "
                             "0.15 s of cpu");
        snprintf(text, sizeof text, DOMINANT_BASE,
                 "{\"pid\": 7, \"comm\": \"nginx\", \"cgroup\": \"/web\", \"processes\": 1, \"usage\": {\"cpu_us\": "
                 "200000}}");
        assert_summary(text, "/web stalled on cpu in 1 s, no process measured waiting: /batch used 1.2 s of cpu");
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/\", \"resource\": \"cpu\"}, \"sample\": {},"
                " \"most_delayed\": [], \"culprits\": {\"cgroups_total\": 100, \"cgroups\": [{\"path\": \"/a\","
                " \"share\": 0.04}, {\"path\": \"/b\", \"share\": 0.03}]}}",
                "the node stalled on cpu, no process measured waiting: no dominant culprit: 100 cgroups share the "
                "cpu, the largest 4%");
}

static void test_own_limit_and_memory(void **state) {
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/svc\", \"resource\": \"cpu\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"comm\": \"api\", \"cgroup\": \"/svc\","
                "   \"delay_us\": {\"cpu\": 600000}}],"
                " \"culprits\": {\"own_limit\": true, \"limit\": {\"cgroup\": \"/svc\", \"file\": \"cpu.max\"},"
                "   \"processes\": [], \"cgroups\": []}}",
                "api (/svc) waited 0.6 s for cpu in 1 s: throttled by its own cpu.max (/svc)");
        assert_summary(
                "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/db\", \"resource\": \"memory\"},"
                " \"sample\": {\"duration_ms\": 1000}, \"most_delayed\": [{\"comm\": \"postgres\", \"cgroup\": \"/db\","
                "   \"delay_us\": {\"cpu\": 9, \"reclaim\": 150000, \"thrashing\": 50000}}],"
                " \"culprits\": {\"own_limit\": false, \"limit\": {\"cgroup\": \"/db\", \"file\": \"memory.max\"},"
                "   \"processes\": [{\"pid\": 77, \"comm\": \"python3\", \"cgroup\": \"/db/job\", \"processes\": 1,"
                "   \"ended\": false, \"victim\": false, \"usage\": {\"rss_bytes\": 40000000, \"rss_growth_bytes\": "
                "20971520}}],"
                "   \"cgroups\": [{\"path\": \"/db/job\", \"share\": 0.7}, {\"share\": 0.3}]}}",
                "postgres (/db) waited 0.2 s for memory in 1 s: python3 (/db/job, pid 77) grew by 20.0 MiB");
}

/* Held at memory.high (the VM's incident, tests/vm case memory-high, trimmed): the summary tells
 * the cgroup's stall and memory.high, not a process's delay: the kernel's reclaim and sleeps over
 * high count as the cgroup's stall but need not count as any task's delay. (A macro: the format must
 * be a literal for -Wformat-nonliteral, which the sanitized build's -O0 reports.) */
#define HIGH_FMT                                                                                                       \
        "{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/psidiag-it-high-385\", \"resource\": \"memory\","       \
        " \"stall\": \"some\"}, \"sample\": {\"duration_ms\": 1019, \"stall_us\": 124421},"                            \
        " \"most_delayed\": [{\"pid\": 389, \"comm\": \"thrasher\", \"cgroup\": \"/psidiag-it-high-385\","             \
        "   \"delay_us\": {\"cpu\": 36116, \"blkio\": 700, \"reclaim\": 117285}}],"                                    \
        " \"culprits\": {\"resource\": \"memory\", \"scope\": \"/psidiag-it-high-385\", \"own_limit\": false,"         \
        "   \"limit\": {\"cgroup\": \"/psidiag-it-high-385\", \"file\": \"memory.high\", \"bytes\": 33554432},"        \
        "   \"processes\": [{\"pid\": 389, \"comm\": \"thrasher\", \"cgroup\": \"/psidiag-it-high-385\","              \
        "     \"processes\": 1, \"ended\": false, \"victim\": true, \"usage\": {\"rss_bytes\": 1863680}}],"            \
        "   \"cgroups\": [{\"path\": \"/psidiag-it-high-385\", \"share\": 1.0}]},"                                     \
        " \"limits\": {\"cpu\": null, \"io\": null, \"memory\": {\"cgroup\": \"/psidiag-it-high-385\","                \
        "   \"source\": \"cgroup2\", \"limited\": true, \"max_bytes\": null, \"high_bytes\": 33554432,"                \
        "   \"events\": {\"high\": 208, \"max\": 0, \"oom\": 0, \"oom_kill\": 0}, \"verdict\": \"%s\"}}}"
static void test_memory_high(void **state) {
        char text[4096];

        snprintf(text, sizeof text, HIGH_FMT, "throttled");
        assert_summary(text, "/psidiag-it-high-385 stalled 0.12 s on memory in 1.02 s: throttled by memory.high "
                             "(/psidiag-it-high-385)");
        /* The grower over high in the VM: its cgroup stalled 1.01 s of 1.01 s, its own memory
         * delays were 6 ms: the sleeps over high are no task's delay. */
        assert_summary("{\"type\": \"pressure\", \"trigger\": {\"cgroup\": \"/psidiag-it-highanon-358\","
                       " \"resource\": \"memory\"}, \"sample\": {\"duration_ms\": 1010, \"stall_us\": 1006947},"
                       " \"most_delayed\": [{\"pid\": 362, \"comm\": \"vm-grower\", \"cgroup\": "
                       "\"/psidiag-it-highanon-358\", \"delay_us\": {\"cpu\": 4218, \"reclaim\": 6401}}],"
                       " \"limits\": {\"memory\": {\"cgroup\": \"/psidiag-it-highanon-358\", \"high_bytes\": 33554432,"
                       " \"events\": {\"high\": 119, \"max\": 0}, \"verdict\": \"throttled\"}}}",
                       "/psidiag-it-highanon-358 stalled 1.01 s on memory in 1.01 s: throttled by memory.high "
                       "(/psidiag-it-highanon-358)");
        /* Another verdict: the process form, as before. */
        snprintf(text, sizeof text, HIGH_FMT, "contention");
        assert_summary(text, "thrasher (/psidiag-it-high-385) waited 0.12 s for memory in 1.02 s: thrasher "
                             "(/psidiag-it-high-385, pid 389) holds 1.8 MiB, itself among the stalled");
}

static void test_oom(void **state) {
        assert_summary(
                "{\"type\": \"oom\", \"sample\": {\"duration_ms\": 1000}, \"oom\": {\"kills\": 1,"
                " \"oom_memcg\": \"/shop\", \"global\": false, \"cgroup\": \"/shop\", \"victim\": {\"pid\": 26676,"
                " \"comm\": \"report-builder\", \"cgroup\": \"/shop\", \"rss_kib\": {\"anon\": 47360, \"file\": 1128,"
                " \"shmem\": 0}}}}",
                "the kernel's OOM killer killed report-builder (/shop, pid 26676) holding 47.4 MiB, at the "
                "limit of /shop");
        assert_summary("{\"type\": \"oom\", \"oom\": {\"kills\": 3, \"oom_memcg\": null, \"global\": null,"
                       " \"cgroup\": \"/shop\", \"victim\": null}}",
                       "the kernel's OOM killer killed 3 processes in /shop");
}

/* summary_add: the sentence right after time, culprits.dominant beside the shares; an incident
 * whose sentence cannot be made is kept as it was. */
static void test_add(void **state) {
        json_t *j =
                load("{\"schema_version\": 1, \"type\": \"pressure\", \"id\": \"x\", \"time\": \"t\","
                     " \"trigger\": {\"cgroup\": \"/a\", \"resource\": \"cpu\"}, \"sample\": {\"duration_ms\": 1000},"
                     " \"most_delayed\": [], \"culprits\": {\"cgroups\": [{\"share\": 0.3}, {\"share\": 0.2}]}}");
        const char *key, *keys[8];
        size_t n = 0;
        json_t *v;

        j = summary_add(j);
        json_object_foreach(j, key, v) {
                if (n < 8)
                        keys[n++] = key;
        }
        assert_string_equal(keys[3], "time");
        assert_string_equal(keys[4], "summary");
        assert_true(json_is_false(json_object_get(json_object_get(j, "culprits"), "dominant")));
        assert_string_equal(json_string_value(json_object_get(j, "summary")),
                            "/a stalled on cpu in 1 s, no process measured waiting: no dominant culprit: 2 cgroups "
                            "share the cpu, the largest 30%");
        json_decref(j);

        j = load("{\"type\": \"pressure\", \"time\": \"t\"}");
        j = summary_add(j);
        assert_null(json_object_get(j, "summary"));
        assert_int_equal(json_object_size(j), 2);
        json_decref(j);
        assert_null(summary_add(NULL));

        /* A snapshot does not say which cgroup it measured: the sentence names none. */
        assert_summary("{\"type\": \"snapshot\", \"trigger\": null, \"sample\": {\"duration_ms\": 1000,"
                       " \"stall_us\": 500000}, \"most_delayed\": [], \"culprits\": {\"resource\": \"io\"}}",
                       "io stall grew 0.5 s in 1 s, no process measured waiting");
}

/* Exit records lost: the sentence says how many, and how many victims ended unheard. */
static void test_kill_lost(void **state) {
        assert_summary("{\"type\": \"kill\", \"kill\": {\"cgroup\": \"/shop\", \"victims_total\": 1, "
                       "\"victims\": [{\"pid\": 812, \"comm\": \"grower\", \"cgroup\": \"/shop\", \"rss_kib\": 1024, "
                       "\"signal\": null}], \"killer\": null, \"pressure\": {\"trigger\": null, \"incident\": null}, "
                       "\"lost_exit_records\": 1911, \"ended_unheard\": 1}}",
                       "killed by a signal (killer unknown): grower (/shop, pid 812) holding 1.0 MiB, under pressure; "
                       "1911 exit records lost (the agent's buffer was full): 1 process ended unheard, how unknown");
        assert_summary("{\"type\": \"kill\", \"kill\": {\"cgroup\": \"/shop\", \"victims_total\": 1, "
                       "\"victims\": [{\"pid\": 812, \"comm\": \"grower\", \"cgroup\": \"/shop\", \"rss_kib\": 1024, "
                       "\"signal\": \"SIGKILL\"}], \"killer\": null, \"pressure\": {\"trigger\": null, "
                       "\"incident\": null}, \"lost_exit_records\": 0, \"ended_unheard\": 0}}",
                       "killed by a signal (killer unknown): grower (/shop, pid 812) holding 1.0 MiB, SIGKILL, under "
                       "pressure");
}

/* A kill systemd-oomd announced to the prekill hook: the sentence says what was measured before, or
 * that the kill did not come. */
static void test_kill_prekill(void **state) {
        assert_summary(
                "{\"type\": \"kill\", \"kill\": {\"cgroup\": \"/shop\", \"victims_total\": 3, "
                "\"victims\": [{\"pid\": 812, \"comm\": \"grower\", \"cgroup\": \"/shop/a\", \"rss_kib\": 26000, "
                "\"signal\": \"SIGKILL\"}], \"killer\": {\"name\": \"systemd-oomd\", \"basis\": \"prekill\", "
                "\"mark\": \"Notify /shop/a\"}, \"pressure\": {\"trigger\": null, \"incident\": null}, "
                "\"prekill\": {\"cgroup\": \"/shop/a\", \"outcome\": \"killed\", \"before_kill_ms\": 88, "
                "\"processes_total\": 3, \"rss_kib\": 40960}}}",
                "killed by systemd-oomd: grower (/shop/a, pid 812) holding 25.4 MiB, SIGKILL and 2 more, under "
                "pressure; measured 88 ms before the kill (3 processes, 40.0 MiB)");
        assert_summary(
                "{\"type\": \"kill\", \"kill\": {\"cgroup\": \"/shop\", \"victims_total\": 0, \"victims\": [], "
                "\"killer\": {\"name\": \"systemd-oomd\", \"basis\": \"prekill\", \"mark\": \"Notify /shop/b\"}, "
                "\"prekill\": {\"cgroup\": \"/shop/b\", \"outcome\": \"no_kill\", \"before_kill_ms\": null, "
                "\"processes_total\": 1, \"rss_kib\": 512}}}",
                "systemd-oomd announced the kill of /shop/b (1 process, 512 KiB) but did not kill");
        /* Told of a cgroup with nothing in it (a slice whose unit it had killed): no "(0 processes)". */
        assert_summary("{\"type\": \"kill\", \"kill\": {\"cgroup\": \"/shop\", \"victims_total\": 0, \"victims\": [], "
                       "\"killer\": {\"name\": \"systemd-oomd\", \"basis\": \"prekill\", \"mark\": \"Notify /shop\"}, "
                       "\"prekill\": {\"cgroup\": \"/shop\", \"outcome\": \"no_kill\", \"before_kill_ms\": null, "
                       "\"processes_total\": 0, \"rss_kib\": 0}}}",
                       "systemd-oomd announced the kill of /shop, which held no process: nothing was killed");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_io_culprit_and_device),
                cmocka_unit_test(test_container_names),
                cmocka_unit_test(test_no_dominant_culprit),
                cmocka_unit_test(test_dominance_rule),
                cmocka_unit_test(test_hostile_comm),
                cmocka_unit_test(test_hostile_comm_c1_and_bidi),
                cmocka_unit_test(test_ended_aggregate_and_own_processes),
                cmocka_unit_test(test_program_culprit),
                cmocka_unit_test(test_stall_passed),
                cmocka_unit_test(test_worst_wait),
                cmocka_unit_test(test_stuck_device),
                cmocka_unit_test(test_blocked_now),
                cmocka_unit_test(test_blocked_top),
                cmocka_unit_test(test_writeback),
                cmocka_unit_test(test_dominant_cgroup_process),
                cmocka_unit_test(test_own_limit_and_memory),
                cmocka_unit_test(test_memory_high),
                cmocka_unit_test(test_oom),
                cmocka_unit_test(test_kill_prekill),
                cmocka_unit_test(test_kill_lost),
                cmocka_unit_test(test_add),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
