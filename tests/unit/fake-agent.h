/* SPDX-License-Identifier: MIT */
/* A real Agent (agent/core.h) on a copy of the hybrid fixture, for the tests of agent/'s modules
 * that run on the loop: the calm host of fake-host.h, a config the test writes (its output a file
 * in the copy), the pools, the recording, the oom incidents and the metrics started as agent.c
 * starts them, and no trigger armed (a fake tree has no trigger to write to). */
#pragma once

#include <jansson.h>

#include "agent/core.h"
#include "tests/unit/fake-host.h"

typedef struct FakeAgent {
        char dir[64];     /* the copy of the fixture: the agent's sysroot */
        char out[96];     /* dir/incidents.jsonl, for the config's output */
        char out2[96];    /* dir/other.jsonl, for a second output */
        char metrics[96]; /* dir/psidiag.prom, for the config's metrics_file */
        FakeHost host;
        Config *config;
        Agent a;
} FakeAgent;

/* Copies the fixture and names the files in it. Asserts. */
void fake_agent_open(FakeAgent *f);
/* Parses config_json and starts the agent's modules on it; adds no watch. Asserts. */
void fake_agent_start(FakeAgent *f, const char *config_json);
/* Stops the modules, removes the watches, frees everything and removes the copy. Asserts. */
void fake_agent_close(FakeAgent *f);
/* Runs the agent's loop for ms. */
void fake_agent_run_for(FakeAgent *f, unsigned ms);
/* The lines of the file at path (0 when it does not exist). */
size_t fake_agent_lines(const char *path);
/* Line k (0 the first) of the incident file at path, parsed: a new reference. Asserts it is there
 * and is JSON. */
json_t *fake_agent_incident(const char *path, size_t k);
