/* SPDX-License-Identifier: MIT */
/* Workloads for the integration tests and benchmarks: spin (burn cpu), sleep (wake every 50 ms,
 * do a little work), park (block in pause(): many threads that cost nothing), and spin-exit
 * (spin, then exit after PSIDIAG_EXIT_MS milliseconds: a crashing worker), thrash and dio-read
 * (read the file PSIDIAG_FILE through the page cache, or with O_DIRECT), and alloc (touch 1 MiB
 * of anonymous memory every PSIDIAG_ALLOC_MS ms, 20 by default, until the OOM killer ends it or
 * it holds PSIDIAG_ALLOC_MAX_MB), and storm (children of COMM that spin 100 ms each and end, THREADS
 * of them at a time: a build's compilers), and writers (the same, each child writing, syncing and
 * removing a 4 MiB file in PSIDIAG_DIR: short writers).
 * tick (2 ms of work every 20 ms: a quiet service), blip (1 ms of cpu every 100 ms: a bursty worker),
 * burst (THREADS spinning together for PSIDIAG_BURST_MS every PSIDIAG_PERIOD_MS: a neighbour's spikes).
 * Usage: psidiag-workload spin|sleep|tick|blip|burst|park|spin-exit|thrash|dio-read|alloc|storm|writers [COMM
 * [THREADS]]. Runs until killed. COMM becomes the task's name (prctl), so tests can tell workloads apart, hostile names
 * included. */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static void *spin(void *arg) {
        for (;;)
                sink++;
        return NULL;
}

/* Spins until clock has advanced by ms. */
static void spin_for_ms(clockid_t clock, long ms) {
        struct timespec a, b;

        clock_gettime(clock, &a);
        do {
                sink++;
                clock_gettime(clock, &b);
        } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ms * 1000000L);
}

/* Spins for 50 ms of wall time and ends: a thread pool that grows and shrinks. */
static void *spin_50ms(void *arg) {
        spin_for_ms(CLOCK_MONOTONIC, 50);
        return NULL;
}

/* Keeps threads short-lived spinners alive, forever: each round starts them and waits for them. */
static void churn(int threads) {
        pthread_t t[64];

        if (threads < 1 || threads > 64)
                threads = 4;
        for (;;) {
                int n = 0;
                for (int i = 0; i < threads; i++)
                        n += pthread_create(&t[n], NULL, spin_50ms, NULL) == 0;
                for (int i = 0; i < n; i++)
                        pthread_join(t[i], NULL);
        }
}

static void *park(void *arg) {
        for (;;)
                pause();
        return NULL;
}

/* Reads a file over and over: in a cgroup whose memory limit is below the file's size, every
 * pass evicts what the next one needs (reclaim, then refaults: thrashing). */
static const char *thrash_file;

static void *thrash(void *arg) {
        static char buf[1 << 20];

        for (;;) {
                int fd = open(thrash_file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        _exit(3);
                while (read(fd, buf, sizeof buf) > 0)
                        sink++;
                close(fd);
        }
        return NULL;
}

/* O_DIRECT reads of a file, one 64 KiB block after another: every read waits for the disk (or
 * for a blkio throttle), which is io pressure and blkio delay. */
static void *dio_read(void *arg) {
        void *buf;

        if (posix_memalign(&buf, 4096, 65536) != 0)
                _exit(3);
        for (;;) {
                int fd = open(thrash_file, O_RDONLY | O_DIRECT | O_CLOEXEC);
                if (fd < 0)
                        _exit(3);
                while (read(fd, buf, 65536) > 0)
                        sink++;
                close(fd);
        }
        return NULL;
}

/* Anonymous memory, written so it is really charged, 1 MiB at a time; in a memory-limited cgroup
 * this ends with the OOM killer choosing us (the largest resident set). */
static void *alloc(void *arg) {
        const char *ms = getenv("PSIDIAG_ALLOC_MS"), *max = getenv("PSIDIAG_ALLOC_MAX_MB");
        struct timespec ts = { .tv_nsec = (ms ? atoi(ms) : 20) * 1000L * 1000L };
        long left = max ? atol(max) : -1;

        for (;; left--) {
                if (left == 0) { /* grown to PSIDIAG_ALLOC_MAX_MB: hold it */
                        pause();
                        continue;
                }
                char *p = malloc(1 << 20);
                if (!p)
                        _exit(4);
                memset(p, 0x5a, 1 << 20);
                nanosleep(&ts, NULL);
        }
        return NULL;
}

static void *nap(void *arg) {
        struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };

        for (;;) {
                for (int i = 0; i < 100000; i++)
                        sink++;
                nanosleep(&ts, NULL);
        }
        return NULL;
}

