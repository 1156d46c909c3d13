/* SPDX-License-Identifier: MIT */
/* Integration helper: the threads of a live process two ways through probes/tasks.c, a listing of
 * /proc/<pid>/task and proc_task_nth() seeking it to each entry. Prints "procfs 0|1", "listed
 * TID...", "nth K:TID..." (last to first, then one past the last), "end K ERRNO-NAME" for the
 * first k that failed, and "asc K:TID..." (first to last, each seek where the last read stopped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/sysroot.h"
#include "probes/tasks.h"

int main(int argc, char **argv) {
        Sysroot *sys = NULL;
        TidList l = {};
        int task_fd = -1, r;
        pid_t pid;

        if (argc != 2 || (pid = (pid_t) atoi(argv[1])) <= 0) {
                fprintf(stderr, "usage: %s PID\n", argv[0]);
                return 2;
        }
        r = sysroot_open("/", &sys);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        printf("procfs %d\n", sys->proc_is_procfs);
        r = proc_open_process_threads(sys->proc_fd, pid, &l, &task_fd);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        printf("listed");
        for (size_t k = 0; k < l.n; k++)
                printf(" %d", (int) l.tids[k]);
        printf("\nnth");
        /* Out of order, so each seek really moves: last to first, then the end. */
        for (size_t i = 0; i <= l.n; i++) {
                size_t k = i < l.n ? l.n - 1 - i : l.n;
                pid_t tid;

                r = proc_task_nth(task_fd, k, &tid);
                if (r < 0) {
                        printf("\nend %zu %s", k, strerrorname_np(-r));
                        break;
                }
                printf(" %zu:%d", k, (int) tid);
        }
        /* Then first to last: each seek lands where the last read stopped. */
        printf("\nasc");
        for (size_t k = 0; k < l.n; k++) {
                pid_t tid;

                r = proc_task_nth(task_fd, k, &tid);
                if (r < 0) {
                        printf(" %zu:%s", k, strerrorname_np(-r));
                        continue;
                }
                printf(" %zu:%d", k, (int) tid);
        }
        printf("\n");
        close(task_fd);
        tid_list_done(&l);
        sysroot_free(sys);
        return 0;
}
