/* SPDX-License-Identifier: MIT */
/* An SQLite WAL applied to a database's bytes (containers/sqlitewal.h), from any bytes: the input's
 * first two bytes say how many of the rest are the database, the others are its WAL; applied as
 * given and then with every checksum made right (so that a mutated page number, commit size or page
 * size gets past them). The database never grows past the limit, and frames are applied only where
 * the WAL's header is one. */
#include <stdlib.h>
#include <string.h>

#include "containers/sqlitewal.h"
#include "tests/fuzz/fuzz.h"

#define MAX (1u << 20)

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

static void sum(uint32_t s[2], const uint8_t *p, size_t len, int big) {
        for (size_t i = 0; i + 8 <= len; i += 8) {
                uint32_t a = big ? be32(p + i)
                                 : (uint32_t) p[i] | (uint32_t) p[i + 1] << 8 | (uint32_t) p[i + 2] << 16 |
                                             (uint32_t) p[i + 3] << 24;
                uint32_t b = big ? be32(p + i + 4)
                                 : (uint32_t) p[i + 4] | (uint32_t) p[i + 5] << 8 | (uint32_t) p[i + 6] << 16 |
                                             (uint32_t) p[i + 7] << 24;
                s[0] += a + s[1];
                s[1] += b + s[0];
        }
}

/* The header's and every whole frame's checksums, and the frames' salts, made right. */
static void fix(uint8_t *wal, size_t len) {
        uint32_t s[2] = { 0, 0 }, page;
        int big;

        if (len < SQLITEWAL_HEADER)
                return;
        big = be32(wal) & 1;
        page = be32(wal + 8);
        sum(s, wal, 24, big);
        put_be32(wal + 24, s[0]);
        put_be32(wal + 28, s[1]);
        if (page < 512 || page > 65536)
                return;
        for (size_t off = SQLITEWAL_HEADER; len - off >= SQLITEWAL_FRAME_HEADER + page;
             off += SQLITEWAL_FRAME_HEADER + page) {
                memcpy(wal + off + 8, wal + 16, 8);
                sum(s, wal + off, 8, big);
                sum(s, wal + off + SQLITEWAL_FRAME_HEADER, page, big);
                put_be32(wal + off + 16, s[0]);
                put_be32(wal + off + 20, s[1]);
        }
}

static void apply(const uint8_t *db, size_t db_len, const uint8_t *wal, size_t wal_len) {
        uint8_t *buf = malloc(db_len ? db_len : 1);
        size_t len = db_len;
        SqliteWalInfo info;
        int r;

        if (!buf)
                abort();
        memcpy(buf, db, db_len);
        r = sqlitewal_apply(&buf, &len, MAX, wal, wal_len, &info);
        if (r < 0 ? len != db_len || memcmp(buf, db, db_len) != 0 : len > MAX && len != db_len)
                abort();
        if (r > 0 && (info.frames != (uint32_t) r || len != (size_t) info.pages * info.page_size ||
                      wal_len < SQLITEWAL_HEADER + (size_t) r * (SQLITEWAL_FRAME_HEADER + info.page_size)))
                abort();
        if (r == 0 && len != db_len)
                abort();
        free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t db_len;
        uint8_t *wal;

        if (size < 2)
                return 0;
        db_len = (size_t) data[0] << 8 | data[1];
        data += 2;
        size -= 2;
        if (db_len > size)
                db_len = size;
        apply(data, db_len, data + db_len, size - db_len);
        wal = malloc(size - db_len + 1);
        if (!wal)
                abort();
        memcpy(wal, data + db_len, size - db_len);
        fix(wal, size - db_len);
        apply(data, db_len, wal, size - db_len);
        free(wal);
        return 0;
}