/* 2 ms of work every 20 ms: a quiet service. Three of them on two cpus sometimes wait for each
 * other, a little new cpu stall every second or so. */
static void *tick(void *arg) {
        struct timespec ts = { .tv_nsec = 20 * 1000 * 1000 };

        for (;;) {
                spin_for_ms(CLOCK_MONOTONIC, 2);
                nanosleep(&ts, NULL);
        }
        return NULL;
}

/* 1 ms of cpu every 100 ms: a bursty worker that a hundred of share two cpus without a stall of
 * their own, and that waits at once when something else takes the cpus (a node-wide storm). */
static void *blip(void *arg) {
        struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };

        for (;;) {
                spin_for_ms(CLOCK_THREAD_CPUTIME_ID, 1);
                nanosleep(&ts, NULL);
        }
        return NULL;
}

/* A neighbour that bursts: every thread spins PSIDIAG_BURST_MS (500) of wall time at each multiple
 * of PSIDIAG_PERIOD_MS (8000) of the monotonic clock, all together, and sleeps between. */
static long burst_ms, period_ms;
static void *burst(void *arg) {
        struct timespec now, next;

        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                long long ms = (now.tv_sec * 1000LL + now.tv_nsec / 1000000) / period_ms * period_ms + period_ms;
                next.tv_sec = ms / 1000;
                next.tv_nsec = ms % 1000 * 1000000;
                while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) != 0)
                        ;
                spin_for_ms(CLOCK_MONOTONIC, burst_ms);
        }
        return NULL;
}

/* PSIDIAG_WORKLOAD="MODE [COMM [THREADS]]" stands in for the arguments, so that a workload can be
 * started with a command line of its own ("/usr/lib/shop/api-worker --port 8080"), as the schema
 * examples are. */
static char **args_from_env(int *argc, char **argv) {
        static char *words[5];
        static char copy[256];
        const char *env = getenv("PSIDIAG_WORKLOAD");
        int n = 1;

        if (!env)
                return argv;
        snprintf(copy, sizeof copy, "%s", env);
        words[0] = argv[0];
        for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && n < 4; w = strtok_r(NULL, " ", &save))
                words[n++] = w;
        words[n] = NULL;
        *argc = n;
        return words;
}

/* What a storm's child does: spin for 100 ms of cpu, or (writers) write 4 MiB to a new file in
 * PSIDIAG_DIR, fsync it and remove it. */
static void storm_child(const char *comm, bool writer) {
        if (comm)
                prctl(PR_SET_NAME, comm, 0, 0, 0);
        if (writer) {
                static char buf[1 << 20];
                char path[4096];
                const char *dir = getenv("PSIDIAG_DIR");
                int fd;

                snprintf(path, sizeof path, "%s/w.%d", dir ? dir : "/var/tmp", (int) getpid());
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0)
                        _exit(3);
                memset(buf, 0x5a, sizeof buf);
                for (int i = 0; i < 4; i++)
                        if (write(fd, buf, sizeof buf) != (ssize_t) sizeof buf)
                                _exit(3);
                fsync(fd);
                close(fd);
                unlink(path);
                _exit(0);
        }
        spin_for_ms(CLOCK_PROCESS_CPUTIME_ID, 100); /* 100 ms of cpu, however busy the node */
        _exit(0);
}

/* A fork storm, as a build runs compilers: forever, `threads` children at a time, each named comm,
 * spinning for 100 ms and ending (writers: writing 4 MiB each). With PSIDIAG_STORM_VIA=NAME each
 * child is a short-lived NAME that runs the named one and waits for it (make -> gcc -> cc1), and
 * the storm itself is named PSIDIAG_STORM_PARENT when set. */
