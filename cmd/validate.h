/* SPDX-License-Identifier: MIT */
/* `psidiag validate FILE` (and `--check-config`): loads a config file with the agent's parser,
 * resolves its cgroups against this host, and prints each trigger as it would be armed (rounded
 * without CAP_SYS_RESOURCE) and where its incidents go. Errors go to stderr as FILE:LINE:COLUMN. */
#pragma once

/* Returns the exit code: 0 valid, 2 invalid (or unreadable), 1 out of memory. */
int validate_run(const char *path);
