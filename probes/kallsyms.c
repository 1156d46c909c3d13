/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "base/macro.h"
#include "probes/kallsyms.h"
#include "probes/ksymline.h"

#define READ_CHUNK (64 * 1024)
#define MODULE_HASH_SIZE (2 * KALLSYMS_MODULES_MAX) /* a power of two, at most half full */
_Static_assert(KALLSYMS_MODULE_NAME_MAX == KSYMLINE_MODULE_NAME_MAX, "one bound of module names");

#define MODULE_NONE UINT16_MAX /* an empty slot of the hash */
#define NO_NAME UINT32_MAX     /* the name_off of a bound, once sealed */

/* One symbol, a text symbol or a bound (a symbol of another type, no name). module 0 is the core
 * kernel, i + 1 modules[i]. */
typedef struct KallSym {
        uint64_t addr;
        uint32_t name_off; /* into pool, or NO_NAME; while building, its order in the file */
        uint16_t module;
        /* While building, the rank among symbols at one address: 0 a bound, T 4, W 3, t 2, w 1.
         * Sealed, a text symbol's size when a bound follows it within 64 KiB (folded into it), or 0:
         * the next entry bounds it. */
        uint16_t tag;
} KallSym;

typedef struct KallModule {
        char name[KALLSYMS_MODULE_NAME_MAX];
        uint64_t lo, hi; /* its lowest and highest symbol, of any type */
} KallModule;

struct KallSyms {
        KallSym *syms; /* sorted by address, one per address, no two bounds in a row */
        size_t n, n_text;
        char *pool;
        size_t pool_len;
        KallModule *modules;
        size_t n_modules;
        uint64_t stext, etext; /* [stext, etext) when has_core */
        bool has_core;
        size_t n_skipped;
        bool truncated;
};

/* The table being built, with what only the building needs: the capacities, the module hash, the
 * partial line a chunk ended in, and what the file said so far. */
typedef struct Builder {
        KallSyms *k;
        size_t syms_cap, pool_cap, modules_cap;
        uint16_t *module_hash;
        uint16_t last_module;
        bool has_stext, has_etext;
        bool any_addr; /* an address that is not 0 */
        size_t n_read; /* lines read as symbols */
        bool full;     /* past a bound: read no more */
        char line[KALLSYMS_LINE_MAX];
        size_t line_len;
        bool line_long; /* the partial line is past KALLSYMS_LINE_MAX - 1 bytes: skipped at its end */
} Builder;

/* The rank of a symbol of type, named name[0..len): 0 for a bound. The 16 bytes of padding before
 * each function (__pfx_, CONFIG_FUNCTION_PADDING_ALIGNMENT: half the text symbols of 6.18) and
 * clang's CFI preambles (__cfi_) are only bounds: no return address points into them (a pc sampled
 * in a call-depth thunk there goes unnamed), and naming them would double the names kept. */
static uint16_t text_rank(char type, const char *name, size_t len) {
        if ((len > strlen("__pfx_") && memcmp(name, "__pfx_", strlen("__pfx_")) == 0) ||
            (len > strlen("__cfi_") && memcmp(name, "__cfi_", strlen("__cfi_")) == 0))
                return 0;
        switch (type) {
        case 'T':
                return 4;
        case 'W':
                return 3;
        case 't':
                return 2;
        case 'w':
                return 1;
        default:
                return 0;
        }
}

static size_t module_hash(const char *name, size_t len) {
        uint32_t h = 2166136261u; /* FNV-1a */

        for (size_t i = 0; i < len; i++)
                h = (h ^ (uint8_t) name[i]) * 16777619u;
        return h & (MODULE_HASH_SIZE - 1);
}

static bool module_is(const KallModule *m, const char *name, size_t len) {
        return strlen(m->name) == len && memcmp(m->name, name, len) == 0;
}

