/* SPDX-License-Identifier: MIT */
/* The /proc/<pid>/maps parser: whatever a file name holds, the rows kept are sorted and apart,
 * within the bounds, their paths NUL-terminated inside the pool, and procmaps_find() finds each
 * row at its edges. */
#include <stdlib.h>
#include <string.h>

#include "probes/procmaps.h"
#include "tests/fuzz/fuzz.h"

static void check_row(const ProcMaps *m, size_t i, size_t pool_len) {
        const ProcMap *row = &m->rows[i];

        if (row->start >= row->end || (i > 0 && row->start < m->rows[i - 1].end))
                abort();
        if (row->path < m->pool || row->path >= m->pool + pool_len)
                abort();
        if (strnlen(row->path, PROCMAPS_PATH_MAX) >= PROCMAPS_PATH_MAX || (row->path_cut && row->path[0]))
                abort();
        if (row->inode == 0 && strcmp(row->path, "[vdso]") != 0 && strcmp(row->path, "[vsyscall]") != 0)
                abort();
        if (procmaps_find(m, row->start) != row || procmaps_find(m, row->end - 1) != row)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProcMaps m = {};
        size_t pool_len = 0;

        if (procmaps_parse_buf((const char *) data, size, &m) < 0)
                return 0;
        if (m.n > PROCMAPS_ROWS_MAX || (m.n > 0 && !m.pool))
                abort();
        /* The pool holds each row's path and its NUL, one after the other. */
        for (size_t i = 0; i < m.n; i++)
                pool_len += strlen(m.rows[i].path) + 1;
        for (size_t i = 0; i < m.n; i++)
                check_row(&m, i, pool_len);
        if (m.n > 0 && m.rows[0].start > 0 && procmaps_find(&m, m.rows[0].start - 1))
                abort();
        procmaps_clear(&m);
        return 0;
}
