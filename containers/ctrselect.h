/* SPDX-License-Identifier: MIT */
/* Containers chosen by the names operators know (a watch's container, image and pod keys): whether
 * a container's names (containers/ctrmeta.h) match a selector's globs, and the walk of the cgroup2 tree
 * that finds every container's own cgroup (named by whoever walks, through the container cache of
 * containers/containers.h). It does not arm anything nor follow the tree's changes (the agent's
 * discovery does). Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "containers/ctrmeta.h"

/* The longest glob of a selector, without its NUL. */
#define CTRSELECT_GLOB_MAX 255

/* Globs (fnmatch(3) without flags: *, ?, [...]) on a container's names; NULL matches anything.
 * A container matches when every glob that is set matches. */
typedef struct ContainerSelector {
        char *name;          /* the container's name: its pod spec's in a Kubernetes pod, else its runtime's */
        char *image;         /* the image as it was asked for ("nginx:1.25", "localhost/x:1") */
        char *pod_namespace; /* a Kubernetes pod's namespace and name, both set or neither: only */
        char *pod_name;      /* containers in a pod match them */
} ContainerSelector;

/* Whether any glob is set. */
bool ctrselect_is_set(const ContainerSelector *s);

/* Whether the container ci (never NULL) is selected by s: every glob set matches, its runtime's
 * files named it (ci->unnamed empty) in a cgroup verified as the runtime's (ci->unverified empty:
 * containers/ctrverify.h), and it is not a pod's sandbox ("pause") container. */
bool ctrselect_match(const ContainerSelector *s, const ContainerInfo *ci);

/* Whether glob can be a selector's: 1 to CTRSELECT_GLOB_MAX bytes, no control characters (and, if
 * !slash_ok, no '/': a pod's namespace or name never has one). 0, or -EINVAL with the reason in
 * *ret_why (a static string). */
int ctrselect_glob_check(const char *glob, bool slash_ok, const char **ret_why);

/* The selector as one line, "container=web* image=nginx:* pod=payments/x-*" (the keys set, in that
 * order), into buf (cut to size). Returns buf. */
char *ctrselect_format(const ContainerSelector *s, char *buf, size_t size);

/* What the walk hands its visitor, with a path relative to the walk's root ("" the root). */
typedef enum CtrselectKind {
        CTRSELECT_PARENT,    /* a cgroup below which containers may appear */
        CTRSELECT_CONTAINER, /* a container's own cgroup (the outermost of its id, its monitor's left out) */
        CTRSELECT_MAYBE,     /* "<ns>/<id>" at the root: plain containerd's (ctr, nerdctl), if containerd
                              * has that task, which only its files tell (containers/containers.h) */
} CtrselectKind;

/* A visitor may name a container (container_cache_lookup()). It returns 0 or -ENOMEM (which ends
 * the walk); for CTRSELECT_MAYBE, 1 when it is a container (then, as a container's, its children are
 * not walked) and 0 when it is not (then it is visited again as a parent, and walked); for
 * CTRSELECT_PARENT, CTRSELECT_PRUNE to leave its children unwalked. */
#define CTRSELECT_PRUNE 2
typedef int (*CtrselectVisit)(const char *path, CtrselectKind kind, void *userdata);

/* Walks the cgroup tree at cgroup2_fd (borrowed): every container's cgroup is visited, its children
 * not walked; every other cgroup where containers are made (the root, slices, user@<uid>.service,
 * cgroupfs parents: anything but other services and scopes; below a user@<uid>.service, its slices
 * only, where a user's systemd makes rootless containers' scopes) is visited and walked. Reads no
 * file.
 * Returns the number of cgroups that could not be read (probes/cgwalk.h's policy) or -errno. */
int ctrselect_walk(int cgroup2_fd, CtrselectVisit visit, void *userdata);

/* The same walk of the subtree at path (relative to cgroup2_fd, not ""), a cgroup made below a
 * parent the whole walk visited: path itself is judged as the whole walk would judge it, paths and
 * depths are the whole tree's. -ENOENT when it is gone, else as ctrselect_walk(). */
int ctrselect_walk_below(int cgroup2_fd, const char *path, CtrselectVisit visit, void *userdata);
