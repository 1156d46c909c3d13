/* SPDX-License-Identifier: MIT */
/* The /proc/kallsyms parser: whatever the bytes, the table is the same fed in chunks as whole, and
 * at every address a line names (and one byte either side) a lookup gives a printable name within
 * the bounds, whose own address gives it again at offset 0, and a module name within its bound. */
#include <stdlib.h>
#include <string.h>

#include "probes/kallsyms.h"
#include "tests/fuzz/fuzz.h"

static bool printable(const char *s, size_t max) {
        size_t n = strnlen(s, max);

        if (n == 0 || n >= max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] >= 0x7f)
                        return false;
        return true;
}

static void check_addr(const KallSyms *k, const KallSyms *c, uint64_t addr) {
        const char *module = NULL, *cmodule = NULL, *name, *cname, *again;
        uint64_t offset = 0, coffset = 0, offset0 = 1;

        name = kallsyms_find(k, addr, &offset, &module);
        cname = kallsyms_find(c, addr, &coffset, &cmodule);
        if (!name != !cname)
                abort();
        if (!name)
                return;
        if (strcmp(name, cname) != 0 || offset != coffset || !module != !cmodule ||
            (module && strcmp(module, cmodule) != 0))
                abort();
        if (!printable(name, KALLSYMS_NAME_MAX) || (module && !printable(module, KALLSYMS_MODULE_NAME_MAX)))
                abort();
        if (offset > addr)
                abort();
        again = kallsyms_find(k, addr - offset, &offset0, NULL);
        if (!again || strcmp(again, name) != 0 || offset0 != 0)
                abort();
}

/* The leading hex digits of the line at p (at most 16), as the parser reads an address. */
static uint64_t line_addr(const uint8_t *p, const uint8_t *end) {
        uint64_t v = 0;

        for (int n = 0; p < end && n < 16; p++, n++) {
                int d = *p >= '0' && *p <= '9'   ? *p - '0'
                        : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                        : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
                                                 : -1;

                if (d < 0)
                        break;
                v = v * 16 + (uint64_t) d;
        }
        return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        KallSyms *k = NULL, *c = NULL;
        size_t chunk = size > 0 ? 1 + data[0] % 61 : 1;
        int r = kallsyms_parse_buf((const char *) data, size, &k), rc;

        rc = kallsyms_parse_chunked((const char *) data, size, chunk, &c);
        if (r != rc || (r < 0) != !k || (rc < 0) != !c)
                abort();
        if (r < 0) {
                kallsyms_free(k);
                kallsyms_free(c);
                return 0;
        }
        if (kallsyms_count(k) != kallsyms_count(c) || kallsyms_skipped(k) != kallsyms_skipped(c) ||
            kallsyms_truncated(k) != kallsyms_truncated(c) || kallsyms_count(k) > KALLSYMS_SYMS_MAX)
                abort();
        for (const uint8_t *p = data, *end = data + size; p < end;) {
                const uint8_t *nl = memchr(p, '\n', (size_t) (end - p));
                uint64_t a = line_addr(p, end);

                check_addr(k, c, a);
                check_addr(k, c, a + 1);
                check_addr(k, c, a - 1);
                p = nl ? nl + 1 : end;
        }
        kallsyms_free(k);
        kallsyms_free(c);
        return 0;
}
