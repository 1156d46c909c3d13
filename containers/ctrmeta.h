/* SPDX-License-Identifier: MIT */
/* The names operators know of a container, parsed from the files its runtime keeps (docs/incident.md:
 * Container names says which file of which runtime, and what each field is):
 *   docker      /var/lib/docker/containers/<id>/config.v2.json: Name, Config.Image, Config.Labels
 *               (io.kubernetes.* when dockershim or cri-dockerd made it)
 *   containerd  /run/containerd/io.containerd.runtime.v2.task/<ns>/<id>/config.json (the OCI spec):
 *               annotations io.kubernetes.cri.* (the CRI plugin); outside Kubernetes none, and the
 *               id is the name ctr's user gave (containers/containers.c names it so)
 *   CRI-O       /run/containers/storage/overlay-containers/<id>/userdata/config.json: annotations
 *               io.kubernetes.pod.*, io.kubernetes.container.name, io.kubernetes.cri-o.ImageName
 *   podman      containers/storage's <driver>-containers/containers.json: "names" and "metadata"
 *               (a JSON string: "name", "image-name"), rootful and rootless.
 * Pure: takes bytes, never touches the host, never logs. Strings are kept as bytes (cut to their
 * field, NUL-terminated); whoever prints them makes them valid UTF-8 and terminal-safe. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether a runtime's file, as stat saw it (not through a symlink), is one to read names from: a
 * regular file of root's, ours (a test's tree), or owner's (>= 0: the rootless user whose storage
 * it is, who writes its files). */
static inline bool ctrmeta_file_trusted(const struct stat *st, int64_t owner) {
        return S_ISREG(st->st_mode) &&
               (st->st_uid == 0 || st->st_uid == geteuid() || (owner >= 0 && st->st_uid == (uid_t) owner));
}

typedef struct ContainerInfo {
        char runtime[16];       /* as CgroupMeta.runtime: "docker", "containerd", "crio", "podman" */
        char id[80];            /* the id the cgroup path names (containerd's: up to 76 bytes) */
        char name[128];         /* the runtime's name ("web"; docker's without its leading '/'), "" none */
        char image[256];        /* the image as it was asked for ("nginx:1.25"), "" none */
        char pod_namespace[64]; /* a Kubernetes pod's; "" when not in a pod */
        char pod_name[256];
        char pod_uid[40];
        char pod_container[128]; /* the container's name in its pod spec */
        bool sandbox;            /* the pod's sandbox ("pause") container */
        /* containerd's namespace of its task ("k8s.io" the CRI's, "default" ctr's); "" other runtimes */
        char runtime_namespace[80];
        /* the runtime's own pod, not Kubernetes': a `podman pod`'s name (containers/libpod.h); "" none */
        char runtime_pod[128];
        /* Why the runtime's files did not name it ("" when they did): what an incident says instead. */
        char unnamed[96];
        /* Why its cgroup was not taken for the runtime's ("" when it was; containers/ctrverify.h):
         * then nothing is named and no watch by name selects it. */
        char unverified[160];
        /* The container's init process as its runtime's files say (docker's State.Pid, containerd's
         * init.pid, CRI-O's and podman's pidfile; conmon's, conmon-pidfile or conmon.pid, for its
         * monitor's cgroup), 0 when they do not:
         * whose cgroup must hold it (containers/ctrverify.h). */
        pid_t pid;
} ContainerInfo;

/* The largest metadata file read: past it a file is refused as hostile (the biggest real ones, an
 * OCI spec with many mounts or a containers.json of some thousand containers, are well under). */
#define CTRMETA_FILE_MAX (4u << 20)

/* What parsing one file may cost: jansson's allocations for it, as ctrmeta_json_cost() bounds
 * them before anything is built, at most 8 times CTRMETA_FILE_MAX; past it a parser returns
 * -E2BIG. Measured, the bound is 12 times the size of a containers.json of 3,000 containers
 * (jansson took 4 times) and 16 to 23 times an OCI spec's of this tree's fixtures: a
 * containers.json of some 6,000 containers passes, or a spec of 1.4 MiB, while 4 MiB of empty
 * objects, which jansson built in 283 MiB, is refused. */
