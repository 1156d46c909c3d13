/* SPDX-License-Identifier: MIT */
/* Whether a cgroup whose name claims a container (containers/cgmeta.h) is one its runtime made: the
 * name is anyone's to choose below a delegated subtree, and container ids are readable by anyone
 * in /proc/<pid>/cgroup, so the name alone is never taken for who made the cgroup. Checked: where
 * the cgroup is (a rootful runtime's never below a user's systemd instance; rootless podman's only
 * below the user's own user@<uid>.service at its standard place, with no user@ nested), who owns
 * its ancestors (the kernel makes a cgroup's directory its creator's, and cgroup2 has no rename:
 * kernel-facts.md: cgroup-owner), and whether the process the runtime's files say is the
 * container's init lives in it (docker, containerd, CRI-O, podman). Reads the cgroup tree by fd,
 * never through a symlink, and /proc/<pid>/cgroup; the containers' names are
 * containers/containers.h's. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "containers/ctrmeta.h"

/* The longest reason, with its NUL: ContainerInfo.unverified's size. */
#define CTRVERIFY_REASON_MAX 160

/* The container's own cgroup in path ("/a/b" or "a/b"): path up to and including its last
 * component that holds id, written "/a/b" into out (a cgroup below a container's is the
 * container's). 0; -ENOENT when no component holds id; -ENAMETOOLONG when out is too small. */
int ctrverify_own_cgroup(const char *path, const char *id, char *out, size_t size);

/* Whether cgroup (the container's own, "/a/b") is where runtime ("docker", "containerd", "crio",
 * "podman", "" the kubelet's cgroupfs driver, which names none) makes its containers' cgroups, for
 * user_uid (CgroupMeta.user_uid: the innermost user@<uid>.service, -1 none). Pure. 0, or -EPERM
 * with the reason in why. */
int ctrverify_place(const char *cgroup, const char *runtime, int64_t user_uid, char *why, size_t size);

/* Whether every directory from the root of the cgroup2 mount at cgroup2_fd (borrowed) down to
 * cgroup's parent is a directory of its expected owner (root, or our own euid: a test's tree;
 * user_uid from user@<uid>.service down when user_uid > 0) writable by no one else, and cgroup a
 * directory (whoever owns it: runc and crun give a container in a user namespace its own cgroup).
 * Each component opened O_PATH|O_NOFOLLOW beneath the one before. 0; -EPERM with the reason in
 * why; -ENOENT (gone); -errno. */
int ctrverify_owners(int cgroup2_fd, const char *cgroup, int64_t user_uid, char *why, size_t size);

/* ctrverify_place(), then ctrverify_owners(): 0, or -EPERM with the reason in why (a cgroup gone
 * or unreadable is not verified either). */
int ctrverify_cgroup(int cgroup2_fd, const char *cgroup, const char *runtime, int64_t user_uid, char *why, size_t size);

/* Whether the process pid (the container's init, as its runtime's files say) lives in cgroup or
 * below it, read from /proc/<pid>/cgroup beneath proc_fd (borrowed; resolved to a host path as
 * probes/procfs.h's proc_read_cgroup() does). 0; -ESRCH when pid is gone (files of a container
 * that ended: nothing to compare); -EPERM with the reason in why; -errno. */
int ctrverify_process(int proc_fd, pid_t pid, const char *cgroup, char *why, size_t size);

/* As containers/containers.c asks, for a container's cgroup (its own, "/a/b"; "" when its path was
 * too long to keep): ctrverify_cgroup(), and ctrverify_process() of info->pid where the runtime's
 * files named one (proc_fd < 0: not checked). true when verified; else false, and info names
 * nothing (its runtime and id kept), the reason in info->unverified, info->unnamed saying so. */
bool ctrverify_container(int cgroup2_fd, const char *cgroup, const char *runtime, int64_t user_uid,
                         ContainerInfo *info);
bool ctrverify_container_process(int proc_fd, const char *cgroup, ContainerInfo *info);

/* The pid in root_fd/path (containerd's init.pid, CRI-O's pidfile): a regular file of root's (or
 * ours: a test's tree; or owner's, >= 0), not through a symlink, one decimal number and maybe a
 * newline; 0 when there is none. */
pid_t ctrverify_read_pid(int root_fd, const char *path, int64_t owner);

/* The pid podman wrote for container id under its run root (relative to root_fd: rootful
 * run/containers/storage or the system storage.conf's runroot, rootless run/user/<uid>/containers
 * or the user's own storage.conf's runroot, owner that uid): the container's init in
 * <driver>-containers/<id>/userdata/pidfile, or with conmon its monitor's, conmon.pid, for each
 * storage driver containers/containers.c reads; 0 when none is there. */
pid_t ctrverify_podman_pid(int root_fd, const char *runroot, const char *id, bool conmon, int64_t owner);
