/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/unaligned.h"
#include "containers/boltdb.h"

/* bbolt's on-disk layout (docs/kernel-facts.md: containerd-metadata) */
#define PAGE_HEADER 16      /* id u64, flags u16, count u16, overflow u32 */
#define ELEMENT 16          /* branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32 */
#define BUCKET_HEADER 16    /* a bucket's value: root pgid u64, sequence u64, then its inline page */
#define META_CHECKSUMMED 56 /* the meta's bytes before its checksum */
#define META_SIZE 64
#define FLAG_BRANCH 0x01
#define FLAG_LEAF 0x02
#define LEAF_BUCKET 0x01 /* a leaf element whose value is a bucket */
#define MAGIC 0xED0CDAEDu
#define VERSION 2
#define PAGE_SIZE_MIN 512u
#define PAGE_SIZE_MAX 65536u

typedef struct Src {
        int fd; /* or, when < 0, buf */
        const uint8_t *buf;
        uint64_t size;      /* of the file */
        uint64_t read;      /* bytes read so far */
        uint64_t limit;     /* bytes it may read, at most BOLTDB_READ_MAX */
        unsigned visits;    /* pages read so far */
        uint32_t page_size; /* from the meta page chosen */
        uint64_t hwm;       /* its high water mark: no page at or past it */
        char *why;          /* BOLTDB_REASON_MAX bytes, or NULL */
} Src;

/* One page in memory: mem[0..len) holds its header and elements. owned: mem is malloc'ed. */
typedef struct Page {
        uint8_t *mem;
        size_t len;
        uint64_t id; /* 0 for an inline page */
} Page;

static int fail(Src *s, int r, const char *fmt, ...) {
        va_list ap;

        if (s->why) {
                va_start(ap, fmt);
                vsnprintf(s->why, BOLTDB_REASON_MAX, fmt, ap);
                va_end(ap);
        }
        return r;
}

/* len bytes at off into dst: 0, -EBADMSG (past the end), -EFBIG (over the budget), -errno. */
static int src_read(Src *s, uint64_t off, void *dst, size_t len) {
        size_t done = 0;

        if (off > s->size || len > s->size - off)
                return fail(s, -EBADMSG, "truncated: %zu bytes at offset %llu are past its end (%llu bytes)", len,
                            (unsigned long long) off, (unsigned long long) s->size);
        if (len > s->limit - s->read)
                return fail(s, -EFBIG, "too large: the lookup would read more than its %llu KiB",
                            (unsigned long long) s->limit >> 10);
        s->read += len;
        if (s->fd < 0) {
                memcpy(dst, s->buf + off, len);
                return 0;
        }
        while (done < len) {
                ssize_t n = pread(s->fd, (uint8_t *) dst + done, len - done, (off_t) (off + done));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        return fail(s, -e, "cannot read: %s", strerror(e));
                }
                if (n == 0)
                        return fail(s, -EBADMSG, "truncated while read (it shrank)");
                done += (size_t) n;
        }
        return 0;
}

static uint64_t fnv1a64(const uint8_t *p, size_t len) {
        uint64_t h = 0xcbf29ce484222325ull;

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 0x100000001b3ull;
        }
        return h;
}

/* The meta page at off: valid when its magic, version and checksum are, and (page_size != 0) it
 * says that page size. */
static bool meta_at(Src *s, uint64_t off, uint32_t page_size, uint8_t meta[META_SIZE]) {
        uint32_t ps;

        if (off > s->size || s->size - off < PAGE_HEADER + META_SIZE ||
            src_read(s, off + PAGE_HEADER, meta, META_SIZE) < 0)
                return false;
        ps = unaligned_u32(meta + 8);
        return unaligned_u32(meta) == MAGIC && unaligned_u32(meta + 4) == VERSION &&
               unaligned_u64(meta + META_CHECKSUMMED) == fnv1a64(meta, META_CHECKSUMMED) && ps >= PAGE_SIZE_MIN &&
               ps <= PAGE_SIZE_MAX && (ps & (ps - 1)) == 0 && (page_size == 0 || ps == page_size);
}

