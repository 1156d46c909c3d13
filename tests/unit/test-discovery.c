/* SPDX-License-Identifier: MIT */
/* Discovery of watches by container name (agent/discovery.c) on a fake tree: the hybrid fixture's
 * cgroup2 mount with podman's container cgroups in it, and podman's files
 * (tests/fixtures/containers/podman: rootful "names-probe1", rootless "batch" of alice). Each
 * container's cpu.pressure is a FIFO, so that a trigger "armed" on it is written and polled as on
 * the kernel's file (and never fires). A container present at start is armed for the watches whose
 * globs it matches, and only those; its conmon never; one that appears later is armed when inotify
 * says so; one removed is disarmed; a reload forgets what was judged. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/discovery.h"
#include "agent/watch.h"
#include "tests/unit/fake-taskstats.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

#define PODMAN "c259ab325826b8b00d41a77c5935548283afad4f39d1379691811634296c0bc7"
#define ROOTLESS "7007ee01a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d"
#define CG "sys/fs/cgroup/unified/"
#define ROOTFUL_SCOPE "machine.slice/libpod-" PODMAN ".scope"
#define CONMON_SCOPE "machine.slice/libpod-conmon-" PODMAN ".scope"
#define ROOTLESS_SCOPE "user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope"
/* A user's spoofs of them (containers/ctrverify.h): root's systemd instance nested in uid 1000's own,
 * and uid 1000's in uid 1001's, each cgroup made by the user who owns the outer one. */
#define SPOOF_ROOTFUL "user.slice/user-1000.slice/user@1000.service/user.slice/user@0.service/libpod-" PODMAN ".scope"
#define U1001 "user.slice/user-1001.slice/user@1001.service"
#define SPOOF_ROOTLESS U1001 "/user.slice/user@1000.service/user.slice/libpod-" ROOTLESS ".scope"

typedef struct Env {
        char dir[64], out[96];
        FakeTask tasks[1];
        Agent a;
        Config *config;
} Env;

/* A container's cgroup, its cpu.pressure a FIFO. */
static void make_container(Env *env, const char *path) {
        char p[512];

        snprintf(p, sizeof p, "%s/" CG, env->dir);
        assert_int_equal(fake_tree_cgroup(p, path), 0);
        snprintf(p, sizeof p, "%s/" CG "%s/cpu.pressure", env->dir, path);
        assert_int_equal(mkfifo(p, 0600), 0);
}

static void remove_container(Env *env, const char *path) {
        char p[512];

        snprintf(p, sizeof p, "%s/" CG "%s/cpu.pressure", env->dir, path);
        assert_int_equal(unlink(p), 0);
        snprintf(p, sizeof p, "%s/" CG "%s", env->dir, path);
        assert_int_equal(rmdir(p), 0);
}

static void on_break(struct ev_loop *loop, ev_timer *timer, int revents) {
        ev_break(loop, EVBREAK_ALL);
}

/* Runs the loop for ms: inotify's events reach discovery. */
static void run_for(Env *env, unsigned ms) {
        ev_timer t;

        ev_timer_init(&t, on_break, ms / 1000.0, 0.);
        ev_now_update(env->a.loop);
        ev_timer_start(env->a.loop, &t);
        ev_run(env->a.loop, 0);
        ev_timer_stop(env->a.loop, &t);
}

/* The watch of config watch i on path, NULL when there is none. */
static Watch *find(Env *env, size_t i, const char *path) {
        return watch_find(&env->a, &env->config->watches[i], path);
}

static const char config_text[] =
        "{ \"output\": \"%s\", \"watch\": [\n"
        "  { \"container\": \"names-*\", \"triggers\": [\"cpu some 100ms 2s\"] },\n"
        "  { \"image\": \"docker.io/library/busybox*\", \"triggers\": [\"cpu some 200ms 2s\"] },\n"
        "  { \"pod\": \"payments/*\", \"triggers\": [\"cpu some 300ms 2s\"] } ] }";

