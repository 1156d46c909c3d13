/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/target.h"
#include "probes/sysroot.h"

static bool str_eq(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int replace(char **slot, const char *value, size_t len) {
        char *copy = strndup(value, len);

        if (!copy)
                return -ENOMEM;
        free(*slot);
        *slot = copy;
        return 0;
}

static int set_cgroup(WatchConfig *w, const char *p, const char *where, char *why, size_t size) {
        if (cgroup_path_validate(p) < 0) {
                snprintf(why, size,
                         "cgroup \"%.300s\" must be a path relative to the cgroup2 mount, without \".\" or \"..\" "
                         "segments or empty segments",
                         p);
                return -EINVAL;
        }
        while (*p == '/')
                p++;
        /* "" and "/" mean the root cgroup, which is a cgroup watch, not node-wide. */
        if (replace(&w->cgroup, p, strlen(p)) < 0 || replace(&w->cgroup_where, where, strlen(where)) < 0)
                return -ENOMEM;
        return 0;
}

/* key "value" reason; without the value when it has control characters (never echoed raw). */
static void say_bad(char *why, size_t size, const char *key, const char *value, const char *reason) {
        for (const char *p = value; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f) {
                        snprintf(why, size, "%s %s", key, reason);
                        return;
                }
        snprintf(why, size, "%s \"%.300s\" %s", key, value, reason);
}

/* "NAMESPACE/NAME", each a glob: "payments/web-?", "*-prod/api-*". */
static int set_pod(WatchConfig *w, const char *value, char *why, size_t size) {
        const char *slash = strchr(value, '/'), *reason = NULL;

        /* The whole first (empty, too long, control characters), then its shape. */
        if (ctrselect_glob_check(value, true, &reason) < 0) {
                say_bad(why, size, "pod", value, reason);
                return -EINVAL;
        }
        if (!slash || strchr(slash + 1, '/') || slash == value || !slash[1]) {
                snprintf(why, size,
                         "pod \"%.300s\" must be NAMESPACE/NAME, each a glob (\"payments/*\": every pod of the "
                         "namespace payments)",
                         value);
                return -EINVAL;
        }
        if (replace(&w->select.pod_namespace, value, (size_t) (slash - value)) < 0 ||
            replace(&w->select.pod_name, slash + 1, strlen(slash + 1)) < 0)
                return -ENOMEM;
        return 0;
}

static int set_text(WatchConfig *w) {
        char buf[4 * CTRSELECT_GLOB_MAX + 64];

        ctrselect_format(&w->select, buf, sizeof buf);
        return replace(&w->select_text, buf, strlen(buf));
}

int config_target_set(WatchConfig *w, const char *key, const char *value, const char *where, char *why, size_t size) {
        bool cgroup = strcmp(key, "cgroup") == 0;
        const char *reason = NULL;
        int r;

        if (cgroup ? config_target_by_container(w) : w->cgroup != NULL) {
                snprintf(why, size,
                         "%s: a watch selects either a cgroup (cgroup) or containers by their names (container, "
                         "image, pod), not both: write two watches",
                         key);
                return -EINVAL;
        }
        if (cgroup)
                return set_cgroup(w, value, where, why, size);
        if (strcmp(key, "pod") == 0)
                r = set_pod(w, value, why, size);
        else if (ctrselect_glob_check(value, true, &reason) < 0) {
                say_bad(why, size, key, value, reason);
                return -EINVAL;
        } else
                r = replace(strcmp(key, "image") == 0 ? &w->select.image : &w->select.name, value, strlen(value));
        return r < 0 ? r : set_text(w);
}

bool config_target_is_node(const WatchConfig *w) {
        return !w->cgroup && !config_target_by_container(w);
}

bool config_target_by_container(const WatchConfig *w) {
        return ctrselect_is_set(&w->select);
}

const char *config_target_label(const WatchConfig *w) {
        if (w && w->cgroup && w->cgroup[0])
                return w->cgroup;
        if (w && !w->cgroup && w->select_text && config_target_by_container(w))
                return w->select_text;
        return "/";
}

bool config_target_same(const WatchConfig *a, const WatchConfig *b) {
        return str_eq(a->cgroup, b->cgroup) && str_eq(a->select.name, b->select.name) &&
               str_eq(a->select.image, b->select.image) && str_eq(a->select.pod_namespace, b->select.pod_namespace) &&
               str_eq(a->select.pod_name, b->select.pod_name);
}

void config_target_clear(WatchConfig *w) {
        free(w->cgroup);
        free(w->cgroup_where);
        free(w->select.name);
        free(w->select.image);
        free(w->select.pod_namespace);
        free(w->select.pod_name);
        free(w->select_text);
        w->cgroup = w->cgroup_where = w->select_text = NULL;
        w->select = (ContainerSelector) {};
}
