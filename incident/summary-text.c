/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "base/macro.h"
#include "incident/summary-text.h"

const char *summary_field_string(const json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

/* A number field (integer or real); false when missing or null. */
bool summary_field_number(const json_t *o, const char *key, double *ret) {
        json_t *v = json_object_get(o, key);

        if (!json_is_number(v))
                return false;
        *ret = json_number_value(v);
        return true;
}

double summary_field_or_zero(const json_t *o, const char *key) {
        double v = 0;

        (void) summary_field_number(o, key, &v);
        return v;
}

/* Names come from task comms and cgroup paths: valid UTF-8 by now, but control bytes would break a
 * pager's or a terminal's line. */
void summary_put_name(FILE *f, const char *s) {
        for (; s && *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c < 0x20 || c == 0x7f)
                        fprintf(f, "\\x%02x", c);
                else
                        fputc(c, f);
        }
}

/* "850 us", "42 ms", "3.1 ms", "0.31 s", "1.5 s", "12 s". */
void summary_put_duration_us(FILE *f, double us) {
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

void summary_put_bytes(FILE *f, double b) {
        const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
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