/* The newer valid one of the two meta pages (pages 0 and 1): its page size, high water mark and
 * the root bucket's page. Page 0's says the page size; with page 0 bad, page 1 is looked for at
 * each page size it could be. */
static int meta_load(Src *s, uint64_t *ret_root) {
        uint8_t m0[META_SIZE], m1[META_SIZE], *m = NULL;
        bool ok0 = meta_at(s, 0, 0, m0), ok1 = false;
        uint64_t root = 0;

        if (ok0)
                ok1 = meta_at(s, unaligned_u32(m0 + 8), unaligned_u32(m0 + 8), m1);
        else
                for (uint32_t ps = PAGE_SIZE_MIN; ps <= PAGE_SIZE_MAX && !ok1; ps *= 2)
                        ok1 = meta_at(s, ps, ps, m1);
        if (ok0 && ok1)
                m = unaligned_u64(m1 + 48) > unaligned_u64(m0 + 48) ? m1 : m0;
        else if (ok0 || ok1)
                m = ok0 ? m0 : m1;
        else
                return fail(s, -EBADMSG, "not a bbolt file: no valid meta page (magic, version 2, checksum)");
        s->page_size = unaligned_u32(m + 8);
        s->hwm = unaligned_u64(m + 40);
        root = unaligned_u64(m + 16);
        if (root < 2 || root >= s->hwm)
                return fail(s, -EBADMSG, "its root bucket's page %llu is outside 2..%llu", (unsigned long long) root,
                            (unsigned long long) s->hwm);
        *ret_root = root;
        return 0;
}

/* Page id with its overflow pages, into p->mem (malloc'ed). */
static int page_load(Src *s, uint64_t id, Page *p) {
        uint8_t h[PAGE_HEADER];
        uint64_t off, len;
        uint32_t overflow;
        int r;

        if (id < 2 || id >= s->hwm)
                return fail(s, -EBADMSG, "corrupt: page %llu is outside 2..%llu", (unsigned long long) id,
                            (unsigned long long) s->hwm);
        if (++s->visits > BOLTDB_PAGES_MAX)
                return fail(s, -EFBIG, "too large: the lookup would visit more than %u pages", BOLTDB_PAGES_MAX);
        if (id > UINT64_MAX / s->page_size)
                return fail(s, -EBADMSG, "corrupt: page %llu is past any file", (unsigned long long) id);
        off = id * s->page_size;
        r = src_read(s, off, h, sizeof h);
        if (r < 0)
                return r;
        if (unaligned_u64(h) != id)
                return fail(s, -EBADMSG, "corrupt: page %llu says it is page %llu", (unsigned long long) id,
                            (unsigned long long) unaligned_u64(h));
        overflow = unaligned_u32(h + 12);
        if (overflow >= s->hwm - id)
                return fail(s, -EBADMSG, "corrupt: page %llu overflows past the high water mark",
                            (unsigned long long) id);
        len = ((uint64_t) overflow + 1) * s->page_size;
        if (len > s->limit)
                return fail(s, -EFBIG, "too large: page %llu is over %llu KiB", (unsigned long long) id,
                            (unsigned long long) s->limit >> 10);
        p->mem = malloc((size_t) len);
        if (!p->mem)
                return fail(s, -ENOMEM, "out of memory");
        p->len = (size_t) len;
        p->id = id;
        r = src_read(s, off, p->mem, p->len);
        if (r < 0)
                p->mem = mfree(p->mem);
        return r;
}

/* Element i's key (and a leaf's value) within the page: false when any of it lies outside. */
static bool element(const Page *p, bool leaf, unsigned i, const uint8_t **key, size_t *klen, const uint8_t **val,
                    size_t *vlen) {
        uint64_t at = PAGE_HEADER + (uint64_t) i * ELEMENT, pos, ks, vs;

        if (at + ELEMENT > p->len)
                return false;
        pos = unaligned_u32(p->mem + at + (leaf ? 4 : 0));
        ks = unaligned_u32(p->mem + at + (leaf ? 8 : 4));
        vs = leaf ? unaligned_u32(p->mem + at + 12) : 0;
        if (at + pos + ks + vs > p->len)
                return false;
        *key = p->mem + at + pos;
        *klen = (size_t) ks;
        if (val) {
                *val = *key + ks;
                *vlen = (size_t) vs;
        }
        return true;
}

