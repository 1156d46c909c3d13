/* SPDX-License-Identifier: MIT */
/* What a cgroup path says about its owner, by the naming conventions of systemd and of the
 * Kubernetes kubelet with either cgroup driver:
 *   systemd   kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice/
 *             cri-containerd-<id>.scope  (crio-<id>.scope, docker-<id>.scope)
 *   cgroupfs  kubepods/burstable/pod<uid>/<id>   (guaranteed pods sit right under kubepods),
 *             docker/<id>
 * and podman's: machine.slice/libpod-<id>.scope (libpod-conmon-<id>.scope its monitor), rootless
 * user.slice/user-<uid>.slice/user@<uid>.service/.../libpod-<id>.scope, cgroupfs
 * <parent>/libpod-<id> (parent libpod_parent unless --cgroup-parent says otherwise);
 * plus systemd units (*.service, *.scope, *.slice) anywhere; and the "/a/b" form a path is shown in.
 * Pure: takes a path, never touches the host, never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum CgroupQos {
        CGROUP_QOS_NONE,
        CGROUP_QOS_GUARANTEED,
        CGROUP_QOS_BURSTABLE,
        CGROUP_QOS_BESTEFFORT,
} CgroupQos;

typedef struct CgroupMeta {
        char unit[256];   /* the innermost *.service or *.scope, "" if none */
        char slice[256];  /* the innermost *.slice, "" if none */
        char pod_uid[40]; /* with dashes, "" if not a Kubernetes pod */
        CgroupQos qos;
        char runtime[16];      /* "containerd", "crio", "docker", "podman", "" when unknown */
        char container_id[72]; /* hex id, "" if none */
        int64_t user_uid;      /* the uid of the innermost user@<uid>.service (systemd's user
                                * instance: a rootless container's owner), -1 if none */
} CgroupMeta;

const char *cgroup_qos_to_string(CgroupQos q); /* NULL for NONE */

/* Decodes path ("/a/b" or "a/b"). Returns true when anything was recognized. */
bool cgroup_meta_parse(const char *path, CgroupMeta *ret);

/* The "/a/b" form /proc/<pid>/cgroup and the incidents use, of rel under prefix (both relative to
 * the cgroup2 mount or to prefix; NULL or "" is the cgroup itself; leading '/' are ignored):
 * "/prefix/rel", "/prefix", "/rel" or "/". Written into buf, cut at size - 1 bytes. Returns the
 * length of the whole path, as snprintf(): size or more means it was cut. */
size_t cgroup_display_path(const char *prefix, const char *rel, char *buf, size_t size);
