/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/utf8.h"
#include "incident/jsonutil.h"
#include "containers/cgmeta.h"
#include "probes/procfs.h"

json_t *json_string_from_bytes(const char *s, size_t len) {
        char stack[UTF8_SANITIZED_MAX(128)];
        _cleanup_free_ char *heap = NULL;
        char *out = stack;
        size_t size = sizeof stack, n;

        if (UTF8_SANITIZED_MAX(len) > sizeof stack) {
                size = UTF8_SANITIZED_MAX(len);
                heap = malloc(size);
                if (!heap)
                        return NULL;
                out = heap;
        }
        n = utf8_sanitize(s, len, out, size);
        return json_stringn_nocheck(out, n);
}

static json_t *string_or_null(const char *s) {
        return s && s[0] ? json_string_from_bytes(s, strlen(s)) : json_null();
}

/* The names a container's runtime gave it (docs/incident.md: Container names). */
static json_t *container_object(const ContainerInfo *ci) {
        json_t *o, *pod;
        int r = 0;

        if (!ci)
                return json_null();
        o = json_object();
        r |= set_new(o, "name", string_or_null(ci->name));
        r |= set_new(o, "image", string_or_null(ci->image));
        if (ci->pod_name[0] || ci->pod_namespace[0] || ci->pod_container[0]) {
                pod = json_object();
                r |= set_new(pod, "namespace", string_or_null(ci->pod_namespace));
                r |= set_new(pod, "name", string_or_null(ci->pod_name));
                r |= set_new(pod, "uid", string_or_null(ci->pod_uid));
                r |= set_new(pod, "container", string_or_null(ci->pod_container));
                r |= set_new(pod, "sandbox", json_boolean(ci->sandbox));
                r |= set_new(o, "pod", object_or_null(pod, r));
        } else
                r |= set_new(o, "pod", json_null());
        r |= set_new(o, "unnamed", string_or_null(ci->unnamed));
        r |= set_new(o, "unverified", string_or_null(ci->unverified));
        r |= set_new(o, "runtime_namespace", string_or_null(ci->runtime_namespace));
        r |= set_new(o, "runtime_pod", string_or_null(ci->runtime_pod));
        return object_or_null(o, r);
}

/* What the cgroup path says: systemd unit and slice, Kubernetes pod and QoS, container. */
json_t *incident_cgroup_meta(const char *path, const ContainerInfo *ci) {
        CgroupMeta m;
        json_t *o;
        int r = 0;

        if (!path)
                return json_null();
        cgroup_meta_parse(path, &m);
        o = json_object();
        r |= set_new(o, "unit", string_or_null(m.unit));
        r |= set_new(o, "slice", string_or_null(m.slice));
        r |= set_new(o, "pod_uid", string_or_null(m.pod_uid));
        r |= set_new(o, "qos", string_or_null(cgroup_qos_to_string(m.qos)));
        r |= set_new(o, "container_runtime", string_or_null(m.runtime));
        r |= set_new(o, "container_id", string_or_null(m.container_id));
        /* the runtime the files were found under: the kubelet's cgroupfs driver names none */
        if (ci && !m.runtime[0] && ci->runtime[0])
                r |= set_new(o, "container_runtime", string_or_null(ci->runtime));
        /* plain containerd's /<namespace>/<id>: a container only its task bundle tells of */
        if (ci && !m.container_id[0] && ci->id[0])
                r |= set_new(o, "container_id", string_or_null(ci->id));
        r |= set_new(o, "container", container_object(ci));
        return object_or_null(o, r);
}

/* Outside our cgroup namespace a cgroup reads as "/../.." (procfs.h), which names nothing on our
 * mount: the incident says so instead. */
static json_t *process_cgroup(const ProcessInfo *info) {
        if (!info->has_cgroup)
                return json_null();
        if (proc_cgroup_outside_namespace(info->cgroup))
                return json_string(PROC_CGROUP_OUTSIDE_NAMESPACE);
        return json_string_from_bytes(info->cgroup, strlen(info->cgroup));
}

int incident_process_identity(json_t *o, const ProcessInfo *info) {
        int r = 0;

        r |= set_new(o, "comm", json_string_from_bytes(info->comm, info->comm_len));
        r |= set_new(o, "cmdline",
                     info->cmdline_len >= 0 ? json_string_from_bytes(info->cmdline, (size_t) info->cmdline_len)
                                            : json_null());
        r |= set_new(o, "uid", info->uid >= 0 ? json_integer(info->uid) : json_null());
        r |= set_new(o, "cgroup", process_cgroup(info));
        r |= set_new(o, "meta",
                     incident_cgroup_meta(info->has_cgroup ? info->cgroup : NULL,
                                          info->has_container ? &info->container : NULL));
        r |= set_new(o, "unreadable", info->unreadable[0] ? json_string(info->unreadable) : json_null());
        return r;
}

json_t *incident_pressure_line(const PressureStats *p, PsiStall which) {
        json_t *o;
        int r = 0;

        if (!p->has[which])
                return json_null();
        o = json_object();
        r |= set_new(o, "avg10", json_real(p->line[which].avg10));
        r |= set_new(o, "avg60", json_real(p->line[which].avg60));
        r |= set_new(o, "avg300", json_real(p->line[which].avg300));
        r |= set_new(o, "total_us", json_u64(p->line[which].total_us));
        return object_or_null(o, r);
}
