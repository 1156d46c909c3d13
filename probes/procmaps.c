/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/procmaps.h"

#define DELETED_SUFFIX " (deleted)"
#define READ_CHUNK (64 * 1024)

/* The maps being built, with the capacities of its arrays and the end of the last row read. */
typedef struct Builder {
        ProcMaps m;
        size_t rows_cap, pool_cap, pool_len;
        uint64_t last_end;
} Builder;

/* The hex digits at the start of [*p, end), at least one, into *ret (at most max), *p past them.
 * 0, -EINVAL or -ERANGE. */
static int scan_hex(const char **p, const char *end, uint64_t max, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        int d;

        if (s >= end || parse_hex_digit(*s) < 0)
                return -EINVAL;
        for (; s < end && (d = parse_hex_digit(*s)) >= 0; s++) {
                if (v > (max - (uint64_t) d) / 16)
                        return -ERANGE;
                v = v * 16 + (uint64_t) d;
        }
        *p = s;
        *ret = v;
        return 0;
}

/* The byte c at *p, and *p past it. */
static bool scan_char(const char **p, const char *end, char c) {
        if (*p >= end || **p != c)
                return false;
        (*p)++;
        return true;
}

/* "rwxp": each letter or '-', the last 's' (shared) or 'p' (private). */
static int scan_perms(const char **p, const char *end, ProcMap *row) {
        const char *s = *p;

        if (end - s < 4 || (s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
            (s[2] != 'x' && s[2] != '-') || (s[3] != 's' && s[3] != 'p'))
                return -EINVAL;
        row->read = s[0] == 'r';
        row->write = s[1] == 'w';
        row->exec = s[2] == 'x';
        row->shared = s[3] == 's';
        *p = s + 4;
        return 0;
}

/* The columns before the path ("start-end perms offset major:minor inode") of [*p, end) into
 * *row, *p past the inode. 0 or -EINVAL/-ERANGE. */
static int scan_columns(const char **p, const char *end, ProcMap *row) {
        uint64_t major, minor;
        int r;

        if ((r = scan_hex(p, end, UINT64_MAX, &row->start)) < 0)
                return r;
        if (!scan_char(p, end, '-'))
                return -EINVAL;
        if ((r = scan_hex(p, end, UINT64_MAX, &row->end)) < 0)
                return r;
        if (!scan_char(p, end, ' ') || scan_perms(p, end, row) < 0 || !scan_char(p, end, ' '))
                return -EINVAL;
        if ((r = scan_hex(p, end, UINT64_MAX, &row->offset)) < 0)
                return r;
        if (!scan_char(p, end, ' '))
                return -EINVAL;
        if ((r = scan_hex(p, end, UINT32_MAX, &major)) < 0)
                return r;
        if (!scan_char(p, end, ':'))
                return -EINVAL;
        if ((r = scan_hex(p, end, UINT32_MAX, &minor)) < 0)
                return r;
        if (!scan_char(p, end, ' '))
                return -EINVAL;
        row->dev_major = (uint32_t) major;
        row->dev_minor = (uint32_t) minor;
        return parse_u64_prefix(*p, end, &row->inode, p);
}

/* One line [s, end) without its '\n' into *ret_row, with its path as [*ret_path, +*ret_path_len)
 * (" (deleted)" taken off). The path is everything after the whitespace that follows the inode:
 * the kernel pads to a column (seq_pad()), and a name may hold spaces, trailing ones included.
 * 0 or -EINVAL/-ERANGE; outputs written only on success. */
static int parse_line(const char *s, const char *end, ProcMap *ret_row, const char **ret_path, size_t *ret_path_len) {
        const size_t suffix_len = strlen(DELETED_SUFFIX);
        ProcMap row = {};
        const char *p = s;
        size_t len;
        int r;

        /* The kernel writes no NUL; one here would cut the path short for whoever reads it. */
        if (memchr(s, '\0', (size_t) (end - s)))
                return -EINVAL;
        if ((r = scan_columns(&p, end, &row)) < 0)
                return r;
        if (row.start >= row.end)
                return -EINVAL;
        if (p < end && *p != ' ')
                return -EINVAL;
        while (p < end && *p == ' ')
                p++;
        len = (size_t) (end - p);
        if (len >= suffix_len && memcmp(end - suffix_len, DELETED_SUFFIX, suffix_len) == 0) {
                row.deleted = true;
                len -= suffix_len;
        }
        row.path_cut = len > PROCMAPS_PATH_MAX - 1;
        *ret_row = row;
        *ret_path = p;
        *ret_path_len = row.path_cut ? 0 : len;
        return 0;
}

/* What an unwinder maps addresses to: a file's pages, or the kernel's code pages in the process
 * (the vDSO, and the legacy vsyscall page, which has no vma: fs/proc/task_mmu.c shows the gate
 * vma last). */
static bool row_wanted(const ProcMap *row, const char *path, size_t path_len) {
        if (row->inode != 0)
                return true;
        return (path_len == strlen("[vdso]") && memcmp(path, "[vdso]", path_len) == 0) ||
               (path_len == strlen("[vsyscall]") && memcmp(path, "[vsyscall]", path_len) == 0);
}

/* Appends row with its path (copied into the pool, NUL-terminated). 0, -ENOMEM, or -ENOSPC at
 * PROCMAPS_ROWS_MAX rows. */
static int builder_add(Builder *b, const ProcMap *row, const char *path, size_t path_len) {
        int r;

        if (b->m.n >= PROCMAPS_ROWS_MAX)
                return -ENOSPC;
        r = array_grow((void **) &b->m.rows, &b->rows_cap, b->m.n, 64, sizeof(ProcMap));
        if (r < 0)
                return r;
        r = array_reserve((void **) &b->m.pool, &b->pool_cap, b->pool_len + path_len + 1, 1);
        if (r < 0)
                return r;
        memcpy(b->m.pool + b->pool_len, path, path_len);
        b->m.pool[b->pool_len + path_len] = '\0';
        b->pool_len += path_len + 1;
        b->m.rows[b->m.n++] = *row;
        return 0;
}

/* Points each row at its path: the pool moved as it grew, so the paths are found again in the
 * order they were added, each after the previous one's NUL (no path holds a NUL: parse_line()). */
static void builder_link_paths(Builder *b) {
        const char *p = b->m.pool;

        for (size_t i = 0; i < b->m.n; i++) {
                b->m.rows[i].path = p;
                p += strlen(p) + 1;
        }
}

/* One line into b: kept, passed over (not wanted) or skipped and counted. 0, -ENOMEM, -ENOSPC
 * (the rows are full). */
static int builder_line(Builder *b, const char *s, const char *end) {
        const char *path;
        size_t path_len;
        ProcMap row;

        if (parse_line(s, end, &row, &path, &path_len) < 0) {
                b->m.n_skipped++;
                return 0;
        }
        /* The kernel walks the vmas in order, and a read that resumes goes on after the last end
         * it showed (fs/proc/task_mmu.c m_start()): a row that starts before it is not the kernel's. */
        if (row.start < b->last_end) {
                b->m.n_skipped++;
                return 0;
        }
        b->last_end = row.end;
        if (!row_wanted(&row, path, path_len))
                return 0;
        return builder_add(b, &row, path, path_len);
}

/* buf[0..len), more when the file went on past it (its last line, cut there, is dropped). */
static int parse_bounded(const char *buf, size_t len, bool more, ProcMaps *ret) {
        Builder b = {};
        const char *p = buf, *end, *line, *line_end;

        if (more) {
                const char *nl = len > 0 ? memrchr(buf, '\n', len) : NULL;

                len = nl ? (size_t) (nl - buf) + 1 : 0;
                b.m.truncated = true;
        }
        end = buf + len;
        while (line_next(&p, end, &line, &line_end)) {
                int r = builder_line(&b, line, line_end);

                if (r == -ENOSPC) {
                        b.m.truncated = true;
                        break;
                }
                if (r < 0) {
                        procmaps_clear(&b.m);
                        return r;
                }
        }
        builder_link_paths(&b);
        *ret = b.m;
        return 0;
}

int procmaps_parse_buf(const char *buf, size_t len, ProcMaps *ret) {
        assert(buf || len == 0);
        return parse_bounded(buf, MIN(len, (size_t) PROCMAPS_BYTES_MAX), len > PROCMAPS_BYTES_MAX, ret);
}

/* All of fd up to PROCMAPS_BYTES_MAX bytes, in a buffer grown by chunks: *ret_buf (to free),
 * *ret_len, and *ret_more when a byte followed the bound. 0 or -errno. */
static int read_bounded(int fd, char **ret_buf, size_t *ret_len, bool *ret_more) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, cap = 0;
        bool more = false;

        for (;;) {
                ssize_t k;

                if (n == cap && cap < PROCMAPS_BYTES_MAX) {
                        size_t c = MIN(cap ? cap * 2 : (size_t) READ_CHUNK, (size_t) PROCMAPS_BYTES_MAX);
                        char *q = realloc(buf, c);

                        if (!q)
                                return -ENOMEM;
                        buf = q;
                        cap = c;
                }
                if (n == cap) {
                        char probe;

                        /* Full: one byte more says whether the file went on. */
                        do
                                k = read(fd, &probe, 1);
                        while (k < 0 && errno == EINTR);
                        if (k < 0)
                                return negative_errno();
                        more = k > 0;
                        break;
                }
                k = read(fd, buf + n, cap - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return negative_errno();
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        *ret_buf = TAKE_PTR(buf);
        *ret_len = n;
        *ret_more = more;
        return 0;
}

int procmaps_read(int proc_fd, pid_t pid, ProcMaps *ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        char path[32];
        size_t len;
        bool more;
        int r;

        snprintf(path, sizeof path, "%d/maps", (int) pid);
        fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                /* A process that exited lost its directory (ENOENT) or is losing it (ESRCH). */
                return errno == ENOENT ? -ESRCH : negative_errno();
        r = read_bounded(fd, &buf, &len, &more);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        return parse_bounded(buf, len, more, ret);
}

void procmaps_clear(ProcMaps *m) {
        if (!m)
                return;
        free(m->rows);
        free(m->pool);
        *m = (ProcMaps) {};
}

const ProcMap *procmaps_find(const ProcMaps *m, uint64_t addr) {
        size_t lo = 0, hi;

        if (!m)
                return NULL;
        hi = m->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const ProcMap *row = &m->rows[mid];

                if (addr < row->start)
                        hi = mid;
                else if (addr >= row->end)
                        lo = mid + 1;
                else
                        return row;
        }
        return NULL;
}