#define CTRMETA_PARSE_BUDGET (8 * (uint64_t) CTRMETA_FILE_MAX)

/* An upper bound of what jansson allocates to parse buf (bytes), from a scan of its tokens that
 * allocates nothing. Pure; any bytes. */
uint64_t ctrmeta_json_cost(const char *buf, size_t len);

/* Fills ret's names, and pid (State.Pid, 0 when it is not running), from docker's config.v2.json.
 * Returns 0, -EBADMSG (not JSON, or not an object), -E2BIG (over CTRMETA_PARSE_BUDGET, as every
 * parser below), -ENOMEM. ret->runtime and ret->id are left as they are. */
int ctrmeta_parse_docker(const char *buf, size_t len, ContainerInfo *ret);

/* Fills ret's names from an OCI runtime spec's annotations (a containerd task bundle's or CRI-O's
 * config.json): the CRI plugin's io.kubernetes.cri.*, CRI-O's io.kubernetes.pod.* and
 * io.kubernetes.cri-o.*, nerdctl's nerdctl/name. Returns 1 when an annotation named it, 0 when the
 * spec names nothing (plain containerd), -EBADMSG, -ENOMEM. */
int ctrmeta_parse_oci(const char *buf, size_t len, ContainerInfo *ret);

/* Fills ret's name and image from the entry of id in a containers/storage containers.json (an
 * array of {"id", "names", "metadata"}, metadata podman's JSON string with "name" and
 * "image-name"). Returns 1 when found, 0 when id is not listed, -EBADMSG, -ENOMEM. */
int ctrmeta_parse_storage(const char *buf, size_t len, const char *id, ContainerInfo *ret);

/* The same in two steps, for a file that names many containers looked up together: parse once
 * (0, -EBADMSG, -ENOMEM), then find each id (1 found, 0 not). */
typedef struct CtrmetaStorage CtrmetaStorage;
int ctrmeta_storage_parse(const char *buf, size_t len, CtrmetaStorage **ret);
int ctrmeta_storage_find(const CtrmetaStorage *s, const char *id, ContainerInfo *ret);
CtrmetaStorage *ctrmeta_storage_free(CtrmetaStorage *s);

/* A user as containers/storage expands a rootless storage.conf path for it. */
typedef struct CtrmetaUser {
        unsigned uid;
        char name[64];
        char home[PATH_MAX];
} CtrmetaUser;

/* The name and home directory of uid in an /etc/passwd buffer, into ret. Returns 0, -ENOENT (no
 * such uid, or no absolute home), -ENAMETOOLONG. */
int ctrmeta_passwd_user(const char *buf, size_t len, unsigned uid, CtrmetaUser *ret);

/* The value of key (`graphroot`, `rootless_storage_path`) in table [storage] of a storage.conf:
 * `key = "<value>"` (or a literal '<value>'), printable characters, no escape. Copies it into out.
 * Returns 1, 0 (not set there), -EBADMSG (set to something else, or empty), -ENAMETOOLONG. */
int ctrmeta_storage_key(const char *buf, size_t len, const char *key, char *out, size_t size);

/* A storage.conf path value as containers/storage expands it (types/utils.go expandEnvPath) for
 * user u: "$UID" replaced first, then $HOME, ${HOME}, $USER and ${USER} (os.ExpandEnv, from the
 * user's environment as far as the agent knows it). u NULL (rootful): no variable at all. The
 * result must be absolute, without a ".." component. Returns 0, -EBADMSG (another variable, not
 * absolute, ".."), -ENAMETOOLONG. */
int ctrmeta_storage_expand(const char *value, const CtrmetaUser *u, char *out, size_t size);
