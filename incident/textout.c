/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "base/macro.h"
#include "base/text.h"
#include "incident/textout.h"

const char *textout_field_string(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

bool textout_field_number(const json_t *o, const char *key, double *ret) {
        json_t *v = json_object_get(o, key);

        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return true;
}

double textout_field_or_zero(const json_t *o, const char *key) {
        double v = 0;

        (void) textout_field_number(o, key, &v);
        return v;
}

void textout_put_duration_us(FILE *f, double us) {
        char buf[32];

        if (us < 1000)
                fprintf(f, "%.0f us", us);
        else if (us < 10000)
                fprintf(f, "%.1f ms", us / 1000);
        else if (us < 100000)
                fprintf(f, "%.0f ms", us / 1000);
        else if (us >= 10e6)
                fprintf(f, "%.0f s", us / 1e6);
        else {
                /* Two decimals, trailing zeros dropped: 1.00 s reads "1 s". */
                snprintf(buf, sizeof buf, "%.2f", us / 1e6);
                size_t n = strlen(buf);
                while (n > 0 && buf[n - 1] == '0')
                        buf[--n] = '\0';
                if (n > 0 && buf[n - 1] == '.')
                        buf[--n] = '\0';
                fprintf(f, "%s s", buf);
        }
}

void textout_put_bytes(FILE *f, double b) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
        size_t u = 0;

        while (b >= 1024 && u + 1 < ELEMENTSOF(units)) {
                b /= 1024;
                u++;
        }
        if (u == 0 || b >= 100)
                fprintf(f, "%.0f %s", b, units[u]);
        else
                fprintf(f, "%.1f %s", b, units[u]);
}

/* Names come from task comms and cgroup paths: valid UTF-8 by now, but control characters would
 * break a pager's or a terminal's line, and a bidirectional override would turn the sentence
 * around them on the screen (text_unsafe_char()): C0 and DEL as \\xNN, the others as \\uNNNN. */
void textout_put_name(FILE *f, const char *s) {
        while (s && *s) {
                unsigned cp;
                size_t n = text_unsafe_char(s, &cp);

                if (n == 1)
                        fprintf(f, "\\x%02x", cp);
                else if (n > 1)
                        fprintf(f, "\\u%04x", cp);
                else
                        fputc(*s, f);
                s += n ? n : 1;
        }
}

/* Where a process or cgroup o ({cgroup or path, meta}) is, as a person names it: its container
 * ("container web, image nginx:1.25", and ", podman pod web-pod" when in one), its pod ("pod payments/api-7d9f,
 * container api"), else its cgroup path. */
void textout_put_owner(FILE *f, const json_t *o, const char *path) {
        const json_t *ct = json_object_get(json_object_get(o, "meta"), "container");
        const json_t *pod = json_object_get(ct, "pod");

        if (json_is_object(pod) && textout_field_string(pod, "name")) {
                fputs("pod ", f);
                if (textout_field_string(pod, "namespace")) {
                        textout_put_name(f, textout_field_string(pod, "namespace"));
                        fputc('/', f);
                }
                textout_put_name(f, textout_field_string(pod, "name"));
                if (json_is_true(json_object_get(pod, "sandbox")))
                        fputs(", its sandbox", f);
                else if (textout_field_string(pod, "container")) {
                        fputs(", container ", f);
                        textout_put_name(f, textout_field_string(pod, "container"));
                }
        } else if (textout_field_string(ct, "name")) {
                fputs("container ", f);
                textout_put_name(f, textout_field_string(ct, "name"));
                if (textout_field_string(ct, "image")) {
                        fputs(", image ", f);
                        textout_put_name(f, textout_field_string(ct, "image"));
                }
                if (textout_field_string(ct, "runtime_pod")) {
                        fputs(", podman pod ", f);
                        textout_put_name(f, textout_field_string(ct, "runtime_pod"));
                }
        } else
                textout_put_name(f, path ? path : "?");
}
