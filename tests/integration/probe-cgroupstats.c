/* SPDX-License-Identifier: MIT */
/* Integration helper: asks the real kernel for CGROUPSTATS of a directory through the probe
 * (probes/taskstats.c) and prints "running sleeping stopped uninterruptible io_wait", or the error
 * as "error <errno name>" with exit 1. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probes/taskstats.h"

int main(int argc, char **argv) {
        TaskstatsSource *s = NULL;
        TaskStateCounts c;
        int fd, r;

        if (argc != 2) {
                fprintf(stderr, "usage: %s CGROUP-DIR\n", argv[0]);
                return 2;
        }
        r = taskstats_netlink_new(&s);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                perror(argv[1]);
                return 2;
        }
        r = taskstats_cgroupstats(s, fd, &c);
        close(fd);
        taskstats_source_free(s);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        printf("%llu %llu %llu %llu %lld\n", (unsigned long long) c.running, (unsigned long long) c.sleeping,
               (unsigned long long) c.stopped, (unsigned long long) c.uninterruptible, (long long) c.io_wait);
        return 0;
}
