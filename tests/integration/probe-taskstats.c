/* SPDX-License-Identifier: MIT */
/* Integration helper: a process as a TGID query sees it, and as the sum of per-thread queries of
 * the threads alive now (probes/taskstats.c on the real kernel):
 *
 *   probe-taskstats PID
 *
 * prints "tgid <cpu_delay_ns> <cpu_run_ns>" and then "tid <tid> <cpu_delay_ns> <cpu_run_ns>
 * <version> <cpu_max_ns> <cpu_max_ts_ns>" for each thread listed in /proc/PID/task that answered,
 * the last two "-" when the reply has no such field (kernel-facts.md: delay-maxima). Exit 1 with "error <errno name>"
 * when the TGID query fails.
 *
 *   probe-taskstats --exit PID [THREADS]
 *
 * listens for exit records on every online cpu, prints "ready", then for each record of process
 * PID "thread <tid> <version> <cpu_delay_ns> <cpu_run_ns>", and "process <version> <cpu_delay_ns>
 * <cpu_run_ns> <ppid>" for its AGGR_TGID record; once it has that and THREADS thread records (0:
 * none needed) it exits 0 (1 after 30 s without the process's). */
#include <dirent.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/taskstats.h"

/* The field as a number, or "-" when the payload lacks it. */
static const char *field(char *buf, size_t size, uint32_t present, uint64_t value) {
        if (!(present & TASK_DELAY_MASK(TASK_DELAY_CPU)))
                return "-";
        snprintf(buf, size, "%llu", (unsigned long long) value);
        return buf;
}

typedef struct Heard {
        pid_t pid;
        bool process;
        unsigned threads;
} Heard;

static void on_exit_record(const TaskStats *thread, const TaskStats *process, void *userdata) {
        Heard *h = userdata;

        if (thread->tgid != h->pid)
                return;
        h->threads++;
        printf("thread %d %u %llu %llu\n", (int) thread->pid, thread->version,
               (unsigned long long) thread->delay_ns[TASK_DELAY_CPU], (unsigned long long) thread->cpu_run_ns);
        if (process) {
                printf("process %u %llu %llu %d\n", process->version,
                       (unsigned long long) process->delay_ns[TASK_DELAY_CPU], (unsigned long long) process->cpu_run_ns,
                       (int) process->ppid);
                h->process = true;
        }
}

/* Until the process's AGGR_TGID record and at least threads thread records were heard (the kernel
 * can send another thread's record after the process's: kernel-facts.md: exit-records-order), or
 * 30 s. */
static int listen_exit(pid_t pid, unsigned threads) {
        TaskstatsExitListener *l = NULL;
        char cpus[256] = "0";
        FILE *f = fopen("/sys/devices/system/cpu/online", "re");
        Heard h = { .pid = pid };
        unsigned lost = 0;
        int r;

        if (f) {
                if (fgets(cpus, sizeof cpus, f))
                        cpus[strcspn(cpus, "\n")] = 0;
                fclose(f);
        }
        r = taskstats_exit_listener_new(cpus, &l);
        if (r < 0) {
                printf("error %s\n", strerrorname_np(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        for (int waited = 0; (!h.process || h.threads < threads) && waited < 300; waited++) {
                struct pollfd p = { .fd = taskstats_exit_listener_fd(l), .events = POLLIN };
                if (poll(&p, 1, 100) > 0 && taskstats_exit_listener_drain(l, 0, on_exit_record, &h, &lost) < 0)
                        break;
        }
        fflush(stdout);
        taskstats_exit_listener_free(l);
        return h.process ? 0 : 1;
}

int main(int argc, char **argv) {
        TaskstatsSource *s = NULL;
        TaskStats ts;
        char path[64];
        DIR *d;
        int r;

        /* Whether the kernel takes an exit listener for a cpu list: "ok", or its refusal. */
        if (argc == 3 && strcmp(argv[1], "--register") == 0) {
                TaskstatsExitListener *l = NULL;
                r = taskstats_exit_listener_new(argv[2], &l);
                taskstats_exit_listener_free(l);
                printf(r < 0 ? "error %s\n" : "ok\n", r < 0 ? strerrorname_np(-r) : "");
                return r < 0;
        }
        if ((argc == 3 || argc == 4) && strcmp(argv[1], "--exit") == 0)
                return listen_exit((pid_t) atoi(argv[2]), argc == 4 ? (unsigned) atoi(argv[3]) : 0);
        if (argc != 2) {
                fprintf(stderr, "usage: %s [--exit] PID [THREADS] | --register CPUS\n", argv[0]);
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
                char max[32], max_ts[32];

                if (tid > 0 && taskstats_get_tid(s, tid, &ts) >= 0)
                        printf("tid %d %llu %llu %u %s %s\n", (int) tid,
                               (unsigned long long) ts.delay_ns[TASK_DELAY_CPU], (unsigned long long) ts.cpu_run_ns,
                               ts.version, field(max, sizeof max, ts.max_present, ts.max_ns[TASK_DELAY_CPU]),
                               field(max_ts, sizeof max_ts, ts.max_ts_present, ts.max_ts_ns[TASK_DELAY_CPU]));
        }
        if (d)
                closedir(d);
        taskstats_source_free(s);
        return 0;
}