/* The index (1-based) of the module named name[0..len), added if new. 0 or -ENOMEM, -ENOSPC past
 * KALLSYMS_MODULES_MAX. The file lists a module's symbols together: the last one is asked first. */
static int builder_module(Builder *b, const char *name, size_t len, uint16_t *ret) {
        KallSyms *k = b->k;
        size_t h;
        int r;

        if (b->last_module > 0 && module_is(&k->modules[b->last_module - 1], name, len)) {
                *ret = b->last_module;
                return 0;
        }
        if (!b->module_hash) {
                b->module_hash = malloc(MODULE_HASH_SIZE * sizeof(uint16_t));
                if (!b->module_hash)
                        return -ENOMEM;
                memset(b->module_hash, 0xff, MODULE_HASH_SIZE * sizeof(uint16_t));
        }
        for (h = module_hash(name, len); b->module_hash[h] != MODULE_NONE; h = (h + 1) & (MODULE_HASH_SIZE - 1))
                if (module_is(&k->modules[b->module_hash[h]], name, len)) {
                        *ret = b->last_module = (uint16_t) (b->module_hash[h] + 1);
                        return 0;
                }
        if (k->n_modules >= KALLSYMS_MODULES_MAX)
                return -ENOSPC;
        r = array_grow((void **) &k->modules, &b->modules_cap, k->n_modules, 16, sizeof(KallModule));
        if (r < 0)
                return r;
        memcpy(k->modules[k->n_modules].name, name, len);
        k->modules[k->n_modules].name[len] = '\0';
        k->modules[k->n_modules].lo = UINT64_MAX;
        k->modules[k->n_modules].hi = 0;
        b->module_hash[h] = (uint16_t) k->n_modules++;
        *ret = b->last_module = (uint16_t) k->n_modules;
        return 0;
}

/* The name of l into the pool, cut and marked past KALLSYMS_NAME_MAX - 1 bytes; its offset. */
static int builder_name(Builder *b, const KsymLine *l, uint32_t *ret_off) {
        const size_t mark = strlen(KALLSYMS_CUT_MARK);
        bool cut = l->name_len > KALLSYMS_NAME_MAX - 1;
        size_t len = cut ? KALLSYMS_NAME_MAX - 1 - mark : l->name_len;
        KallSyms *k = b->k;
        int r;

        r = array_reserve((void **) &k->pool, &b->pool_cap, k->pool_len + KALLSYMS_NAME_MAX, 1);
        if (r < 0)
                return r;
        memcpy(k->pool + k->pool_len, l->name, len);
        if (cut)
                memcpy(k->pool + k->pool_len + len, KALLSYMS_CUT_MARK, mark);
        *ret_off = (uint32_t) k->pool_len;
        k->pool_len += (cut ? len + mark : len) + 1;
        k->pool[k->pool_len - 1] = '\0';
        return 0;
}

/* The core kernel's text range, from the first _stext and _etext it lists. */
static void builder_core_range(Builder *b, const KsymLine *l) {
        if (l->name_len == strlen("_stext") && memcmp(l->name, "_stext", l->name_len) == 0 && !b->has_stext) {
                b->k->stext = l->addr;
                b->has_stext = true;
        }
        if (l->name_len == strlen("_etext") && memcmp(l->name, "_etext", l->name_len) == 0 && !b->has_etext) {
                b->k->etext = l->addr;
                b->has_etext = true;
        }
}

