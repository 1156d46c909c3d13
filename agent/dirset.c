/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dirset.h"
#include "base/array.h"
#include "base/macro.h"

#define NONE UINT32_MAX

typedef struct Entry {
        char *path;
        int wd;
        uid_t owner;
        unsigned flags;
        uint32_t next_path, next_wd; /* the next entry of the same bucket, NONE */
} Entry;

typedef struct Owner {
        uid_t uid;
        unsigned n;
} Owner;

struct Dirset {
        unsigned max;
        Entry *entries; /* dense: a removed entry's place takes the last one */
        size_t n, cap;
        uint32_t *by_path, *by_wd; /* bucket heads, n_buckets each (a power of two) */
        size_t n_buckets;
        Owner *owners; /* the users (not root) who own a watched directory */
        size_t n_owners, cap_owners;
        unsigned users; /* their directories together */
};

/* FNV-1a: the paths are the kernel's names, which a user chooses; a chain's length only costs
 * time, bounded by the limit. */
static size_t hash_path(const char *p) {
        uint32_t h = 2166136261u;

        for (; *p; p++)
                h = (h ^ (unsigned char) *p) * 16777619u;
        return h;
}

static size_t hash_wd(int wd) {
        return (uint32_t) wd * 2654435761u;
}

static uint32_t *head_path(const Dirset *s, const char *path) {
        return &s->by_path[hash_path(path) & (s->n_buckets - 1)];
}

static uint32_t *head_wd(const Dirset *s, int wd) {
        return &s->by_wd[hash_wd(wd) & (s->n_buckets - 1)];
}

int dirset_new(unsigned max, Dirset **ret) {
        Dirset *s = calloc(1, sizeof *s);

        if (!s)
                return -ENOMEM;
        s->max = MAX(max, 1u);
        *ret = s;
        return 0;
}

Dirset *dirset_free(Dirset *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                free(s->entries[i].path);
        free(s->entries);
        free(s->by_path);
        free(s->by_wd);
        free(s->owners);
        free(s);
        return NULL;
}

void dirset_set_max(Dirset *s, unsigned max) {
        s->max = MAX(max, 1u);
}

unsigned dirset_max(const Dirset *s) {
        return s->max;
}

size_t dirset_count(const Dirset *s) {
        return s->n;
}

static Owner *owner_find(const Dirset *s, uid_t uid) {
        for (size_t i = 0; i < s->n_owners; i++)
                if (s->owners[i].uid == uid)
                        return &s->owners[i];
        return NULL;
}

int dirset_admit(const Dirset *s, uid_t owner) {
        const Owner *o;

        if (s->n >= s->max)
                return -ENOSPC;
        if (owner == 0)
                return 0;
        o = owner_find(s, owner);
        if (s->users >= s->max / 2 || (o && o->n >= MAX(s->max / DIRSET_USER_SHARE, 1u)))
                return -EDQUOT;
        return 0;
}

static uint32_t find_wd(const Dirset *s, int wd) {
        if (s->n_buckets == 0)
                return NONE;
        for (uint32_t i = *head_wd(s, wd); i != NONE; i = s->entries[i].next_wd)
                if (s->entries[i].wd == wd)
                        return i;
        return NONE;
}

const char *dirset_path(const Dirset *s, int wd, unsigned *ret_flags) {
        uint32_t i = find_wd(s, wd);

        if (i == NONE)
                return NULL;
        if (ret_flags)
                *ret_flags = s->entries[i].flags;
        return s->entries[i].path;
}

static uint32_t find_path(const Dirset *s, const char *path) {
        if (s->n_buckets == 0)
                return NONE;
        for (uint32_t i = *head_path(s, path); i != NONE; i = s->entries[i].next_path)
                if (strcmp(s->entries[i].path, path) == 0)
                        return i;
        return NONE;
}

bool dirset_has(const Dirset *s, const char *path) {
        return find_path(s, path) != NONE;
}

