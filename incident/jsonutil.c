/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/utf8.h"
#include "incident/jsonutil.h"
#include "probes/cgmeta.h"
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

/* What the cgroup path says: systemd unit and slice, Kubernetes pod and QoS, container. */
json_t *incident_cgroup_meta(const char *path) {
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
        r |= set_new(o, "meta", incident_cgroup_meta(info->has_cgroup ? info->cgroup : NULL));
        r |= set_new(o, "unreadable", info->unreadable[0] ? json_string(info->unreadable) : json_null());
        return r;
}
