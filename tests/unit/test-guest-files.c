/* SPDX-License-Identifier: MIT */
/* The parsers on the kernel files of the VM suite's guests (tests/fixtures/guests/<guest>/,
 * captured by tests/vm/fixtures.py from their `fixtures` case): Debian 12's 6.1, Debian 13's 6.12
 * and sid's 7.2, as the agent reads them there. Every line of them is read: only io.stat's
 * "(unknown)" lines (nameless devices, 6.12 and later: kernel-facts.md: unknown-lines), where a
 * guest has them, would be skipped and noted, one each. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "probes/cgusage.h"
#include "probes/diskstats.h"
#include "probes/limits-io.h"
#include "probes/limits.h"
#include "probes/pressure.h"
#include "tests/unit/test-util.h"

#define GUESTS fixture("guests")

static const char *const guests[] = { "bookworm", "trixie", "sid" };

/* The file name of guest's directory, read whole (NUL-ended), in buf; its length. */
static size_t slurp(const char *guest, const char *name, char *buf, size_t size) {
        char path[512];
        FILE *f;
        size_t n;

        snprintf(path, sizeof path, "%s/%s/%s", GUESTS, guest, name);
        f = fopen(path, "re");
        if (!f)
                fail_msg("%s: missing (tests/vm/fixtures.py writes it)", path);
        n = fread(buf, 1, size - 1, f);
        assert_true(feof(f));
        fclose(f);
        buf[n] = '\0';
        return n;
}

/* Lines of buf that begin with prefix. */
static size_t lines_starting(const char *buf, const char *prefix) {
        size_t n = 0;

        for (const char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                n += strncmp(p, prefix, strlen(prefix)) == 0;
        return n;
}

static void test_io_stat(void **state) {
        static char buf[65536];

        for (size_t g = 0; g < ELEMENTSOF(guests); g++) {
                size_t len = slurp(guests[g], "root-io.stat", buf, sizeof buf);
                size_t unknown = lines_starting(buf, "(unknown)");
                IoLimits io = {};
                const IoDeviceLimits *vda = NULL;

                assert_unparsed(UNPARSED_IO_STAT, unknown, assert_int_equal(limits_parse_io_stat(buf, len, &io), 0));
                assert_true(io.has_stat);
                for (size_t i = 0; i < io.n_devices; i++)
                        if (io.devices[i].major == 254 && io.devices[i].minor == 0)
                                vda = &io.devices[i];
                assert_true(vda && vda->has_stat && vda->wbytes > 0); /* the root disk, virtio */
                /* Every other line a device, its keys or none ("11:0 ", the cd-rom on 7.2). */
                assert_int_equal(io.n_devices + unknown, lines_starting(buf, ""));
        }
}

static void test_memory(void **state) {
        static char buf[65536];
        static const char *const names[] = { "root-memory.stat", "slice-memory.stat" };

        for (size_t g = 0; g < ELEMENTSOF(guests); g++) {
                for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                        size_t len = slurp(guests[g], names[k], buf, sizeof buf);
                        MemoryLimits m = {};

                        assert_unparsed(UNPARSED_MEMORY_STAT, 0,
                                        assert_int_equal(limits_parse_memory_stat(buf, len, false, &m), 0));
                        assert_true(m.has_anon && m.has_file && m.has_refault_anon && m.has_refault_file);
                        assert_true(m.file_bytes > 0);
                }
                size_t len = slurp(guests[g], "slice-memory.events", buf, sizeof buf);
                MemoryEvents e = {};
                assert_unparsed(UNPARSED_MEMORY_EVENTS, 0,
                                assert_int_equal(limits_parse_memory_events(buf, len, &e), 0));
                assert_true(e.has_high && e.has_max && e.has_oom && e.has_oom_kill);
        }
}

static void test_cpu_stat(void **state) {
        static char buf[4096];
        static const char *const names[] = { "root-cpu.stat", "slice-cpu.stat" };

        for (size_t g = 0; g < ELEMENTSOF(guests); g++)
                for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                        size_t len = slurp(guests[g], names[k], buf, sizeof buf);
                        uint64_t usage = 0, periods, throttled, throttled_us;
                        int r;

                        assert_unparsed(UNPARSED_CPU_STAT, 0,
                                        assert_int_equal(cgroup_usage_parse_cpu_stat(buf, len, &usage), 0));
                        assert_true(usage > 0);
                        /* The throttling lines only where the cpu controller is on. */
                        assert_unparsed(UNPARSED_CPU_STAT, 0,
                                        r = limits_parse_cpu_stat(buf, len, &periods, &throttled, &throttled_us));
                        assert_int_equal(r, strstr(buf, "nr_throttled") ? 0 : -ENOENT);
                }
}

static void test_pressure(void **state) {
        static char buf[4096];
        static const char *const names[] = { "pressure-cpu",       "pressure-memory",       "pressure-io",
                                             "slice-cpu.pressure", "slice-memory.pressure", "slice-io.pressure" };

        for (size_t g = 0; g < ELEMENTSOF(guests); g++)
                for (size_t k = 0; k < ELEMENTSOF(names); k++) {
                        size_t len = slurp(guests[g], names[k], buf, sizeof buf);
                        PressureStats p = {};

                        assert_unparsed(UNPARSED_PRESSURE, 0, assert_int_equal(pressure_parse_buf(buf, len, &p), 0));
                        assert_true(p.has[PSI_STALL_SOME] && p.has[PSI_STALL_FULL]);
                }
}

static void test_diskstats(void **state) {
        static char buf[65536];
        static DiskStats d;

        for (size_t g = 0; g < ELEMENTSOF(guests); g++) {
                size_t len = slurp(guests[g], "diskstats", buf, sizeof buf);
                bool vda = false;

                assert_unparsed(UNPARSED_DISKSTATS, 0, assert_int_equal(diskstats_parse(buf, len, &d), 0));
                for (size_t i = 0; i < d.n; i++)
                        vda |= strcmp(d.disks[i].name, "vda") == 0 && d.disks[i].wios > 0;
                assert_true(vda);
                assert_int_equal(d.n + d.dropped, lines_starting(buf, "")); /* every line a device */
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_io_stat),  cmocka_unit_test(test_memory),    cmocka_unit_test(test_cpu_stat),
                cmocka_unit_test(test_pressure), cmocka_unit_test(test_diskstats),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
