/* SPDX-License-Identifier: MIT */
/* Whether a killer's mark comes from the killer, told by what no unprivileged user can forge
 * (docs/killers.md, "Who may leave a mark"): the executable a process runs (the file behind
 * /proc/PID/exe, the same as the file at its path in the agent's root, owned by root in a system
 * directory) and the systemd unit of its cgroup (only root puts a process in a system unit).
 * Never a comm or a command line, which any process sets for itself. Reads /proc and the files
 * it names; never logs. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#include "kills/killmarks.h"
#include "probes/sysroot.h"

/* The directories a killer's executable is trusted in (Debian puts earlyoom in /usr/bin, nohang's
 * script in /usr/sbin, systemd-oomd in /lib/systemd, which merged /usr shows as /usr/lib/systemd;
 * an operator's build goes to /usr/local). The directory itself, not below it. */
#define KILLTRUST_EXE_DIRS                                                                                             \
        {                                                                                                              \
                "/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/lib/systemd", "/lib/systemd", "/usr/local/bin",        \
                        "/usr/local/sbin"                                                                              \
        }

/* The unit a cgroup path ("/system.slice/x.service", as /proc/PID/cgroup has it, or systemd's
 * _SYSTEMD_UNIT's cgroup) belongs to, as systemd tells it: its first component that is not a
 * slice. 0 with [*ret, *ret + *ret_len), -ENOENT for the root or a path of slices. Pure. */
int killtrust_cgroup_unit(const char *cgroup, const char **ret, size_t *ret_len);

/* The killer whose row of the table (KillerInfo.units) names the unit [unit, unit + len), or
 * KILLER_UNKNOWN. Pure. */
KillerKind killtrust_unit_killer(const char *unit, size_t len);

/* Whether exe_fd (the running executable, opened through /proc/PID/exe) is the file at path (the
 * link's text) beneath root_fd: path absolute, in one of KILLTRUST_EXE_DIRS, and the file there
 * the same inode as exe_fd's, a regular file, it and every directory from root_fd down to it owned
 * by owner (root: 0; a unit test passes its own uid) and writable by no one else. So a copy of
 * /bin/sleep in a home directory, a file of a user's, or one bind-mounted over /usr/bin/earlyoom
 * in a mount namespace of the user's own never passes. 1 yes, 0 no, -errno when it cannot be
 * told (ENOENT: no such file here). */
int killtrust_exe_check(int root_fd, const char *path, int exe_fd, uid_t owner);

/* The known killer process pid is, or KILLER_UNKNOWN: its executable passes killtrust_exe_check()
 * (with owner) and has a killer's name (KillerInfo.executables), or its cgroup is a killer's
 * unit. The agent cannot read /proc/PID/exe of a process of another uid without
 * CAP_SYS_PTRACE (earlyoom's DynamicUser, systemd-oomd's systemd-oom): the unit then decides. */
KillerKind killtrust_process(const Sysroot *s, pid_t pid, uid_t owner);