/* One parsed line into b. 0, -ENOMEM, -ENOSPC (a bound is reached). */
static int builder_add(Builder *b, const KsymLine *l) {
        KallSyms *k = b->k;
        KallSym s = { .addr = l->addr, .tag = text_rank(l->type, l->name, l->name_len) };
        int r;

        if (k->n >= KALLSYMS_SYMS_MAX)
                return -ENOSPC;
        if (l->module_len > 0) {
                KallModule *m;

                r = builder_module(b, l->module, l->module_len, &s.module);
                if (r < 0)
                        return r;
                m = &k->modules[s.module - 1];
                m->lo = MIN(m->lo, l->addr);
                m->hi = MAX(m->hi, l->addr);
        } else
                builder_core_range(b, l);
        r = array_grow((void **) &k->syms, &b->syms_cap, k->n, 4096, sizeof(KallSym));
        if (r < 0)
                return r;
        /* A bound's name is not kept; its order among those at its address does not matter. */
        if (s.tag > 0 && (r = builder_name(b, l, &s.name_off)) < 0)
                return r;
        k->syms[k->n++] = s;
        b->any_addr = b->any_addr || l->addr != 0;
        b->n_read++;
        return 0;
}

/* One whole line [s, end) without its '\n': read or skipped and counted. 0, -ENOMEM; at a bound
 * b is full and truncated. */
static int builder_line(Builder *b, const char *s, const char *end) {
        KsymLine l;
        int r;

        if ((size_t) (end - s) >= KALLSYMS_LINE_MAX || ksymline_parse(s, end, &l) < 0) {
                b->k->n_skipped++;
                return 0;
        }
        r = builder_add(b, &l);
        if (r == -ENOSPC) {
                b->full = true;
                b->k->truncated = true;
                return 0;
        }
        return r;
}

/* The bytes [p, end) to the partial line; a line past the bound is only remembered as long. */
static void builder_carry(Builder *b, const char *p, const char *end) {
        size_t n = (size_t) (end - p);

        if (b->line_long || b->line_len + n > sizeof b->line) {
                b->line_long = true;
                return;
        }
        memcpy(b->line + b->line_len, p, n);
        b->line_len += n;
}

/* The partial line, ended: read, or skipped when long. */
static int builder_end_line(Builder *b) {
        int r = 0;

        if (b->line_long)
                b->k->n_skipped++;
        else
                r = builder_line(b, b->line, b->line + b->line_len);
        b->line_len = 0;
        b->line_long = false;
        return r;
}

/* The next bytes of the file: each line they end is read, the rest kept for the next chunk. */
static int builder_feed(Builder *b, const char *p, size_t len) {
        const char *end = p + len;

        while (p < end && !b->full) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                int r;

                if (!nl) {
                        builder_carry(b, p, end);
                        return 0;
                }
                if (b->line_len == 0 && !b->line_long)
                        r = builder_line(b, p, nl);
                else {
                        builder_carry(b, p, nl);
                        r = builder_end_line(b);
                }
                if (r < 0)
                        return r;
                p = nl + 1;
        }
        return 0;
}

static int sym_compare(const void *a, const void *b) {
        const KallSym *x = a, *y = b;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        if (x->tag != y->tag)
                return x->tag > y->tag ? -1 : 1;
        return x->name_off < y->name_off ? -1 : x->name_off > y->name_off;
}

/* Sorted, one symbol per address (the first of the order: sym_compare()), and of bounds only the
 * first after a text symbol: the others bound nothing. Each entry then in its sealed form. */
static void table_compact(KallSyms *k) {
        size_t n = 0;

        if (k->n > 1)
                qsort(k->syms, k->n, sizeof(KallSym), sym_compare);
        for (size_t i = 0; i < k->n; i++) {
                KallSym s = k->syms[i];

                if (n > 0 && s.addr == k->syms[n - 1].addr)
                        continue;
                if (s.tag == 0 && (n == 0 || k->syms[n - 1].name_off == NO_NAME))
                        continue;
                if (s.tag == 0)
                        s.name_off = NO_NAME;
                s.tag = 0;
                k->syms[n++] = s;
        }
        k->n = n;
}

