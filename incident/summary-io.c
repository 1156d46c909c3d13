/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "incident/summary-io.h"
#include "incident/textout.h"

/* culprits.cgroups' entry of path, or NULL. */
static const json_t *culprit_cgroup(const json_t *incident, const char *path) {
        const json_t *cgroups = json_object_get(json_object_get(incident, "culprits"), "cgroups");

        for (size_t i = 0; path && i < json_array_size(cgroups); i++)
                if (textout_field_string(json_array_get(cgroups, i), "path") &&
                    strcmp(textout_field_string(json_array_get(cgroups, i), "path"), path) == 0)
                        return json_array_get(cgroups, i);
        return NULL;
}

/* The node's dirty and writeback page cache (limits.io.writeback); false without it. */
static bool node_queue(const json_t *incident, double *ret) {
        const json_t *wb = json_object_get(json_object_get(json_object_get(incident, "limits"), "io"), "writeback");

        *ret = textout_field_or_zero(wb, "dirty_bytes") + textout_field_or_zero(wb, "writeback_bytes");
        return json_is_object(wb);
}

/* The node's queue when the summary speaks of it, and what p wrote. */
static bool queued(const json_t *incident, const json_t *p, double *ret_queued, double *ret_wrote) {
        *ret_wrote = textout_field_or_zero(json_object_get(p, "usage"), "write_bytes");
        return node_queue(incident, ret_queued) && *ret_queued >= SUMMARY_WRITEBACK_MIN_BYTES && *ret_wrote > 0 &&
               *ret_queued * SUMMARY_WRITEBACK_MIN_SHARE >= *ret_wrote;
}

bool summary_writeback_cgroup(FILE *f, const json_t *incident, const json_t *cg) {
        double q, own = 0;

        if (!node_queue(incident, &q) || q < SUMMARY_WRITEBACK_MIN_BYTES ||
            !textout_field_number(cg, "dirty_bytes", &own) || own * 2 < q || !textout_field_string(cg, "path"))
                return false;
        fputs(": writeback of ", f);
        textout_put_bytes(f, own);
        fputs(" dirtied by ", f);
        textout_put_name(f, textout_field_string(cg, "path"));
        return true;
}

bool summary_writeback_by_cgroup(FILE *f, const json_t *incident, const json_t *p) {
        double q, wrote, pid = 0;

        if (!queued(incident, p, &q, &wrote) ||
            !summary_writeback_cgroup(f, incident, culprit_cgroup(incident, textout_field_string(p, "cgroup"))))
                return false;
        fputs(": ", f);
        textout_put_name(f, textout_field_string(p, "comm"));
        if (textout_field_number(p, "pid", &pid) && pid > 0)
                fprintf(f, " (pid %.0f)", pid);
        fputs(" dirtied ", f);
        textout_put_bytes(f, wrote);
        fputs(" in the sample", f);
        return true;
}

bool summary_writeback_usage(FILE *f, const json_t *incident, const json_t *p) {
        double q, wrote;

        if (!queued(incident, p, &q, &wrote))
                return false;
        fputs(" dirtied ", f);
        textout_put_bytes(f, wrote);
        fputs(", writeback of ", f);
        textout_put_bytes(f, q);
        fputs(" waiting on the node", f);
        return true;
}
