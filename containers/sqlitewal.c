/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "containers/sqlitewal.h"

#define WAL_MAGIC_LE 0x377f0682u /* checksum words little-endian */
#define WAL_MAGIC_BE 0x377f0683u /* and big-endian */
#define WAL_VERSION 3007000u

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint32_t le32(const uint8_t *p) {
        return (uint32_t) p[3] << 24 | (uint32_t) p[2] << 16 | (uint32_t) p[1] << 8 | p[0];
}

/* SQLite's checksum of len bytes (a multiple of 8), continued from s[0], s[1]. */
static void checksum(uint32_t s[2], const uint8_t *p, size_t len, bool big_endian) {
        uint32_t s0 = s[0], s1 = s[1];

        for (size_t i = 0; i + 8 <= len; i += 8) {
                s0 += (big_endian ? be32(p + i) : le32(p + i)) + s1;
                s1 += (big_endian ? be32(p + i + 4) : le32(p + i + 4)) + s0;
        }
        s[0] = s0;
        s[1] = s1;
}

/* The database header's page size (bytes 16, 17; 1 is 65536), 0 when it has no header. */
static uint32_t db_page_size(const uint8_t *db, size_t len) {
        uint32_t v;

        if (len < 100)
                return 0;
        v = (uint32_t) db[16] << 8 | db[17];
        return v == 1 ? 65536 : v;
}

/* The frames of wal that count: how many, and the database's size in pages after the last. */
static uint32_t valid_frames(const uint8_t *wal, size_t wal_len, uint32_t page_size, bool big_endian, uint32_t *pages) {
        const size_t frame = SQLITEWAL_FRAME_HEADER + (size_t) page_size;
        uint32_t s[2] = { be32(wal + 24), be32(wal + 28) }, n = 0, committed = 0;

        *pages = 0;
        for (size_t off = SQLITEWAL_HEADER; wal_len - off >= frame; off += frame) {
                const uint8_t *h = wal + off;

                if (be32(h) == 0 || memcmp(h + 8, wal + 16, 8) != 0)
                        break;
                checksum(s, h, 8, big_endian);
                checksum(s, h + SQLITEWAL_FRAME_HEADER, page_size, big_endian);
                if (s[0] != be32(h + 16) || s[1] != be32(h + 20))
                        break;
                n++;
                if (be32(h + 4)) {
                        committed = n;
                        *pages = be32(h + 4);
                }
        }
        return committed;
}

int sqlitewal_apply(uint8_t **db, size_t *db_len, size_t max, const uint8_t *wal, size_t wal_len, SqliteWalInfo *info) {
        uint32_t magic, page_size, frames, pages, s[2] = { 0, 0 };
        size_t frame, need;
        bool big_endian;
        SqliteWalInfo none = { 0 };

        if (!info)
                info = &none;
        *info = (SqliteWalInfo) { 0 };
        if (wal_len < SQLITEWAL_HEADER)
                return 0;
        magic = be32(wal);
        page_size = be32(wal + 8);
        if ((magic != WAL_MAGIC_LE && magic != WAL_MAGIC_BE) || be32(wal + 4) != WAL_VERSION || page_size < 512 ||
            page_size > 65536 || (page_size & (page_size - 1)))
                return 0;
        big_endian = magic == WAL_MAGIC_BE;
        checksum(s, wal, 24, big_endian);
        if (s[0] != be32(wal + 24) || s[1] != be32(wal + 28))
                return 0;
        info->page_size = page_size;
        info->checkpoint_seq = be32(wal + 12);
        info->salt[0] = be32(wal + 16);
        info->salt[1] = be32(wal + 20);
        frames = valid_frames(wal, wal_len, page_size, big_endian, &pages);
        if (!frames)
                return 0;
        if (db_page_size(*db, *db_len) && db_page_size(*db, *db_len) != page_size)
                return -EBADMSG;
        frame = SQLITEWAL_FRAME_HEADER + (size_t) page_size;
        /* the largest page any frame writes, and the size the last commit says */
        need = (size_t) pages * page_size;
        for (uint32_t i = 0; i < frames; i++) {
                size_t end = (size_t) be32(wal + SQLITEWAL_HEADER + i * frame) * page_size;
                if (end > need)
                        need = end;
        }
        if (need > max || (size_t) pages * page_size > max)
                return -EFBIG;
        if (need > *db_len) {
                uint8_t *grown = realloc(*db, need);
                if (!grown)
                        return -ENOMEM;
                memset(grown + *db_len, 0, need - *db_len);
                *db = grown;
        }
        for (uint32_t i = 0; i < frames; i++) {
                const uint8_t *h = wal + SQLITEWAL_HEADER + i * frame;
                memcpy(*db + (size_t) (be32(h) - 1) * page_size, h + SQLITEWAL_FRAME_HEADER, page_size);
        }
        *db_len = (size_t) pages * page_size;
        info->frames = frames;
        info->pages = pages;
        return (int) frames;
}
