/* SPDX-License-Identifier: MIT */
/* Integration helper: a cgroup's own counters as probes/cgusage.c reads them on the real kernel:
 *
 *   probe-cgusage CGROUP2-DIR [CPUACCT-DIR BLKIO-DIR MEMORY-DIR]
 *
 * ("-" for a v1 controller that is not there) prints "cpu_us read_bytes write_bytes memory_bytes",
 * "-" for a counter the cgroup does not have, or "error <errno name>" with exit 1. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probes/cgusage.h"

static int open_dir(const char *path) {
        return strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void print(bool has, unsigned long long v, const char *sep) {
        if (has)
                printf("%llu%s", v, sep);
        else
                printf("-%s", sep);
}

int main(int argc, char **argv) {
        CgroupUsage u = {};
        int r;

        if (argc != 2 && argc != 5) {
                fprintf(stderr, "usage: %s CGROUP2-DIR [CPUACCT-DIR BLKIO-DIR MEMORY-DIR]\n", argv[0]);
                return 2;
        }
        r = cgroup_usage_read_v2(open_dir(argv[1]), &u);
        if (r >= 0 && argc == 5)
                r = cgroup_usage_read_v1(open_dir(argv[2]), open_dir(argv[3]), open_dir(argv[4]), &u);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        print(u.has_cpu, u.cpu_us, " ");
        print(u.has_io, u.read_bytes, " ");
        print(u.has_io, u.write_bytes, " ");
        print(u.has_memory, u.memory_bytes, "\n");
        return 0;
}