/* A bound within 64 KiB of the text symbol before it becomes that symbol's size: one entry less. */
static void table_fold(KallSyms *k) {
        size_t n = 0;

        k->n_text = 0;
        for (size_t i = 0; i < k->n; i++) {
                KallSym *last = n > 0 ? &k->syms[n - 1] : NULL;
                const KallSym *s = &k->syms[i];

                if (s->name_off == NO_NAME && last && last->name_off != NO_NAME && s->addr - last->addr <= UINT16_MAX) {
                        last->tag = (uint16_t) (s->addr - last->addr);
                        continue;
                }
                k->n_text += s->name_off != NO_NAME;
                k->syms[n++] = *s;
        }
        k->n = n;
}

/* The array at its size: it grew by doubling, and compacting dropped the duplicates. */
static void table_shrink(KallSyms *k) {
        KallSym *syms;

        if (k->n == 0) {
                k->syms = mfree(k->syms);
                return;
        }
        syms = realloc(k->syms, k->n * sizeof(KallSym));
        if (syms)
                k->syms = syms;
}

/* The names of the symbols kept, into a pool of their own when the dropped ones wasted a quarter
 * of it (a million lines of one address keep one name), else the pool at its size. 0 or -ENOMEM. */
static int table_repool(KallSyms *k) {
        size_t need = 0, len = 0;
        char *pool;

        for (size_t i = 0; i < k->n; i++)
                if (k->syms[i].name_off != NO_NAME)
                        need += strlen(k->pool + k->syms[i].name_off) + 1;
        if (need == 0) {
                k->pool = mfree(k->pool);
                k->pool_len = 0;
                return 0;
        }
        if (need > k->pool_len - k->pool_len / 4) {
                pool = realloc(k->pool, k->pool_len);
                k->pool = pool ? pool : k->pool;
                return 0;
        }
        pool = malloc(need);
        if (!pool)
                return -ENOMEM;
        for (size_t i = 0; i < k->n; i++) {
                size_t n;

                if (k->syms[i].name_off == NO_NAME)
                        continue;
                n = strlen(k->pool + k->syms[i].name_off) + 1;
                memcpy(pool + len, k->pool + k->syms[i].name_off, n);
                k->syms[i].name_off = (uint32_t) len;
                len += n;
        }
        free(k->pool);
        k->pool = pool;
        k->pool_len = len;
        return 0;
}

/* The last line (more: the file went on past the bytes read, and that line is cut), then the table
 * sealed into *ret, taken from b. 0, -EPERM, -ENOMEM. */
static int builder_finish(Builder *b, bool more, KallSyms **ret) {
        KallSyms *k = b->k;
        int r;

        if (more)
                k->truncated = true;
        else if ((b->line_len > 0 || b->line_long) && !b->full) {
                r = builder_end_line(b);
                if (r < 0)
                        return r;
        }
        /* kernel-facts.md: kallsyms: a reader the kernel hides addresses from reads every one as 0. */
        if (b->n_read > 0 && !b->any_addr)
                return -EPERM;
        k->has_core = b->has_stext && b->has_etext && k->stext < k->etext;
        table_compact(k);
        table_fold(k);
        table_shrink(k);
        r = table_repool(k);
        if (r < 0)
                return r;
        b->k = NULL;
        *ret = k;
        return 0;
}