static int keycmp(const uint8_t *a, size_t alen, const char *b, size_t blen) {
        int c = memcmp(a, b, alen < blen ? alen : blen);

        return c ? c : (alen > blen) - (alen < blen);
}

/* The child of branch page p whose range holds key: the last element whose key is at most key,
 * the first when all are greater (bbolt's Cursor.searchPage). */
static int branch_child(Src *s, const Page *p, const char *key, size_t klen, uint64_t *ret) {
        unsigned count = unaligned_u16(p->mem + 10), pick = 0;

        if (count == 0)
                return fail(s, -EBADMSG, "corrupt: branch page %llu is empty", (unsigned long long) p->id);
        for (unsigned i = 0; i < count; i++) {
                const uint8_t *k;
                size_t kl;
                if (!element(p, false, i, &k, &kl, NULL, NULL))
                        return fail(s, -EBADMSG, "corrupt: element %u of page %llu lies outside it", i,
                                    (unsigned long long) p->id);
                if (keycmp(k, kl, key, klen) > 0)
                        break;
                pick = i;
        }
        *ret = unaligned_u64(p->mem + PAGE_HEADER + (uint64_t) pick * ELEMENT + 8);
        return 0;
}

/* Finds key in a bucket: its tree from page root, or (root == 0) its inline page inl. On success
 * the element's value and flags, in *hold (a page to free, NULL when in inl). 0, -ENOENT, < 0. */
static int bucket_find(Src *s, uint64_t root, const Page *inl, const char *key, uint8_t **hold, const uint8_t **val,
                       size_t *vlen, uint32_t *flags) {
        size_t klen = strlen(key);
        Page p = {};
        unsigned depth = 0;
        int r;

        if (root == 0)
                p = *inl;
        else if ((r = page_load(s, root, &p)) < 0)
                return r;
        for (;;) {
                uint16_t pflags = unaligned_u16(p.mem + 8);
                uint64_t child = 0;
                if (pflags != FLAG_BRANCH || root == 0)
                        break;
                if (++depth > BOLTDB_DEPTH_MAX) {
                        free(p.mem);
                        return fail(s, -EBADMSG, "corrupt: a tree deeper than %u levels (a loop?)", BOLTDB_DEPTH_MAX);
                }
                r = branch_child(s, &p, key, klen, &child);
                free(p.mem);
                p = (Page) {};
                if (r < 0 || (r = page_load(s, child, &p)) < 0)
                        return r;
        }
        if (unaligned_u16(p.mem + 8) != FLAG_LEAF) {
                unsigned pflags = unaligned_u16(p.mem + 8);
                if (root)
                        free(p.mem);
                return fail(s, -EBADMSG, "corrupt: page %llu is neither a branch nor a leaf (flags 0x%x)",
                            (unsigned long long) p.id, pflags);
        }
        for (unsigned i = 0, count = unaligned_u16(p.mem + 10); i < count; i++) {
                const uint8_t *k;
                size_t kl;
                if (!element(&p, true, i, &k, &kl, val, vlen)) {
                        if (root)
                                free(p.mem);
                        return fail(s, -EBADMSG, "corrupt: element %u of page %llu lies outside it", i,
                                    (unsigned long long) p.id);
                }
                if (keycmp(k, kl, key, klen) == 0) {
                        *flags = unaligned_u32(p.mem + PAGE_HEADER + (uint64_t) i * ELEMENT);
                        *hold = root ? p.mem : NULL;
                        return 0;
                }
        }
        if (root)
                free(p.mem);
        return -ENOENT;
}

