/* SPDX-License-Identifier: MIT */
/* The limit, io, /proc/<pid>/cgroup v1, wchan and stack parsers (probes/limits.h, limits-io.h,
 * limits-find.h, wchan.h), each fed the same bytes in an exactly sized buffer: they must read only
 * inside them, keep their outputs NUL-terminated and within their bounds, and leave an output
 * untouched when they fail. */
#include <stdlib.h>
#include <string.h>

#include "probes/limits-find.h"
#include "probes/wchan.h"
#include "tests/fuzz/fuzz.h"

static void check_string(const char *s, size_t size) {
        if (strnlen(s, size) == size)
                abort(); /* not NUL-terminated */
}

static void fuzz_io(const char *buf, size_t size) {
        static const IoV1File files[] = { IO_V1_SERVICE_BYTES, IO_V1_SERVICED,  IO_V1_READ_BPS,
                                          IO_V1_WRITE_BPS,     IO_V1_READ_IOPS, IO_V1_WRITE_IOPS };
        IoLimits io = {}, before;

        (void) limits_parse_io_stat(buf, size, &io);
        (void) limits_parse_io_max(buf, size, &io);
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
                (void) limits_parse_blkio(buf, size, files[i], &io);
        if (io.n_devices > LIMITS_IO_DEVICES_MAX)
                abort();
        before = io;
        /* A line it cannot read costs that line, never the file (kernel-facts.md: unknown-lines). */
        if (limits_parse_io_stat(buf, size, &io) != 0 || io.n_devices < before.n_devices)
                abort();
        IoLimits d;
        limits_io_delta(&before, &io, &d);
        if (d.n_devices != io.n_devices)
                abort();
        (void) limits_io_is_limited(&io);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = malloc(size ? size : 1);
        char out[64], sym[WCHAN_SYMBOL_MAX];
        uint64_t a, b, c;
        MemoryEvents e;
        MemoryLimits m = {};
        WchanStack st;

        if (!buf)
                return 0;
        memcpy(buf, data, size);
        (void) limits_parse_value(buf, size, &a);
        (void) limits_parse_cpu_max(buf, size, &a, &b);
        (void) limits_parse_cfs_quota(buf, size, &a);
        (void) limits_parse_cpu_stat(buf, size, &a, &b, &c);
        (void) limits_parse_memory_events(buf, size, &e);
        (void) limits_parse_memory_stat(buf, size, false, &m);
        (void) limits_parse_memory_stat(buf, size, true, &m);
        fuzz_io(buf, size);
        if (limits_parse_uevent_devname(buf, size, out, sizeof out) == 0)
                check_string(out, sizeof out);
        if (limits_parse_proc_cgroup_v1(buf, size, "cpu", out, sizeof out) == 0)
                check_string(out, sizeof out);
        if (wchan_parse_buf(buf, size, sym, sizeof sym) > 0)
                check_string(sym, sizeof sym);
        if (wchan_parse_stack_buf(buf, size, &st) == 0) {
                if (st.n_frames > WCHAN_STACK_FRAMES_MAX)
                        abort();
                for (size_t i = 0; i < st.n_frames; i++)
                        check_string(st.frames[i], sizeof st.frames[i]);
        }
        free(buf);
        return 0;
}