static int builder_new(Builder **ret) {
        Builder *b = calloc(1, sizeof(Builder));

        if (!b)
                return -ENOMEM;
        b->k = calloc(1, sizeof(KallSyms));
        if (!b->k) {
                free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

static Builder *builder_free(Builder *b) {
        if (!b)
                return NULL;
        free(b->module_hash);
        kallsyms_free(b->k);
        free(b);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(Builder *, builder_free);

int kallsyms_parse_chunked(const char *buf, size_t len, size_t chunk, KallSyms **ret) {
        _cleanup_(builder_freep) Builder *b = NULL;
        size_t n = MIN(len, (size_t) KALLSYMS_BYTES_MAX);
        int r;

        assert(buf || len == 0);
        assert(chunk > 0);
        r = builder_new(&b);
        if (r < 0)
                return r;
        for (size_t off = 0, step; off < n && !b->full; off += step) {
                step = MIN(chunk, n - off);
                r = builder_feed(b, buf + off, step);
                if (r < 0)
                        return r;
        }
        return builder_finish(b, len > KALLSYMS_BYTES_MAX, ret);
}

int kallsyms_parse_buf(const char *buf, size_t len, KallSyms **ret) {
        return kallsyms_parse_chunked(buf, len, MAX(len, (size_t) 1), ret);
}

/* One read(2) of fd into buf[0..size), EINTR retried. The bytes read or -errno. */
static ssize_t read_some(int fd, char *buf, size_t size) {
        ssize_t k;

        do
                k = read(fd, buf, size);
        while (k < 0 && errno == EINTR);
        return k < 0 ? negative_errno() : k;
}

/* All of fd up to KALLSYMS_BYTES_MAX bytes into b, chunk by chunk; *ret_more when a byte followed
 * the bound. 0 or -errno. */
static int read_into(int fd, Builder *b, bool *ret_more) {
        _cleanup_free_ char *buf = malloc(READ_CHUNK);
        size_t total = 0;
        ssize_t k;
        int r;

        if (!buf)
                return -ENOMEM;
        while (total < KALLSYMS_BYTES_MAX && !b->full) {
                k = read_some(fd, buf, MIN((size_t) READ_CHUNK, KALLSYMS_BYTES_MAX - total));
                if (k < 0)
                        return (int) k;
                if (k == 0)
                        break;
                total += (size_t) k;
                r = builder_feed(b, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
        *ret_more = false;
        if (total == KALLSYMS_BYTES_MAX && !b->full) {
                /* Full: one byte more says whether the file went on. */
                k = read_some(fd, buf, 1);
                if (k < 0)
                        return (int) k;
                *ret_more = k > 0;
        }
        return 0;
}

int kallsyms_load(int proc_fd, KallSyms **ret) {
        _cleanup_(builder_freep) Builder *b = NULL;
        _cleanup_close_ int fd = -EBADF;
        bool more;
        int r;

        fd = openat(proc_fd, "kallsyms", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        r = builder_new(&b);
        if (r < 0)
                return r;
        r = read_into(fd, b, &more);
        if (r < 0)
                return r;
        return builder_finish(b, more, ret);
}

KallSyms *kallsyms_free(KallSyms *k) {
        if (!k)
                return NULL;
        free(k->syms);
        free(k->pool);
        free(k->modules);
        free(k);
        return NULL;
}

size_t kallsyms_count(const KallSyms *k) {
        return k ? k->n_text : 0;
}

size_t kallsyms_skipped(const KallSyms *k) {
        return k ? k->n_skipped : 0;
}

bool kallsyms_truncated(const KallSyms *k) {
        return k && k->truncated;
}

/* Whether addr lies in the text range of s's module (or of the core kernel). */
static bool in_range(const KallSyms *k, const KallSym *s, uint64_t addr) {
        const KallModule *m;

        if (s->module == 0)
                return k->has_core && addr >= k->stext && addr < k->etext;
        m = &k->modules[s->module - 1];
        return addr >= m->lo && addr <= m->hi;
}

const char *kallsyms_find(const KallSyms *k, uint64_t addr, uint64_t *ret_offset, const char **ret_module) {
        size_t lo = 0, hi;
        const KallSym *s;

        if (!k || k->n == 0)
                return NULL;
        /* The greatest address at or below addr: no other symbol lies between them. */
        hi = k->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (k->syms[mid].addr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        s = &k->syms[lo - 1];
        if (s->name_off == NO_NAME || (s->tag > 0 && addr - s->addr >= s->tag) || !in_range(k, s, addr))
                return NULL;
        if (ret_offset)
                *ret_offset = addr - s->addr;
        if (ret_module)
                *ret_module = s->module > 0 ? k->modules[s->module - 1].name : NULL;
        return k->pool + s->name_off;
}