bool dirset_mark(Dirset *s, const char *path, unsigned flags) {
        uint32_t i = find_path(s, path);

        if (i == NONE)
                return false;
        s->entries[i].flags |= flags;
        return true;
}

/* Buckets as many as twice the entries, made again from the entries. */
static int rehash(Dirset *s, size_t need) {
        size_t nb = s->n_buckets ? s->n_buckets : 64;
        uint32_t *bp, *bw;

        while (nb < need * 2)
                nb *= 2;
        if (nb == s->n_buckets)
                return 0;
        bp = malloc(nb * sizeof *bp);
        bw = malloc(nb * sizeof *bw);
        if (!bp || !bw) {
                free(bp);
                free(bw);
                return -ENOMEM;
        }
        memset(bp, 0xff, nb * sizeof *bp);
        memset(bw, 0xff, nb * sizeof *bw);
        free(s->by_path);
        free(s->by_wd);
        s->by_path = bp;
        s->by_wd = bw;
        s->n_buckets = nb;
        for (uint32_t i = 0; i < s->n; i++) {
                Entry *e = &s->entries[i];
                uint32_t *hp = head_path(s, e->path), *hw = head_wd(s, e->wd);
                e->next_path = *hp;
                *hp = i;
                e->next_wd = *hw;
                *hw = i;
        }
        return 0;
}

int dirset_add(Dirset *s, int wd, const char *path, uid_t owner, unsigned flags) {
        Owner *o = NULL;
        char *p;
        int r;

        if (find_wd(s, wd) != NONE || dirset_has(s, path))
                return -EEXIST;
        if (s->n >= NONE - 1)
                return -ENOMEM;
        if (owner != 0) {
                o = owner_find(s, owner);
                if (!o) {
                        if (array_grow((void **) &s->owners, &s->cap_owners, s->n_owners, 8, sizeof *s->owners) < 0)
                                return -ENOMEM;
                        o = &s->owners[s->n_owners];
                        *o = (Owner) { .uid = owner };
                }
        }
        r = rehash(s, s->n + 1);
        if (r < 0)
                return r;
        if (array_grow((void **) &s->entries, &s->cap, s->n, 64, sizeof *s->entries) < 0)
                return -ENOMEM;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        uint32_t i = (uint32_t) s->n++, *hp = head_path(s, p), *hw = head_wd(s, wd);
        s->entries[i] =
                (Entry) { .path = p, .wd = wd, .owner = owner, .flags = flags, .next_path = *hp, .next_wd = *hw };
        *hp = *hw = i;
        if (o) {
                if (o == &s->owners[s->n_owners])
                        s->n_owners++;
                o->n++;
                s->users++;
        }
        return 0;
}

/* The link that holds i in its chain (the bucket's head, or the previous entry's next). */
static uint32_t *link_path(Dirset *s, uint32_t i) {
        uint32_t *l = head_path(s, s->entries[i].path);

        while (*l != i) {
                assert(*l != NONE);
                l = &s->entries[*l].next_path;
        }
        return l;
}

static uint32_t *link_wd(Dirset *s, uint32_t i) {
        uint32_t *l = head_wd(s, s->entries[i].wd);

        while (*l != i) {
                assert(*l != NONE);
                l = &s->entries[*l].next_wd;
        }
        return l;
}

bool dirset_remove(Dirset *s, int wd) {
        uint32_t i = find_wd(s, wd), last;
        Entry *e;

        if (i == NONE)
                return false;
        e = &s->entries[i];
        *link_path(s, i) = e->next_path;
        *link_wd(s, i) = e->next_wd;
        if (e->owner != 0) {
                Owner *o = owner_find(s, e->owner);
                assert(o && o->n > 0);
                s->users--;
                if (--o->n == 0)
                        *o = s->owners[--s->n_owners];
        }
        free(e->path);
        last = (uint32_t) --s->n;
        if (i != last) {
                /* The last entry moves into i: whatever linked to it links to i. */
                *link_path(s, last) = i;
                *link_wd(s, last) = i;
                s->entries[i] = s->entries[last];
        }
        return true;
}