static int lookup(Src *s, const char *const *keys, size_t n, char *value, size_t size) {
        uint8_t *hold = NULL; /* the page that holds the current bucket's inline page */
        Page inl = {};
        uint64_t root = 0;
        int r;

        if (n == 0 || size == 0)
                return fail(s, -EINVAL, "no key asked for");
        r = meta_load(s, &root);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint8_t *h = NULL;
                const uint8_t *val = NULL;
                size_t vlen = 0;
                uint32_t flags = 0;

                r = bucket_find(s, root, &inl, keys[i], &h, &val, &vlen, &flags);
                if (r == -ENOENT)
                        r = fail(s, -ENOENT, "no %s \"%.40s\"", i + 1 == n ? "key" : "bucket", keys[i]);
                else if (r >= 0 && i + 1 == n && (flags & LEAF_BUCKET))
                        r = fail(s, -ENOENT, "\"%.40s\" is a bucket, not a value", keys[i]);
                else if (r >= 0 && i + 1 == n) {
                        size_t cut = vlen < size - 1 ? vlen : size - 1;
                        memcpy(value, val, cut);
                        value[cut] = '\0';
                        r = vlen > INT32_MAX ? INT32_MAX : (int) vlen;
                } else if (r >= 0 && (!(flags & LEAF_BUCKET) || vlen < BUCKET_HEADER))
                        r = fail(s, -ENOENT, "\"%.40s\" is a value, not a bucket", keys[i]);
                else if (r >= 0) {
                        root = unaligned_u64(val);
                        if (root == 0) {
                                /* inline: its page follows the header, within the value */
                                inl = (Page) { .mem = (uint8_t *) val + BUCKET_HEADER, .len = vlen - BUCKET_HEADER };
                                if (inl.len < PAGE_HEADER)
                                        r = fail(s, -EBADMSG, "corrupt: bucket \"%.40s\"'s inline page is cut",
                                                 keys[i]);
                                if (h) {
                                        free(hold);
                                        hold = TAKE_PTR(h);
                                }
                        }
                }
                free(h);
        }
        free(hold);
        return r;
}

int boltdb_get_buf(const void *buf, size_t len, const char *const *keys, size_t n, char *value, size_t size,
                   char *reason) {
        Src s = { .fd = -1, .buf = buf, .size = len, .limit = BOLTDB_READ_MAX, .why = reason };

        if (reason)
                reason[0] = '\0';
        return lookup(&s, keys, n, value, size);
}

int boltdb_open_at(int dir_fd, const char *path, struct stat *ret_st, char *reason) {
        _cleanup_close_ int fd = -EBADF;
        Src s = { .why = reason };

        if (reason)
                reason[0] = '\0';
        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0) {
                int e = errno;
                return fail(&s, e == ELOOP ? -EPERM : -e, "cannot open: %s", e == ELOOP ? "a symlink" : strerror(e));
        }
        if (fstat(fd, ret_st) < 0) {
                int e = errno;
                return fail(&s, -e, "cannot stat: %s", strerror(e));
        }
        if (!S_ISREG(ret_st->st_mode))
                return fail(&s, -EPERM, "not a regular file");
        return TAKE_FD(fd);
}

int boltdb_get_fd_budget(int fd, const struct stat *st, const char *const *keys, size_t n, char *value, size_t size,
                         uint64_t *budget_bytes, char *reason) {
        Src s = { .fd = fd, .size = (uint64_t) st->st_size, .why = reason };
        int r;

        if (reason)
                reason[0] = '\0';
        s.limit = budget_bytes ? MIN(*budget_bytes, (uint64_t) BOLTDB_READ_MAX) : BOLTDB_READ_MAX;
        r = lookup(&s, keys, n, value, size);
        if (budget_bytes)
                *budget_bytes -= s.read;
        return r;
}

int boltdb_get_fd(int fd, const struct stat *st, const char *const *keys, size_t n, char *value, size_t size,
                  char *reason) {
        return boltdb_get_fd_budget(fd, st, keys, n, value, size, NULL, reason);
}

int boltdb_get_at(int dir_fd, const char *path, const char *const *keys, size_t n, char *value, size_t size,
                  char *reason) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = boltdb_open_at(dir_fd, path, &st, reason);
        if (fd < 0)
                return fd;
        return boltdb_get_fd(fd, &st, keys, n, value, size, reason);
}
