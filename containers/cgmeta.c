/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/cgpath.h"
#include "containers/cgmeta.h"

const char *cgroup_qos_to_string(CgroupQos q) {
        switch (q) {
        case CGROUP_QOS_GUARANTEED:
                return "guaranteed";
        case CGROUP_QOS_BURSTABLE:
                return "burstable";
        case CGROUP_QOS_BESTEFFORT:
                return "besteffort";
        case CGROUP_QOS_NONE:
                break;
        }
        return NULL;
}

static bool ends_with(const char *s, size_t len, const char *suffix) {
        size_t n = strlen(suffix);
        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

static bool is_hex_id(const char *s, size_t len) {
        if (len < 12 || len > 64)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

/* A pod uid: 36 chars of hex and dashes (or underscores under the systemd driver). */
static bool take_pod_uid(const char *s, size_t len, CgroupMeta *m) {
        if (len != 36)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                bool sep = i == 8 || i == 13 || i == 18 || i == 23;
                if (sep ? (c != '-' && c != '_') : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
        }
        for (size_t i = 0; i < len; i++)
                m->pod_uid[i] = s[i] == '_' ? '-' : s[i];
        m->pod_uid[len] = '\0';
        return true;
}

/* "1000" of user@1000.service; -1 when not a plain decimal uid. */
static int64_t parse_uid(const char *s, size_t len) {
        int64_t v = 0;

        if (len == 0 || len > 10)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v <= UINT32_MAX - 1 ? v : -1;
}

static CgroupQos qos_from(const char *s, size_t len) {
        if (len == 9 && memcmp(s, "burstable", 9) == 0)
                return CGROUP_QOS_BURSTABLE;
        if (len == 10 && memcmp(s, "besteffort", 10) == 0)
                return CGROUP_QOS_BESTEFFORT;
        return CGROUP_QOS_NONE;
}

static void copy(char *dst, size_t size, const char *s, size_t len) {
        snprintf(dst, size, "%.*s", (int) len, s);
}

/* "cri-containerd-<id>.scope", "crio-<id>.scope", "crio-conmon-<id>.scope", "docker-<id>.scope",
 * "libpod-<id>.scope", "libpod-conmon-<id>.scope" (podman's systemd driver: machine.slice rootful,
 * the user's own systemd instance rootless) */
static bool take_container_scope(const char *s, size_t len, CgroupMeta *m) {
        static const struct {
                const char *prefix, *runtime;
        } kinds[] = {
                { "cri-containerd-", "containerd" },
                { "crio-conmon-", "crio" },
                { "crio-", "crio" },
                { "docker-", "docker" },
                { "libpod-conmon-", "podman" },
                { "libpod-", "podman" },
        };

        if (!ends_with(s, len, ".scope"))
                return false;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
                size_t p = strlen(kinds[k].prefix);
                if (len > p + 6 && memcmp(s, kinds[k].prefix, p) == 0 && is_hex_id(s + p, len - p - 6)) {
                        copy(m->runtime, sizeof m->runtime, kinds[k].runtime, strlen(kinds[k].runtime));
                        copy(m->container_id, sizeof m->container_id, s + p, len - p - 6);
                        return true;
                }
        }
        return false;
}

/* What the segments above the one being read said. */
typedef struct MetaWalk {
        bool in_kubepods, in_docker, any;
} MetaWalk;

/* A segment of systemd's naming: a slice (kubepods.slice, kubepods-<qos>.slice,
 * kubepods-<qos>-pod<uid>.slice: the systemd driver), a user@<uid>.service (where rootless
 * podman's scopes sit), a container's scope, a unit. True when it was one (but user@, which
 * is also a unit). */
static bool take_systemd_segment(const char *seg, size_t len, CgroupMeta *m, MetaWalk *w) {
        if (ends_with(seg, len, ".slice")) {
                copy(m->slice, sizeof m->slice, seg, len);
                w->any = true;
                size_t body = len - 6;
                if (body >= 8 && memcmp(seg, "kubepods", 8) == 0) {
                        w->in_kubepods = true;
                        const char *pod = memmem(seg, body, "-pod", 4);
                        if (pod) {
                                if (take_pod_uid(pod + 4, (size_t) (seg + body - pod - 4), m) &&
                                    m->qos == CGROUP_QOS_NONE)
                                        m->qos = CGROUP_QOS_GUARANTEED;
                        } else if (body > 9)
                                m->qos = qos_from(seg + 9, body - 9);
                }
                return true;
        }
        if (len > 13 && memcmp(seg, "user@", 5) == 0 && ends_with(seg, len, ".service"))
                m->user_uid = parse_uid(seg + 5, len - 13);
        if (take_container_scope(seg, len, m) || ends_with(seg, len, ".service") || ends_with(seg, len, ".scope")) {
                copy(m->unit, sizeof m->unit, seg, len);
                w->any = true;
                return true;
        }
        return false;
}

/* A segment of the cgroupfs drivers: kubepods/<qos>/pod<uid>/<id>, kubepods/pod<uid>/<id>;
 * docker/<id>; podman's <cgroup parent, libpod_parent by default>/libpod-<id>. */
static void take_cgroupfs_segment(const char *seg, size_t len, CgroupMeta *m, MetaWalk *w) {
        if (len == 8 && memcmp(seg, "kubepods", 8) == 0)
                w->in_kubepods = true;
        else if (len == 6 && memcmp(seg, "docker", 6) == 0)
                w->in_docker = true;
        else if (!m->container_id[0] && len > 7 && memcmp(seg, "libpod-", 7) == 0 && is_hex_id(seg + 7, len - 7)) {
                copy(m->runtime, sizeof m->runtime, "podman", 6);
                copy(m->container_id, sizeof m->container_id, seg + 7, len - 7);
                w->any = true;
        } else if (w->in_docker && !m->container_id[0] && is_hex_id(seg, len)) {
                copy(m->runtime, sizeof m->runtime, "docker", 6);
                copy(m->container_id, sizeof m->container_id, seg, len);
                w->any = true;
        } else if (w->in_kubepods && m->pod_uid[0] == '\0' && qos_from(seg, len) != CGROUP_QOS_NONE) {
                m->qos = qos_from(seg, len);
                w->any = true;
        } else if (w->in_kubepods && len > 3 && memcmp(seg, "pod", 3) == 0 && take_pod_uid(seg + 3, len - 3, m)) {
                if (m->qos == CGROUP_QOS_NONE)
                        m->qos = CGROUP_QOS_GUARANTEED;
                w->any = true;
        } else if (m->pod_uid[0] && !m->container_id[0] && is_hex_id(seg, len)) {
                copy(m->container_id, sizeof m->container_id, seg, len);
                w->any = true;
        }
}

bool cgroup_meta_parse(const char *path, CgroupMeta *m) {
        const char *p = path ? path : "", *seg;
        MetaWalk w = {};
        size_t len;

        *m = (CgroupMeta) { .user_uid = -1 };
        while (cgpath_next(&p, &seg, &len))
                if (!take_systemd_segment(seg, len, m, &w))
                        take_cgroupfs_segment(seg, len, m, &w);
        /* The cgroupfs pod's qos was set by its parent; a pod under kubepods directly is guaranteed. */
        if (!m->pod_uid[0])
                m->qos = w.in_kubepods ? m->qos : CGROUP_QOS_NONE;
        return w.any || m->pod_uid[0];
}

size_t cgroup_display_path(const char *prefix, const char *rel, char *buf, size_t size) {
        int n;

        prefix = prefix ? prefix : "";
        rel = rel ? rel : "";
        while (*prefix == '/')
                prefix++;
        while (*rel == '/')
                rel++;
        n = snprintf(buf, size, "/%s%s%s", prefix, prefix[0] && rel[0] ? "/" : "", rel);
        if (n < 0) { /* EOVERFLOW: longer than INT_MAX */
                if (size > 0)
                        buf[0] = '\0';
                return SIZE_MAX;
        }
        return (size_t) n;
}