static int setup(void **state) {
        static Env env;
        static const uint64_t calm[_TASK_DELAY_MAX] = { 1000000 };
        char cmd[512], text[1024], *error = NULL;
        Agent *a = &env.a;

        env = (Env) {
                .dir = "/tmp/psidiag-test-discovery-XXXXXX",
                .tasks = { { .tid = 100, .stats = fake_task_stats(100, 100, "web", calm) } },
        };
        assert_non_null(mkdtemp(env.dir));
        snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/.' '%s'", fixture("hybrid"), fixture("containers/podman"), env.dir);
        assert_int_equal(system(cmd), 0);
        snprintf(env.out, sizeof env.out, "%s/incidents.jsonl", env.dir);
        snprintf(text, sizeof text, config_text, env.out);
        assert_int_equal(config_parse(text, strlen(text), "t.json", &env.config, &error), 0);

        a->config = env.config;
        a->loop = ev_loop_new(EVFLAG_AUTO);
        assert_int_equal(sysroot_open(env.dir, &a->rt.sysroot), 0);
        assert_int_equal(
                container_cache_new(a->rt.sysroot->root_fd, -1, a->rt.sysroot->cgroup2_fd, 8, &a->rt.containers), 0);
        a->rt.taskstats = fake_taskstats_new(env.tasks, 1);
        a->rt.privileged = true;
        a->top_max = 10;
        a->procs = (ProcessInfoBuffer) { .items = calloc(20, sizeof(ProcessInfo)), .cap = 20 };
        assert_int_equal(closer_new(4, NULL, &a->closer), 0);
        assert_int_equal(psi_set_new(&a->psi), 0);
        fd_budget_init(&a->fds, 64, a->closer);
        assert_int_equal(discovery_start(a), 0);
        assert_true(discovery_follows_new_cgroups(a));
        *state = &env;
        return 0;
}

static int teardown(void **state) {
        Env *env = *state;
        Agent *a = &env->a;

        discovery_stop(a);
        while (a->n_watches > 0)
                watch_remove(a, a->watches[a->n_watches - 1]);
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_free(a->sinks[i]);
        free(a->sinks);
        free(a->watches);
        free(a->procs.items);
        counters_done(&a->counters);
        a->psi = psi_set_free(a->psi);
        a->closer = closer_free(a->closer);
        taskstats_source_free(a->rt.taskstats);
        a->rt.containers = container_cache_free(a->rt.containers);
        sysroot_free(a->rt.sysroot);
        ev_loop_destroy(a->loop);
        config_free(env->config);
        assert_int_equal(fake_tree_remove(env->dir), 0);
        return 0;
}

/* At start: each container armed for the watches whose globs match it, with their triggers. */
static void test_at_start(void **state) {
        Env *env = *state;

        make_container(env, ROOTFUL_SCOPE);
        make_container(env, CONMON_SCOPE);
        make_container(env, ROOTLESS_SCOPE);
        discovery_run(&env->a);
        assert_int_equal(env->a.n_watches, 2);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
        assert_int_equal(find(env, 0, ROOTFUL_SCOPE)->n_triggers, 1);
        assert_non_null(find(env, 1, ROOTLESS_SCOPE));
        assert_null(find(env, 0, CONMON_SCOPE));
        assert_null(find(env, 1, ROOTFUL_SCOPE)); /* its image is localhost/psidiag-names-bb:1 */
        assert_int_equal(env->a.armed, 2);
        /* Again: nothing new, nothing armed twice. */
        discovery_run(&env->a);
        assert_int_equal(env->a.n_watches, 2);
        assert_int_equal(env->a.armed, 2);
}

/* Cgroups that claim a container's id below a user's delegated subtree arm no watch by name,
 * while the real containers beside them are armed. */
static void test_spoof_never_armed(void **state) {
        Env *env = *state;

        if (geteuid() != 0)
                skip(); /* the spoofs' cgroups are the users' (chown) */
        make_container(env, SPOOF_ROOTFUL);
        make_container(env, SPOOF_ROOTLESS);
        make_container(env, ROOTFUL_SCOPE);
        make_container(env, ROOTLESS_SCOPE);
        discovery_run(&env->a);
        assert_null(find(env, 0, SPOOF_ROOTFUL));
        assert_null(find(env, 1, SPOOF_ROOTLESS));
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
        assert_non_null(find(env, 1, ROOTLESS_SCOPE));
        assert_int_equal(env->a.n_watches, 2);
        discovery_run(&env->a);
        assert_int_equal(env->a.n_watches, 2);
}

