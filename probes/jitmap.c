/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "probes/jitmap.h"

typedef struct JitEntry {
        uint64_t start, end;
        uint32_t line; /* its order in the file: a later one is newer code */
        uint32_t name; /* into pool */
} JitEntry;

struct JitMap {
        JitEntry *entries;
        size_t n, cap;
        char *pool;
        size_t n_pool, cap_pool;
        size_t skipped;
        bool truncated;
};

static bool hex_field(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;
        size_t digits = 0;

        if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        for (; s < end && *s != ' '; s++, digits++) {
                int d = parse_hex_digit(*s);
                if (d < 0 || digits == 16)
                        return false;
                v = v << 4 | (uint64_t) d;
        }
        if (digits == 0 || s == end)
                return false;
        *p = s + 1;
        *ret = v;
        return true;
}

static int add(JitMap *m, uint64_t start, uint64_t size, const char *name, size_t name_len) {
        size_t len = MIN(name_len, (size_t) JITMAP_NAME_MAX - 1);

        if (m->n == m->cap) {
                size_t cap = m->cap ? 2 * m->cap : 256;
                JitEntry *t = realloc(m->entries, cap * sizeof *t);
                if (!t)
                        return -ENOMEM;
                m->entries = t;
                m->cap = cap;
        }
        if (m->n_pool + len + 1 > m->cap_pool) {
                size_t cap = MAX(2 * m->cap_pool, m->n_pool + len + 1 + 4096);
                char *t = realloc(m->pool, cap);
                if (!t)
                        return -ENOMEM;
                m->pool = t;
                m->cap_pool = cap;
        }
        memcpy(m->pool + m->n_pool, name, len);
        m->pool[m->n_pool + len] = '\0';
        m->entries[m->n] = (JitEntry) {
                .start = start, .end = start + size, .line = (uint32_t) m->n, .name = (uint32_t) m->n_pool
        };
        m->n++;
        m->n_pool += len + 1;
        return 0;
}

/* One line, without its newline. */
static int parse_line(JitMap *m, const char *s, const char *end) {
        uint64_t start, size;

        if (!hex_field(&s, end, &start) || !hex_field(&s, end, &size) || size == 0 || start + size < start ||
            s >= end || memchr(s, '\0', (size_t) (end - s))) {
                m->skipped++;
                return 0;
        }
        return add(m, start, size, s, (size_t) (end - s));
}

static int cmp_entries(const void *x, const void *y) {
        const JitEntry *a = x, *b = y;
        if (a->start != b->start)
                return a->start < b->start ? -1 : 1;
        return (a->line > b->line) - (a->line < b->line);
}

int jitmap_parse_buf(const char *buf, size_t len, JitMap **ret) {
        JitMap *m = calloc(1, sizeof *m);
        const char *p = buf, *end = buf + len;
        int r = 0;

        if (!m)
                return -ENOMEM;
        const char *line, *le;
        while (r >= 0 && line_next(&p, end, &line, &le)) {
                if (m->n == JITMAP_ENTRIES_MAX) {
                        m->truncated = true;
                        break;
                }
                r = parse_line(m, line, le);
        }
        if (r < 0) {
                jitmap_free(m);
                return r;
        }
        if (m->n > 1)
                qsort(m->entries, m->n, sizeof *m->entries, cmp_entries);
        *ret = m;
        return 0;
}

JitMap *jitmap_free(JitMap *m) {
        if (m) {
                free(m->entries);
                free(m->pool);
                free(m);
        }
        return NULL;
}

size_t jitmap_count(const JitMap *m) {
        return m->n;
}

size_t jitmap_skipped(const JitMap *m) {
        return m->skipped;
}

bool jitmap_truncated(const JitMap *m) {
        return m->truncated;
}

/* How far back from the last entry starting at or before an address the newest cover is looked
 * for: JIT code reused over older code makes a few overlaps, not thousands. */
#define JITMAP_LOOKBACK 32

const char *jitmap_find(const JitMap *m, uint64_t addr, uint64_t *ret_offset) {
        size_t lo = 0, hi = m->n;
        const JitEntry *best = NULL;

        while (lo < hi) { /* the first entry starting past addr */
                size_t mid = lo + (hi - lo) / 2;
                if (m->entries[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        for (size_t i = lo, k = 0; i > 0 && k < JITMAP_LOOKBACK; i--, k++) {
                const JitEntry *e = &m->entries[i - 1];
                if (addr < e->end && (!best || e->line > best->line))
                        best = e;
        }
        if (!best)
                return NULL;
        if (ret_offset)
                *ret_offset = addr - best->start;
        return m->pool + best->name;
}

pid_t jitmap_parse_nspid(const char *buf, size_t len) {
        const char *q, *le;
        long last = 0;

        if (line_find(buf, len, "NSpid:", &q, &le) < 0)
                return 0;
        while (q < le) {
                while (q < le && (*q == ' ' || *q == '\t'))
                        q++;
                long v = 0;
                const char *d = q;
                while (q < le && *q >= '0' && *q <= '9' && v < (1L << 31))
                        v = v * 10 + (*q++ - '0');
                if (q == d || v >= (1L << 31))
                        return 0;
                last = v;
        }
        return (pid_t) last;
}

static int open_map(int proc_fd, pid_t pid, uid_t *ret_owner) {
        char status[4096];
        char path[64];
        struct stat st;
        int root, fd;

        snprintf(path, sizeof path, "%d", (int) pid);
        if (fstatat(proc_fd, path, &st, 0) < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        *ret_owner = st.st_uid; /* the process's euid (a dumpable process's /proc entry is its) */
        snprintf(path, sizeof path, "%d/status", (int) pid);
        ssize_t n = read_file_at(proc_fd, path, status, sizeof status);
        pid_t nspid = n > 0 ? jitmap_parse_nspid(status, (size_t) n) : 0;
        snprintf(path, sizeof path, "%d/root", (int) pid);
        root = openat(proc_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        snprintf(path, sizeof path, "tmp/perf-%d.map", (int) (nspid > 0 ? nspid : pid));
        /* Never a FIFO's open that waits, a symlink or a way out of the process's root. */
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
        fd = (int) syscall(SYS_openat2, root, path, &how, sizeof how);
        int r = fd < 0 ? -errno : fd;
        close(root);
        return r == -ELOOP ? -EPERM : r;
}

int jitmap_load(int proc_fd, pid_t pid, JitMap **ret) {
        uid_t owner;
        struct stat st;
        int fd = open_map(proc_fd, pid, &owner);

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_uid != owner && st.st_uid != 0)) {
                close(fd);
                return -EPERM;
        }
        size_t size = (size_t) MIN((uint64_t) st.st_size, (uint64_t) JITMAP_BYTES_MAX);
        char *buf = malloc(size + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        ssize_t n = read_fd_full(fd, buf, size + 1); /* it keeps a byte for a NUL */
        close(fd);
        if (n < 0) {
                free(buf);
                return (int) n;
        }
        /* Cut at the last whole line (the writer appends as it compiles). */
        while (n > 0 && buf[n - 1] != '\n')
                n--;
        int r = jitmap_parse_buf(buf, (size_t) n, ret);
        if (r >= 0 && (uint64_t) st.st_size > JITMAP_BYTES_MAX)
                (*ret)->truncated = true;
        free(buf);
        return r;
}
