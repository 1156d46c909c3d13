/* SPDX-License-Identifier: MIT */
/* Integration helper: a process as a TGID query sees it, and as the sum of per-thread queries of
 * the threads alive now (probes/taskstats.c on the real kernel):
 *
 *   probe-taskstats PID
 *
 * prints "tgid <cpu_delay_ns> <cpu_run_ns>" and then "tid <tid> <cpu_delay_ns> <cpu_run_ns>" for
 * each thread listed in /proc/PID/task that answered. Exit 1 with "error <errno name>" when the
 * TGID query fails. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/taskstats.h"

int main(int argc, char **argv) {
        TaskstatsSource *s = NULL;
        TaskStats ts;
        char path[64];
        DIR *d;
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: %s PID\n", argv[0]);
                return 2;
        }
        pid_t pid = (pid_t) atoi(argv[1]);
        r = taskstats_netlink_new(&s);
        if (r >= 0)
                r = taskstats_get_tgid(s, pid, &ts);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                taskstats_source_free(s);
                return 1;
        }
        printf("tgid %llu %llu\n", (unsigned long long) ts.delay_ns[TASK_DELAY_CPU],
               (unsigned long long) ts.cpu_run_ns);
        snprintf(path, sizeof path, "/proc/%d/task", (int) pid);
        d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
                pid_t tid = (pid_t) atoi(e->d_name);
                if (tid > 0 && taskstats_get_tid(s, tid, &ts) >= 0)
                        printf("tid %d %llu %llu\n", (int) tid, (unsigned long long) ts.delay_ns[TASK_DELAY_CPU],
                               (unsigned long long) ts.cpu_run_ns);
        }
        if (d)
                closedir(d);
        taskstats_source_free(s);
        return 0;
}
