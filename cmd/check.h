/* SPDX-License-Identifier: MIT */
/* `psidiag check`: what the agent needs from this host and whether it has it, one line each
 * (ok / warn / fail). Gathering the facts (cmd/check-facts.h) touches the host; judging them is a
 * pure function, one per check walked from a table, so the verdicts are unit-tested. fail means the
 * agent cannot do its full job; warn means it can, with the limitation the line states. */
#pragma once

#include <stddef.h>

#include "cmd/check-facts.h"

typedef enum CheckStatus {
        CHECK_OK,
        CHECK_WARN,
        CHECK_FAIL,
} CheckStatus;

typedef struct CheckLine {
        CheckStatus status;
        const char *what;
        char text[1024];
} CheckLine;

#define CHECK_LINES_MAX 20

/* Judges the facts. Fills lines (at most CHECK_LINES_MAX) and returns how many. */
size_t check_evaluate(const CheckFacts *f, CheckLine *lines);

const char *check_status_to_string(CheckStatus s);

/* `psidiag check`: prints the lines; returns 0 when nothing failed, 1 otherwise. */
int check_run(void);
