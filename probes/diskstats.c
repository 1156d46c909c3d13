/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/unparsed.h"
#include "probes/diskstats.h"

static const char *skip_blanks(const char *s, const char *end) {
        while (s < end && (*s == ' ' || *s == '\t'))
                s++;
        return s;
}

/* One diskstats line: "MAJ MIN NAME f1 f2 ... f11 [...]". 0 or -EINVAL. */
static int parse_line(const char *s, const char *end, DiskStat *ret) {
        uint64_t maj, min, f[11];
        const char *name;
        DiskStat d = {};

        s = skip_blanks(s, end);
        if (parse_u64_prefix(s, end, &maj, &s) < 0 || maj > UINT32_MAX)
                return -EINVAL;
        s = skip_blanks(s, end);
        if (parse_u64_prefix(s, end, &min, &s) < 0 || min > UINT32_MAX)
                return -EINVAL;
        s = skip_blanks(s, end);
        name = s;
        while (s < end && *s != ' ' && *s != '\t')
                s++;
        if (s == name || (size_t) (s - name) >= sizeof d.name)
                return -EINVAL;
        memcpy(d.name, name, (size_t) (s - name));
        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                s = skip_blanks(s, end);
                if (parse_u64_prefix(s, end, &f[i], &s) < 0)
                        return -EINVAL;
        }
        d.major = (uint32_t) maj;
        d.minor = (uint32_t) min;
        d.rios = f[0];
        d.rsectors = f[2];
        d.rticks_ms = f[3];
        d.wios = f[4];
        d.wsectors = f[6];
        d.wticks_ms = f[7];
        d.in_flight = f[8];
        d.io_ticks_ms = f[9];
        *ret = d;
        return 0;
}

int diskstats_parse_filtered(const char *buf, size_t len, bool (*keep)(uint32_t major, uint32_t minor, void *userdata),
                             void *userdata, DiskStats *ret) {
        const char *p = buf, *end = buf + len;
        DiskStats *out = ret;
        bool any = false;

        out->n = out->dropped = 0;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ? nl : end;
                DiskStat d;

                /* A line it cannot read costs that line (kernel-facts.md: unknown-lines). */
                if (parse_line(p, eol, &d) < 0) {
                        if (eol > p)
                                unparsed_note(UNPARSED_DISKSTATS, p, eol);
                } else {
                        any = true;
                        if (keep && !keep(d.major, d.minor, userdata)) {
                                /* left out: not counted against DISKSTATS_MAX */
                        } else if (out->n < DISKSTATS_MAX)
                                out->disks[out->n++] = d;
                        else
                                out->dropped++;
                }
                p = nl ? nl + 1 : end;
        }
        return any ? 0 : -EINVAL;
}

int diskstats_parse(const char *buf, size_t len, DiskStats *ret) {
        return diskstats_parse_filtered(buf, len, NULL, NULL, ret);
}

/* A partition's io is also in its disk's line: keep whole disks only. */
static bool is_whole_disk(uint32_t major, uint32_t minor, void *userdata) {
        char path[64];

        snprintf(path, sizeof path, "sys/dev/block/%u:%u/partition", major, minor);
        return faccessat(*(int *) userdata, path, F_OK, 0) < 0;
}

int diskstats_read(int root_fd, char *buf, size_t size, DiskStats *ret) {
        ssize_t n = read_file_at(root_fd, "proc/diskstats", buf, size);

        if (n < 0)
                return (int) n;
        if ((size_t) n >= size - 1)
                return -ENOBUFS;
        return diskstats_parse_filtered(buf, (size_t) n, is_whole_disk, &root_fd, ret);
}

/* Counter growth; a counter that went back (a device removed and another added under its
 * number) counts as none. */
static uint64_t growth(uint64_t a, uint64_t b) {
        return b > a ? b - a : 0;
}

