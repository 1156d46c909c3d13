/* SPDX-License-Identifier: MIT */
/* Test-only: the agent stopped at a named point of its code, so that an integration test can act
 * (kill a process, fill a socket) exactly there, not by luck. PSIDIAG_TEST_HOLD names the points
 * ("kill-logs-open,kill-incident"); at the first pass of each, the agent logs "test hold: POINT"
 * and stops itself with SIGSTOP until the test sends SIGCONT. Unset (as in every deployment), a
 * point costs one comparison. Documented as test-only in the man page's ENVIRONMENT. */
#pragma once

/* Stops the process at point when PSIDIAG_TEST_HOLD names it, the first time only. */
void test_hold(const char *point);
