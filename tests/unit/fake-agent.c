/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/health.h"
#include "agent/oom.h"
#include "agent/pools.h"
#include "agent/recording.h"
#include "agent/stall.h"
#include "agent/watch.h"
#include "tests/unit/fake-agent.h"
#include "tests/unit/fake-tree.h"
#include "tests/unit/test-util.h"

void fake_agent_open(FakeAgent *f) {
        *f = (FakeAgent) { .dir = "/tmp/psidiag-test-agent-XXXXXX" };
        assert_int_equal(fake_tree_copy(f->dir, fixture("hybrid")), 0);
        snprintf(f->out, sizeof f->out, "%s/incidents.jsonl", f->dir);
        snprintf(f->out2, sizeof f->out2, "%s/other.jsonl", f->dir);
        snprintf(f->metrics, sizeof f->metrics, "%s/psidiag.prom", f->dir);
}

void fake_agent_start(FakeAgent *f, const char *config_json) {
        Agent *a = &f->a;
        char *error = NULL;

        assert_int_equal(config_parse(config_json, strlen(config_json), "t.json", &f->config, &error), 0);
        fake_host_open_calm(&f->host, f->dir);
        a->config = f->config;
        a->loop = ev_loop_new(EVFLAG_AUTO);
        a->rt.sysroot = f->host.sysroot;
        a->rt.taskstats = f->host.ts;
        a->top_max = 10;
        a->procs = (ProcessInfoBuffer) { .items = calloc(20, sizeof(ProcessInfo)), .cap = 20 };
        assert_int_equal(closer_new(4, NULL, &a->closer), 0);
        assert_int_equal(psi_set_new(&a->psi), 0);
        fd_budget_init(&a->fds, 64, a->closer);
        assert_int_equal(rate_limit_init(&a->rate, 0), 0);
        assert_int_equal(history_init(&a->history, 60 * USEC_PER_SEC), 0);
        assert_int_equal(health_start(a), 0);
        assert_int_equal(pools_start(a), 0);
        assert_int_equal(pools_onwhat_reserve(a, 1), 0);
        assert_int_equal(oom_start(a), 0);
        assert_int_equal(recording_start(a, stall_trigger_fired), 0);
}

void fake_agent_close(FakeAgent *f) {
        Agent *a = &f->a;

        recording_stop(a);
        oom_stop(a);
        while (a->n_watches > 0)
                watch_remove(a, a->watches[a->n_watches - 1]);
        pools_stop(a);
        health_stop(a);
        for (size_t i = 0; i < a->n_sinks; i++)
                sink_free(a->sinks[i]);
        free(a->sinks);
        free(a->watches);
        free(a->procs.items);
        history_done(&a->history);
        counters_done(&a->counters);
        rate_limit_done(&a->rate);
        a->psi = psi_set_free(a->psi);
        a->closer = closer_free(a->closer);
        fake_host_close(&f->host);
        ev_loop_destroy(a->loop);
        config_free(f->config);
        assert_int_equal(fake_tree_remove(f->dir), 0);
}

static void on_break(struct ev_loop *loop, ev_timer *timer, int revents) {
        ev_break(loop, EVBREAK_ALL);
}

void fake_agent_run_for(FakeAgent *f, unsigned ms) {
        ev_timer t;

        ev_timer_init(&t, on_break, ms / 1000.0, 0.);
        ev_now_update(f->a.loop);
        ev_timer_start(f->a.loop, &t);
        ev_run(f->a.loop, 0);
        ev_timer_stop(f->a.loop, &t);
}

size_t fake_agent_lines(const char *path) {
        FILE *f = fopen(path, "re");
        size_t n = 0;
        int c;

        if (!f)
                return 0;
        while ((c = fgetc(f)) != EOF)
                n += c == '\n';
        fclose(f);
        return n;
}

json_t *fake_agent_incident(const char *path, size_t k) {
        FILE *f = fopen(path, "re");
        char *line = NULL;
        size_t size = 0;
        json_t *j = NULL;

        assert_non_null(f);
        for (size_t i = 0; i <= k; i++)
                assert_true(getline(&line, &size, f) > 0);
        fclose(f);
        j = json_loads(line, 0, NULL);
        free(line);
        assert_non_null(j);
        return j;
}