/* A container that starts later is armed when its cgroup appears; one that ends is disarmed. */
static void test_comes_and_goes(void **state) {
        Env *env = *state;

        assert_int_equal(fake_tree_mkdirs(env->dir, CG "machine.slice"), 0);
        discovery_run(&env->a);
        assert_int_equal(env->a.n_watches, 0);
        make_container(env, ROOTFUL_SCOPE);
        for (int i = 0; i < 50 && env->a.n_watches == 0; i++)
                run_for(env, 20);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
        assert_int_equal(env->a.n_watches, 1);

        /* A new slice, and a container in it at once: both seen by the walk its event starts. */
        make_container(env, ROOTLESS_SCOPE);
        for (int i = 0; i < 50 && env->a.n_watches == 1; i++)
                run_for(env, 20);
        assert_non_null(find(env, 1, ROOTLESS_SCOPE));

        remove_container(env, ROOTFUL_SCOPE);
        for (int i = 0; i < 50 && env->a.n_watches == 2; i++)
                run_for(env, 20);
        assert_null(find(env, 0, ROOTFUL_SCOPE));
        assert_int_equal(env->a.n_watches, 1);
        assert_int_equal(env->a.counters.cgroups_gone, 1);

        /* The same container started again (same id, same cgroup): judged and armed again. */
        make_container(env, ROOTFUL_SCOPE);
        for (int i = 0; i < 50 && env->a.n_watches == 1; i++)
                run_for(env, 20);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
}

/* A reload's new watches are judged afresh: what was judged against the old ones is forgotten. */
static void test_reload_forgets(void **state) {
        Env *env = *state;
        char text[1024], *error = NULL;
        Config *nc = NULL;

        make_container(env, ROOTFUL_SCOPE);
        discovery_run(&env->a);
        assert_int_equal(env->a.n_watches, 1);
        /* As reload_config() does with a config whose only watch selects by image. */
        snprintf(text, sizeof text,
                 "{ \"output\": \"%s\", \"watch\": [ { \"image\": \"localhost/psidiag-names-*\", \"triggers\": "
                 "[\"cpu some 100ms 2s\"] } ] }",
                 env->out);
        assert_int_equal(config_parse(text, strlen(text), "t.json", &nc, &error), 0);
        while (env->a.n_watches > 0)
                watch_remove(&env->a, env->a.watches[0]);
        env->a.config = nc;
        discovery_take_warned(&env->a, calloc(1, sizeof(bool)));
        config_free(env->config);
        env->config = nc;
        discovery_run(&env->a);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
}

/* A new limit, as a reload's config would set it. */
static void set_limit(Env *env, unsigned max) {
        env->config->max_dir_watches = max;
        discovery_take_warned(&env->a, calloc(env->config->n_watches, sizeof(bool)));
}

/* Directories where containers may appear, more than the limit: as many watched as it allows, the
 * rest counted, and the containers found by the walk armed all the same; a directory that goes
 * frees its watch for one refused before. */
static void test_watch_limit(void **state) {
        Env *env = *state;
        Agent *a = &env->a;
        char p[256];

        set_limit(env, 16);
        assert_int_equal(a->counters.dir_watch_limit, 16);
        for (int i = 0; i < 40; i++) {
                snprintf(p, sizeof p, CG "many/d%d", i);
                assert_int_equal(fake_tree_mkdirs(env->dir, p), 0);
        }
        make_container(env, ROOTFUL_SCOPE);
        discovery_run(a);
        assert_int_equal(a->counters.dir_watches, 16);
        assert_true(a->counters.dir_watches_refused >= 25);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
        assert_int_equal(a->counters.discovery_walks, 1);
        /* Again: the same directories, nothing watched twice, the same refused again. */
        uint64_t refused = a->counters.dir_watches_refused;
        discovery_run(a);
        assert_int_equal(a->counters.dir_watches, 16);
        assert_int_equal(a->counters.dir_watches_refused, 2 * refused);
        /* Twenty of them go: the watches of those that were watched are freed, and taken by
         * directories refused before, without a change where they are. */
        for (int i = 0; i < 20; i++) {
                snprintf(p, sizeof p, "%s/" CG "many/d%d", env->dir, i);
                assert_int_equal(rmdir(p), 0);
        }
        uint64_t walks = a->counters.discovery_walks;
        for (int i = 0; i < 100 && a->counters.discovery_walks == walks; i++)
                run_for(env, 20);
        assert_int_equal(a->counters.dir_watches, 16);
}

