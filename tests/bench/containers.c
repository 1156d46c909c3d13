/* SPDX-License-Identifier: MIT */
/* psidiag-bench-containers DIR: what naming containers adds to an incident (containers/containers.h).
 * Makes a root under DIR with 16 docker containers' config.v2.json (each shaped as
 * tests/fixtures/containers/docker's, 4 KiB) and a podman containers.json of 200 containers, then
 * times the lookups of one incident that names 16 containers (the 2 x top processes and the
 * cgroups of a busy node): cold (a new cache: every container's files read and parsed) and warm
 * (the same cache again: nothing read), for docker and for podman, each the median of 200 runs.
 * Prints "docker_cold_us docker_warm_us podman_cold_us podman_warm_us". The files stay in the page
 * cache: cold is the cache's miss, not the disk's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "containers/containers.h"

#define N 16
#define PODMAN_ENTRIES 200
#define RUNS 200

/* DIR/cgroup: the containers' cgroups, as their runtimes make them, whose owners each first lookup
 * checks (containers/ctrverify.h). */
static int cg_fd = -1;

static void mkdirs(const char *path) {
        char p[4096];

        snprintf(p, sizeof p, "%s", path);
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = '\0';
                        (void) mkdir(p, 0755);
                        *s = '/';
                }
        (void) mkdir(p, 0755);
}

static void put(const char *path, const char *s) {
        FILE *f = fopen(path, "we");

        if (!f || fputs(s, f) < 0 || fclose(f) != 0) {
                perror(path);
                exit(1);
        }
}

static double now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

/* The median time of one incident's N lookups of paths, in a new cache (cold) or one already
 * holding them (warm). */
static double incident_us(int root_fd, char paths[N][160], bool warm) {
        double t[RUNS];
        ContainerCache *c = NULL;

        if (warm && container_cache_new(root_fd, -1, cg_fd, CONTAINER_CACHE_MAX, &c) < 0)
                exit(1);
        for (int k = 0; k < N && warm; k++)
                (void) container_cache_lookup(c, paths[k]);
        for (int r = 0; r < RUNS; r++) {
                double t0;
                if (!warm) {
                        c = container_cache_free(c);
                        if (container_cache_new(root_fd, -1, cg_fd, CONTAINER_CACHE_MAX, &c) < 0)
                                exit(1);
                }
                t0 = now_us();
                for (int k = 0; k < N; k++)
                        if (!container_cache_lookup(c, paths[k])->name[0])
                                exit(2);
                container_cache_done(c);
                t[r] = now_us() - t0;
        }
        container_cache_free(c);
        qsort(t, RUNS, sizeof t[0], cmp);
        return t[RUNS / 2];
}

int main(int argc, char **argv) {
        static char docker[N][160], podman[N][160], buf[8192], path[4096];
        char *json;
        size_t len = 0, size = (size_t) PODMAN_ENTRIES * 1024;
        int root_fd;

        if (argc != 2) {
                fprintf(stderr, "usage: %s DIR\n", argv[0]);
                return 2;
        }
        for (int k = 0; k < N; k++) {
                char id[65];
                snprintf(id, sizeof id, "%064x", 0xd0c4e700 + k);
                snprintf(path, sizeof path, "%s/var/lib/docker/containers/%s", argv[1], id);
                mkdirs(path);
                snprintf(buf, sizeof buf,
                         "{\"StreamConfig\":{},\"State\":{\"Running\":true,\"Pid\":4242},\"ID\":\"%s\","
                         "\"Path\":\"nginx\",\"Args\":[\"-g\",\"daemon off;\"],\"Config\":{\"Hostname\":\"x\","
                         "\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"],"
                         "\"Cmd\":[\"nginx\",\"-g\",\"daemon off;\"],\"Image\":\"nginx:1.25\",\"Labels\":{\"a\":\"b\"},"
                         "\"StopSignal\":\"SIGQUIT\"},\"Image\":\"sha256:a875\",\"Name\":\"/"
                         "web-%d\",\"Driver\":\"overlay2\","
                         "\"MountPoints\":{},\"AppArmorProfile\":\"docker-default\",\"Pad\":\"%3000d\"}",
                         id, k, 0);
                snprintf(path + strlen(path), sizeof path - strlen(path), "/config.v2.json");
                put(path, buf);
                snprintf(docker[k], sizeof docker[k], "/system.slice/docker-%s.scope", id);
                snprintf(path, sizeof path, "%s/cgroup%s", argv[1], docker[k]);
                mkdirs(path);
        }
        json = malloc(size);
        if (!json)
                return 1;
        len += (size_t) snprintf(json, size, "[");
        for (int k = 0; k < PODMAN_ENTRIES; k++) {
                char id[65];
                snprintf(id, sizeof id, "%064x", 0xc259ab00 + k);
                len += (size_t) snprintf(
                        json + len, size - len,
                        "%s{\"id\":\"%s\",\"names\":[\"job-%d\"],\"image\":\"6b2d05e055991a8f\",\"layer\":"
                        "\"4474a9a7d99f\","
                        "\"metadata\":\"{\\\"image-name\\\":\\\"localhost/job:1\\\",\\\"image-id\\\":\\\"6b2d05e0\\\","
                        "\\\"name\\\":\\\"job-%d\\\",\\\"created-at\\\":1795768668}\",\"created\":\"2026-11-27T08:37:"
                        "48Z\","
                        "\"flags\":{\"MountLabel\":\"\",\"ProcessLabel\":\"\"}}",
                        k ? "," : "", id, k, k);
                /* the incident's containers: spread over the file */
                if (k % (PODMAN_ENTRIES / N) == 0 && k / (PODMAN_ENTRIES / N) < N) {
                        snprintf(podman[k / (PODMAN_ENTRIES / N)], sizeof podman[0], "/libpod_parent/libpod-%s", id);
                        snprintf(path, sizeof path, "%s/cgroup%s", argv[1], podman[k / (PODMAN_ENTRIES / N)]);
                        mkdirs(path);
                }
        }
        snprintf(json + len, size - len, "]");
        snprintf(path, sizeof path, "%s/var/lib/containers/storage/overlay-containers", argv[1]);
        mkdirs(path);
        snprintf(path + strlen(path), sizeof path - strlen(path), "/containers.json");
        put(path, json);
        free(json);

        root_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(path, sizeof path, "%s/cgroup", argv[1]);
        cg_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0 || cg_fd < 0) {
                perror(argv[1]);
                return 1;
        }
        printf("%.1f %.2f %.1f %.2f\n", incident_us(root_fd, docker, false), incident_us(root_fd, docker, true),
               incident_us(root_fd, podman, false), incident_us(root_fd, podman, true));
        close(root_fd);
        return 0;
}
