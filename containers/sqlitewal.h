/* SPDX-License-Identifier: MIT */
/* An SQLite write-ahead log (<database>-wal) applied to the database's bytes in memory, as SQLite's
 * own recovery reads it (https://www.sqlite.org/fileformat2.html, "The WAL File Format"): podman 5
 * keeps db.sql in WAL mode, and what it committed since the last checkpoint is only there. The WAL
 * is taken on its own word only as far as its checksums go: its header's, then each frame's,
 * cumulative from the header's, with the header's salts; the frames up to the last valid commit
 * frame are applied in order, and the database takes that frame's size in pages. Frames after it
 * (a transaction not committed, a WAL being rewritten after a checkpoint, a torn write) are not.
 * Pure: no file, no allocation but the database's buffer. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SQLITEWAL_HEADER 32
#define SQLITEWAL_FRAME_HEADER 24

typedef struct SqliteWalInfo {
        uint32_t page_size;
        uint32_t frames; /* applied: up to and with the last valid commit frame */
        uint32_t pages;  /* the database's size in pages after them; 0 when none applied */
        uint32_t checkpoint_seq, salt[2];
} SqliteWalInfo;

/* Applies wal (wal_len bytes) to the database *db of *db_len bytes (malloc'ed; realloc'ed to grow,
 * at most max bytes). A WAL shorter than its header, or whose header's magic, version, page size or
 * checksum is wrong, is no WAL: nothing applied, 0 (SQLite ignores it too). A page size other than
 * the database's (when it has a header), or a result over max: -EBADMSG / -EFBIG, the database
 * untouched. -ENOMEM. info (may be NULL) says what was applied. */
int sqlitewal_apply(uint8_t **db, size_t *db_len, size_t max, const uint8_t *wal, size_t wal_len, SqliteWalInfo *info);