/* A cgroup made in a watched parent is walked alone: a container appearing beside 40 directories
 * the limit left unwatched is armed, and they are not walked again (their refusals not counted
 * again, as a walk of the whole tree counts them). */
static void test_burst_walks_what_it_made(void **state) {
        Env *env = *state;
        Agent *a = &env->a;
        char p[256];

        assert_int_equal(fake_tree_mkdirs(env->dir, CG "machine.slice"), 0);
        discovery_run(a);
        set_limit(env, (unsigned) a->counters.dir_watches);
        for (int i = 0; i < 40; i++) {
                snprintf(p, sizeof p, CG "many/d%d", i);
                assert_int_equal(fake_tree_mkdirs(env->dir, p), 0);
        }
        discovery_run(a);
        assert_int_equal(a->counters.dir_watches_refused, 41);
        /* The events of their making: "many" made in the root, walked alone (41 again). */
        for (int i = 0; i < 50 && a->counters.dir_watches_refused == 41; i++)
                run_for(env, 20);
        run_for(env, 50);
        uint64_t refused = a->counters.dir_watches_refused, walks = a->counters.discovery_walks;
        assert_int_equal(refused, 82);
        make_container(env, ROOTFUL_SCOPE);
        for (int i = 0; i < 50 && a->n_watches == 0; i++)
                run_for(env, 20);
        assert_non_null(find(env, 0, ROOTFUL_SCOPE));
        assert_true(a->counters.discovery_walks > walks);
        assert_int_equal(a->counters.dir_watches_refused, refused);
}

/* A user's directories take at most their share: with a limit of 64, four of uid 12345's (as a
 * delegated cgroup's owner makes them) and none of their subdirectories; root's are watched
 * beyond them. Needs root, to chown. */
static void test_user_share(void **state) {
        Env *env = *state;
        Agent *a = &env->a;
        char p[256];

        if (geteuid() != 0)
                skip();
        set_limit(env, 64);
        for (int i = 0; i < 30; i++) {
                snprintf(p, sizeof p, CG "delegated/d%d/below", i);
                assert_int_equal(fake_tree_mkdirs(env->dir, p), 0);
                snprintf(p, sizeof p, "%s/" CG "delegated/d%d", env->dir, i);
                assert_int_equal(chown(p, 12345, 12345), 0);
                strcat(p, "/below");
                assert_int_equal(chown(p, 12345, 12345), 0);
        }
        for (int i = 0; i < 20; i++) {
                snprintf(p, sizeof p, CG "rootful/d%d", i);
                assert_int_equal(fake_tree_mkdirs(env->dir, p), 0);
        }
        discovery_run(a);
        size_t root_dirs = a->counters.dir_watches;
        /* 4 of uid 12345's taken; the other 26 refused, and their subdirectories never looked at
         * (those of the 4 taken are, and refused when the share is full) */
        assert_in_range(a->counters.dir_watches_refused, 26, 30);
        assert_true(root_dirs >= 4 + 20 + 2);
        set_limit(env, 2048);
        discovery_run(a);
        /* a share of 128: all 60 of theirs */
        assert_int_equal(a->counters.dir_watches, root_dirs - 4 + 60);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_at_start, setup, teardown),
                cmocka_unit_test_setup_teardown(test_spoof_never_armed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_comes_and_goes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reload_forgets, setup, teardown),
                cmocka_unit_test_setup_teardown(test_watch_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_burst_walks_what_it_made, setup, teardown),
                cmocka_unit_test_setup_teardown(test_user_share, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