static void storm(int children, const char *comm, bool writer) {
        const char *via = getenv("PSIDIAG_STORM_VIA"), *parent = getenv("PSIDIAG_STORM_PARENT");
        pid_t pid;

        if (parent)
                prctl(PR_SET_NAME, parent, 0, 0, 0);
        for (int i = 0; i < children; i++)
                if (fork() == 0)
                        goto child;
        for (;;) {
                int status;
                if (wait(&status) < 0)
                        return;
                if (fork() == 0)
                        goto child;
        }
child:
        if (!via)
                storm_child(comm, writer);
        prctl(PR_SET_NAME, via, 0, 0, 0);
        pid = fork();
        if (pid == 0)
                storm_child(comm, writer);
        _exit(pid > 0 && waitpid(pid, NULL, 0) == pid ? 0 : 3);
}

int main(int argc, char **argv) {
        void *(*fn)(void *);
        argv = args_from_env(&argc, argv);
        int threads = argc > 3 ? atoi(argv[3]) : 1;

        if (argc < 2) {
                fprintf(stderr,
                        "usage: %s spin|sleep|tick|blip|burst|park|churn|storm|writers|spin-exit|thrash|dio-read|alloc "
                        "[COMM "
                        "[THREADS]]\n",
                        argv[0]);
                return 2;
        }
        if (strcmp(argv[1], "spin") == 0)
                fn = spin;
        else if (strcmp(argv[1], "sleep") == 0)
                fn = nap;
        else if (strcmp(argv[1], "tick") == 0)
                fn = tick;
        else if (strcmp(argv[1], "blip") == 0)
                fn = blip;
        else if (strcmp(argv[1], "burst") == 0) {
                burst_ms = getenv("PSIDIAG_BURST_MS") ? atol(getenv("PSIDIAG_BURST_MS")) : 500;
                period_ms = getenv("PSIDIAG_PERIOD_MS") ? atol(getenv("PSIDIAG_PERIOD_MS")) : 8000;
                if (burst_ms <= 0 || period_ms <= burst_ms) {
                        fprintf(stderr, "burst needs 0 < PSIDIAG_BURST_MS < PSIDIAG_PERIOD_MS\n");
                        return 2;
                }
                fn = burst;
        } else if (strcmp(argv[1], "park") == 0)
                fn = park;
        else if (strcmp(argv[1], "alloc") == 0)
                fn = alloc;
        else if (strcmp(argv[1], "thrash") == 0 || strcmp(argv[1], "dio-read") == 0) {
                thrash_file = getenv("PSIDIAG_FILE");
                if (!thrash_file) {
                        fprintf(stderr, "%s needs PSIDIAG_FILE\n", argv[1]);
                        return 2;
                }
                fn = argv[1][0] == 't' ? thrash : dio_read;
        } else if (strcmp(argv[1], "storm") == 0 || strcmp(argv[1], "writers") == 0) {
                storm(threads, argc > 2 ? argv[2] : NULL, argv[1][0] == 'w');
                return 0;
        } else if (strcmp(argv[1], "churn") == 0) {
                if (argc > 2)
                        prctl(PR_SET_NAME, argv[2], 0, 0, 0);
                churn(threads);
                return 0;
        } else if (strcmp(argv[1], "spin-exit") == 0) {
                const char *ms = getenv("PSIDIAG_EXIT_MS");
                fn = spin;
                /* SIGALRM's default action ends the process: a worker that dies mid-sample. */
                struct itimerval it = { .it_value = { .tv_sec = (ms ? atoi(ms) : 1000) / 1000,
                                                      .tv_usec = (ms ? atoi(ms) : 1000) % 1000 * 1000 } };
                setitimer(ITIMER_REAL, &it, NULL);
        } else {
                fprintf(stderr,
                        "usage: %s spin|sleep|tick|blip|burst|park|churn|storm|writers|spin-exit|thrash|dio-read|alloc "
                        "[COMM "
                        "[THREADS]]\n",
                        argv[0]);
                return 2;
        }
        if (argc > 2)
                prctl(PR_SET_NAME, argv[2], 0, 0, 0);
        /* Small stacks: a benchmark parks 10,000 threads in one process. */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        for (int i = 1; i < threads; i++) {
                pthread_t t;
                if (pthread_create(&t, &attr, fn, NULL) != 0) {
                        fprintf(stderr, "thread %d: cannot create\n", i);
                        return 1;
                }
        }
        pthread_attr_destroy(&attr);
        fn(NULL);
        return 0;
}