static int busier(const DiskBusy *x, const DiskBusy *y) {
        if (x->stuck != y->stuck)
                return x->stuck ? -1 : 1;
        if (x->util != y->util)
                return x->util > y->util ? -1 : 1;
        uint64_t bx = x->rbytes + x->wbytes, by = y->rbytes + y->wbytes;
        return bx == by ? 0 : bx > by ? -1 : 1;
}

size_t diskstats_busiest(const DiskStats *a, const DiskStats *b, uint64_t interval_us, DiskBusy *ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; i < b->n; i++) {
                const DiskStat *e = &b->disks[i], *s = NULL;
                for (size_t j = 0; j < a->n && !s; j++)
                        if (a->disks[j].major == e->major && a->disks[j].minor == e->minor)
                                s = &a->disks[j];
                if (!s)
                        continue;
                uint64_t rios = growth(s->rios, e->rios), wios = growth(s->wios, e->wios);
                uint64_t ticks = growth(s->io_ticks_ms, e->io_ticks_ms);
                /* A device with requests waiting at both ends is listed even if its counters stood
                 * still (before 5.x, io_ticks moved only as requests started and ended). */
                bool waiting = s->in_flight > 0 && e->in_flight > 0;
                if (rios + wios == 0 && ticks == 0 && !waiting)
                        continue;
                DiskBusy d = {
                        .major = e->major,
                        .minor = e->minor,
                        .rbytes = growth(s->rsectors, e->rsectors) * DISKSTATS_SECTOR_BYTES,
                        .wbytes = growth(s->wsectors, e->wsectors) * DISKSTATS_SECTOR_BYTES,
                        .rios = rios,
                        .wios = wios,
                        .util = interval_us > 0 ? MIN(1.0, (double) ticks * 1000.0 / (double) interval_us) : 0,
                        .await_ms = rios + wios > 0 ? (double) (growth(s->rticks_ms, e->rticks_ms) +
                                                                growth(s->wticks_ms, e->wticks_ms)) /
                                                              (double) (rios + wios)
                                                    : -1,
                        .in_flight = e->in_flight,
                        .in_flight_start = s->in_flight,
                        .stuck = waiting && rios + wios < e->in_flight,
                };
                memcpy(d.name, e->name, sizeof d.name);
                /* Insertion into the busiest max so far. */
                size_t at = n < max ? n : max;
                while (at > 0 && busier(&d, &ret[at - 1]) < 0)
                        at--;
                if (at >= max)
                        continue;
                if (n < max)
                        n++;
                memmove(&ret[at + 1], &ret[at], (n - 1 - at) * sizeof *ret);
                ret[at] = d;
        }
        return n;
}

/* The kB figure of meminfo's line key ("Dirty:"). 0 or -EINVAL. */
static int meminfo_kib(const char *buf, size_t len, const char *key, uint64_t *ret) {
        const char *q, *le;
        uint64_t v;

        if (line_find(buf, len, key, &q, &le) < 0)
                return -EINVAL;
        while (q < le && *q == ' ')
                q++;
        if (parse_u64_prefix(q, le, &v, &q) < 0 || le - q != 3 || memcmp(q, " kB", 3) != 0 || v > UINT64_MAX / 1024)
                return -EINVAL;
        *ret = v * 1024;
        return 0;
}

int node_dirty_parse(const char *buf, size_t len, NodeDirty *ret) {
        NodeDirty d;

        if (meminfo_kib(buf, len, "Dirty:", &d.dirty_bytes) < 0 ||
            meminfo_kib(buf, len, "Writeback:", &d.writeback_bytes) < 0)
                return -EINVAL;
        *ret = d;
        return 0;
}

int node_dirty_read(int root_fd, NodeDirty *ret) {
        char buf[8192]; /* meminfo is about 1.5 KiB */
        ssize_t n = read_file_at(root_fd, "proc/meminfo", buf, sizeof buf);

        if (n < 0)
                return (int) n;
        return node_dirty_parse(buf, (size_t) n, ret);
}
