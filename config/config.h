/* SPDX-License-Identifier: MIT */
/* The agent's JSON config: loading (jansson), validation, defaults, and error messages that name
 * file:line:column. Does not arm anything; cgroup paths are checked for shape when parsed, and
 * against the host's cgroup2 mount by config_resolve_cgroups(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/model.h"
#include "probes/sysroot.h"

/* The config used without --config: node-wide cpu, memory and io triggers, NDJSON on stdout. */
extern const char config_default_json[];

/* Parses and validates config text. name is used in messages ("FILE:LINE:COLUMN: what"). Returns 0,
 * -EINVAL with *ret_error (malloc'ed) on any error, or -ENOMEM. ret_error is written on -EINVAL only. */
int config_parse(const char *text, size_t len, const char *name, Config **ret, char **ret_error);

/* Reads path (at most 4 MiB) and parses it. -errno from reading comes with a message too. */
int config_load_file(const char *path, Config **ret, char **ret_error);

int config_load_default(Config **ret);

/* Replaces the global output and every watch's output (the --output flag). 0 or -ENOMEM. */
int config_override_output(Config *c, const char *output);

Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/* Checks every watch's cgroup against the host before anything is armed: a path that leads
 * through a symlink or another mount, or that repeats the mount point ("/sys/fs/cgroup/x" for "x")
 * and does not exist, is a config error (-EINVAL with "FILE:LINE:COLUMN: message" in *ret_error).
 * A cgroup that simply does not exist yet is fine. 0, -EINVAL or -ENOMEM. */
int config_resolve_cgroups(const Config *c, const Sysroot *s, char **ret_error);
