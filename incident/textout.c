/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "incident/textout.h"

static const char *field_string(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* Names come from task comms and cgroup paths: valid UTF-8 by now, but control bytes would break a
 * pager's or a terminal's line. */
void textout_put_name(FILE *f, const char *s) {
        for (; s && *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\x%02x", c);
                else
                        fputc(c, f);
        }
}

/* Where a process or cgroup o ({cgroup or path, meta}) is, as a person names it: its container
 * ("container web, image nginx:1.25"), its pod ("pod payments/api-7d9f, container api"), else its
 * cgroup path. */
void textout_put_owner(FILE *f, const json_t *o, const char *path) {
        const json_t *ct = json_object_get(json_object_get(o, "meta"), "container");
        const json_t *pod = json_object_get(ct, "pod");

        if (json_is_object(pod) && field_string(pod, "name")) {
                fputs("pod ", f);
                if (field_string(pod, "namespace")) {
                        textout_put_name(f, field_string(pod, "namespace"));
                        fputc('/', f);
                }
                textout_put_name(f, field_string(pod, "name"));
                if (json_is_true(json_object_get(pod, "sandbox")))
                        fputs(", its sandbox", f);
                else if (field_string(pod, "container")) {
                        fputs(", container ", f);
                        textout_put_name(f, field_string(pod, "container"));
                }
        } else if (field_string(ct, "name")) {
                fputs("container ", f);
                textout_put_name(f, field_string(ct, "name"));
                if (field_string(ct, "image")) {
                        fputs(", image ", f);
                        textout_put_name(f, field_string(ct, "image"));
                }
        } else
                textout_put_name(f, path ? path : "?");
}
