/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test-util.h"
#include "probes/pressure.h"

static int parse(const char *s, PressureStats *ps) {
        return pressure_parse_buf(s, strlen(s), ps);
}

static void test_some_and_full(void **state) {
        PressureStats ps;

        assert_int_equal(parse("some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551615\n",
                               &ps),
                         0);
        assert_true(ps.has[PSI_STALL_SOME] && ps.has[PSI_STALL_FULL]);
        assert_int_equal(ps.line[PSI_STALL_SOME].total_us, 123456);
        assert_true(ps.line[PSI_STALL_SOME].avg10 == 1.5);
        assert_true(ps.line[PSI_STALL_SOME].avg300 == 0.1);
        assert_true(ps.line[PSI_STALL_FULL].total_us == UINT64_MAX);
}

static void test_some_only_and_full_only(void **state) {
        PressureStats ps;

        /* Kernels before 5.13 have no "full" line for cpu; irq has only "full". */
        assert_int_equal(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=5", &ps), 0);
        assert_true(ps.has[PSI_STALL_SOME]);
        assert_false(ps.has[PSI_STALL_FULL]);
        assert_int_equal(parse("full avg10=0.00 avg60=0.00 avg300=0.00 total=9\n", &ps), 0);
        assert_false(ps.has[PSI_STALL_SOME]);
        assert_int_equal(ps.line[PSI_STALL_FULL].total_us, 9);
}

static void test_forward_compatible(void **state) {
        PressureStats ps;

        /* An unknown key is passed over; a line of an unknown kind costs that line. */
        assert_unparsed(UNPARSED_PRESSURE, 1,
                        assert_int_equal(parse("some avg10=1.00 avg60=2.00 avg300=3.00 total=7 avg1=9.99\n"
                                               "peak avg10=1 total=1\n",
                                               &ps),
                                         0));
        assert_int_equal(ps.line[PSI_STALL_SOME].total_us, 7);
        assert_false(ps.has[PSI_STALL_FULL]);
}

static void test_malformed(void **state) {
        static const char *const bad[] = {
                "some avg10=1.00 avg60=2.00 avg300=3.00\n",
                "some avg10=x avg60=2.00 avg300=3.00 total=1\n",
                "some avg10=1.00 total=-1\n",
                "some avg10=1.00 total=99999999999999999999999\n",
                "some avg10=1.00 total\n",
                "some avg10=-1.00 total=1\n",
        };
        PressureStats ps;
        char buf[256];

        assert_unparsed(UNPARSED_PRESSURE, 0, assert_int_equal(parse("", &ps), -EINVAL));
        assert_unparsed(UNPARSED_PRESSURE, 1, assert_int_equal(parse("garbage\n", &ps), -EINVAL));
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                /* Alone: nothing read. */
                assert_unparsed(UNPARSED_PRESSURE, 1, assert_int_equal(parse(bad[i], &ps), -EINVAL));
                /* Beside a full line: it costs its own line, the full line is read. */
                snprintf(buf, sizeof buf, "%sfull avg10=0.00 avg60=0.00 avg300=0.00 total=42\n", bad[i]);
                assert_unparsed(UNPARSED_PRESSURE, 1, assert_int_equal(parse(buf, &ps), 0));
                assert_false(ps.has[PSI_STALL_SOME]);
                assert_true(ps.has[PSI_STALL_FULL]);
                assert_int_equal(ps.line[PSI_STALL_FULL].total_us, 42);
        }
}

static void test_read_fixture(void **state) {
        PressureStats ps;
        int dfd = open(fixture("hybrid/proc/pressure"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);

        assert_true(dfd >= 0);
        assert_int_equal(pressure_read_at(dfd, pressure_file_name(PSI_RESOURCE_MEMORY, false), &ps), 0);
        assert_int_equal(ps.line[PSI_STALL_FULL].total_us, 6000000);
        assert_int_equal(pressure_read_at(dfd, "irq", &ps), -ENOENT);
        close(dfd);

        dfd = open(fixture("hybrid/sys/fs/cgroup/unified/app/web"), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(pressure_read_at(dfd, pressure_file_name(PSI_RESOURCE_CPU, true), &ps), 0);
        assert_int_equal(ps.line[PSI_STALL_SOME].total_us, 5000000);
        close(dfd);
}

static void test_read_fd_rereads_from_start(void **state) {
        PressureStats ps;
        int fd = open(fixture("hybrid/proc/pressure/io"), O_RDONLY | O_CLOEXEC);

        assert_true(fd >= 0);
        assert_int_equal(pressure_read_fd(fd, &ps), 0);
        assert_int_equal(pressure_read_fd(fd, &ps), 0);
        assert_int_equal(ps.line[PSI_STALL_SOME].total_us, 42);
        close(fd);
}

static void test_file_names(void **state) {
        assert_string_equal(pressure_file_name(PSI_RESOURCE_IO, true), "io.pressure");
        assert_string_equal(pressure_file_name(PSI_RESOURCE_IRQ, false), "irq");
        assert_null(pressure_file_name(_PSI_RESOURCE_MAX, false));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_some_and_full),      cmocka_unit_test(test_some_only_and_full_only),
                cmocka_unit_test(test_forward_compatible), cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_read_fixture),       cmocka_unit_test(test_read_fd_rereads_from_start),
                cmocka_unit_test(test_file_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
