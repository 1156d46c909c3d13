/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "containers/ctrmemo.h"

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

const CtrmetaStorage *ctrmemo_parsed(CtrMemo *m, const char *path, const struct stat *st) {
        for (size_t i = 0; i < CTRMEMO_PARSED; i++)
                if (m->parsed[i].parsed && strcmp(m->parsed[i].path, path) == 0 && same_file(&m->parsed[i].st, st)) {
                        m->parsed[i].used = ++m->clock;
                        return m->parsed[i].parsed;
                }
        return NULL;
}

void ctrmemo_keep(CtrMemo *m, const char *path, const struct stat *st, CtrmetaStorage *s) {
        size_t pick = CTRMEMO_PARSED;

        /* the same path's older parse, else a free slot, else the least recently used */
        for (size_t i = 0; i < CTRMEMO_PARSED && pick == CTRMEMO_PARSED; i++)
                if (m->parsed[i].parsed && strcmp(m->parsed[i].path, path) == 0)
                        pick = i;
        for (size_t i = 0; i < CTRMEMO_PARSED && pick == CTRMEMO_PARSED; i++)
                if (!m->parsed[i].parsed)
                        pick = i;
        if (pick == CTRMEMO_PARSED) {
                pick = 0;
                for (size_t i = 1; i < CTRMEMO_PARSED; i++)
                        if (m->parsed[i].used < m->parsed[pick].used)
                                pick = i;
        }
        ctrmeta_storage_free(m->parsed[pick].parsed);
        snprintf(m->parsed[pick].path, sizeof m->parsed[pick].path, "%s", path);
        m->parsed[pick].st = *st;
        m->parsed[pick].parsed = s;
        m->parsed[pick].used = ++m->clock;
}

int ctrmemo_failed(const CtrMemo *m, const char *path, usec_t now_mono_us) {
        for (size_t i = 0; i < CTRMEMO_FAILED; i++)
                if (m->failed[i].error && strcmp(m->failed[i].path, path) == 0)
                        return now_mono_us - m->failed[i].failed_mono_us < CTRMEMO_FAILED_US ? m->failed[i].error : 0;
        return 0;
}

void ctrmemo_fail(CtrMemo *m, const char *path, int error, usec_t now_mono_us) {
        size_t pick = CTRMEMO_FAILED;

        /* the path's own slot, else (a failure) a free one, else the oldest failure's */
        for (size_t i = 0; i < CTRMEMO_FAILED && pick == CTRMEMO_FAILED; i++)
                if (m->failed[i].error && strcmp(m->failed[i].path, path) == 0)
                        pick = i;
        if (pick == CTRMEMO_FAILED && error == 0)
                return;
        for (size_t i = 0; i < CTRMEMO_FAILED && pick == CTRMEMO_FAILED; i++)
                if (!m->failed[i].error)
                        pick = i;
        if (pick == CTRMEMO_FAILED) {
                pick = 0;
                for (size_t i = 1; i < CTRMEMO_FAILED; i++)
                        if (m->failed[i].failed_mono_us < m->failed[pick].failed_mono_us)
                                pick = i;
        }
        snprintf(m->failed[pick].path, sizeof m->failed[pick].path, "%s", path);
        m->failed[pick].error = error;
        m->failed[pick].failed_mono_us = now_mono_us;
}

void ctrmemo_done(CtrMemo *m) {
        for (size_t i = 0; i < CTRMEMO_PARSED; i++)
                m->parsed[i].parsed = ctrmeta_storage_free(m->parsed[i].parsed);
}
