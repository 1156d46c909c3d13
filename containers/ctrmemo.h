/* SPDX-License-Identifier: MIT */
/* What containers/containers.c remembers of the containers/storage files it parsed: the last
 * CTRMEMO_PARSED of them (containers.json and volatile-containers.json alike), kept while one
 * sample looks up its containers so that a file naming many is parsed once, not once for each,
 * and the last CTRMEMO_FAILED paths that failed (a user's file too large, not JSON, over the parse
 * budget; a podman state database that failed twice in a row), so that such a file is read again
 * at most once per CTRMEMO_FAILED_US whoever asks.
 * Reads nothing; never logs; not thread-safe. */
#pragma once

#include <limits.h>
#include <sys/stat.h>

#include "base/timeutil.h"
#include "containers/ctrmeta.h"

#define CTRMEMO_PARSED 4
#define CTRMEMO_FAILED 16
#define CTRMEMO_FAILED_US (60 * USEC_PER_SEC)

typedef struct CtrMemo {
        struct {
                char path[PATH_MAX];
                struct stat st;
                CtrmetaStorage *parsed; /* NULL: a free slot */
                uint64_t used;
        } parsed[CTRMEMO_PARSED];
        struct {
                char path[PATH_MAX];
                int error; /* 0: a free slot */
                usec_t failed_mono_us;
        } failed[CTRMEMO_FAILED];
        uint64_t clock;
} CtrMemo;

/* The file at path parsed while it is the same file unchanged (st: as fstatat saw it now): its
 * device, inode, size and mtime. NULL when not memoized. */
const CtrmetaStorage *ctrmemo_parsed(CtrMemo *m, const char *path, const struct stat *st);

/* Keeps s (taken: freed by the memo) for path as st saw it, in place of the least recently used. */
void ctrmemo_keep(CtrMemo *m, const char *path, const struct stat *st, CtrmetaStorage *s);

/* The error path failed with when that was less than CTRMEMO_FAILED_US before now_mono_us, else 0. */
int ctrmemo_failed(const CtrMemo *m, const char *path, usec_t now_mono_us);

/* path failed with error (< 0) at now_mono_us; error 0 forgets it (it was read). */
void ctrmemo_fail(CtrMemo *m, const char *path, int error, usec_t now_mono_us);

/* The end of one sample: frees what was parsed; what failed is kept. */
void ctrmemo_done(CtrMemo *m);
