/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/fileio.h"
#include "base/macro.h"
#include "base/parse.h"
#include "base/unparsed.h"
#include "probes/limits-io.h"

/* "MAJ:MIN" at the start of [s, end), *ret_rest after it. 0 or -EINVAL. */
static int parse_device(const char *s, const char *end, uint32_t *ret_major, uint32_t *ret_minor,
                        const char **ret_rest) {
        uint64_t maj, min;

        if (parse_u64_prefix(s, end, &maj, &s) < 0 || s >= end || *s != ':' ||
            parse_u64_prefix(s + 1, end, &min, &s) < 0 || maj > UINT32_MAX || min > UINT32_MAX)
                return -EINVAL;
        *ret_major = (uint32_t) maj;
        *ret_minor = (uint32_t) min;
        *ret_rest = s;
        return 0;
}

/* The entry of MAJ:MIN in io, appended (rules unset) when new; NULL when io is full (counted). */
static IoDeviceLimits *device_get(IoLimits *io, uint32_t major, uint32_t minor) {
        IoDeviceLimits *d;

        for (size_t i = 0; i < io->n_devices; i++)
                if (io->devices[i].major == major && io->devices[i].minor == minor)
                        return &io->devices[i];
        if (io->n_devices >= LIMITS_IO_DEVICES_MAX) {
                io->devices_dropped++;
                return NULL;
        }
        d = &io->devices[io->n_devices++];
        *d = (IoDeviceLimits) { .major = major, .minor = minor };
        d->rbps = d->wbps = d->riops = d->wiops = LIMITS_UNLIMITED;
        return d;
}

/* A copy of MAJ:MIN's entry in io (a new one, rules unset, when it has none), for a line to fill
 * before it is kept (device_keep()). */
static IoDeviceLimits device_draft(const IoLimits *io, uint32_t major, uint32_t minor) {
        IoDeviceLimits d = { .major = major, .minor = minor };

        for (size_t i = 0; i < io->n_devices; i++)
                if (io->devices[i].major == major && io->devices[i].minor == minor)
                        return io->devices[i];
        d.rbps = d.wbps = d.riops = d.wiops = LIMITS_UNLIMITED;
        return d;
}

/* A line read whole: its draft into io (counted as dropped when io is full). */
static void device_keep(IoLimits *io, const IoDeviceLimits *draft) {
        IoDeviceLimits *d = device_get(io, draft->major, draft->minor);

        if (d)
                *d = *draft;
}

/* A "key=value" token named name? */
static bool token_is(const char *tok, const char *eq, const char *name) {
        size_t n = strlen(name);
        return (size_t) (eq - tok) == n && memcmp(tok, name, n) == 0;
}

/* The counter or rule of d that a "key=" token names in io.stat (stat) or io.max (!stat); NULL for
 * keys we skip (iocost's "cost.vrate=100.00", io.latency's, ...). */
static uint64_t *device_field(IoDeviceLimits *d, bool stat, const char *tok, const char *eq) {
        static const char *const stat_keys[] = { "rbytes", "wbytes", "rios", "wios", "dbytes", "dios" };
        static const char *const max_keys[] = { "rbps", "wbps", "riops", "wiops" };
        uint64_t *const stat_fields[] = { &d->rbytes, &d->wbytes, &d->rios, &d->wios, &d->dbytes, &d->dios };
        uint64_t *const max_fields[] = { &d->rbps, &d->wbps, &d->riops, &d->wiops };

        if (stat) {
                for (size_t i = 0; i < ELEMENTSOF(stat_keys); i++)
                        if (token_is(tok, eq, stat_keys[i]))
                                return stat_fields[i];
        } else
                for (size_t i = 0; i < ELEMENTSOF(max_keys); i++)
                        if (token_is(tok, eq, max_keys[i]))
                                return max_fields[i];
        return NULL;
}

/* One line "MAJ:MIN key=value ..." of io.stat (stat) or io.max (!stat) into a draft of its
 * device's entry. 0, or -EINVAL for a line it cannot read (the kernel's "(unknown) " line of a
 * device without a name: kernel-facts.md: unknown-lines), the draft then half written. */
static int parse_keyed_line(const IoLimits *io, const char *line, const char *le, bool stat, IoDeviceLimits *ret) {
        uint32_t maj, min;
        const char *s;

        if (parse_device(line, le, &maj, &min, &s) < 0 || (s < le && *s != ' '))
                return -EINVAL;
        *ret = device_draft(io, maj, min);
        if (stat)
                ret->has_stat = true;
        else
                ret->has_max = true;
        while (s < le) {
                const char *tok, *te, *eq;
                uint64_t *f, v;

                while (s < le && *s == ' ')
                        s++;
                if (s >= le)
                        break;
                tok = s;
                te = memchr(s, ' ', (size_t) (le - s));
                s = te = te ? te : le;
                eq = memchr(tok, '=', (size_t) (te - tok));
                if (!eq)
                        return -EINVAL;
                f = device_field(ret, stat, tok, eq);
                if (!f)
                        continue;
                if (!stat && te - eq - 1 == 3 && memcmp(eq + 1, "max", 3) == 0)
                        v = LIMITS_UNLIMITED;
                else if (parse_u64_exact(eq + 1, (size_t) (te - eq - 1), &v) < 0)
                        return -EINVAL;
                *f = v;
        }
        return 0;
}

/* Lines of "MAJ:MIN key=value ..." (io.stat when stat, else io.max) added to io; a line it cannot
 * read costs that line and is noted (base/unparsed.h). 0. */
static int parse_keyed_lines(const char *buf, size_t len, bool stat, IoLimits *io) {
        const char *p = buf, *end = buf + len, *line, *le;

        while (line_next(&p, end, &line, &le)) {
                IoDeviceLimits d;

                if (line == le)
                        continue;
                if (parse_keyed_line(io, line, le, stat, &d) < 0) {
                        unparsed_note(stat ? UNPARSED_IO_STAT : UNPARSED_IO_MAX, line, le);
                        continue;
                }
                device_keep(io, &d);
        }
        if (stat)
                io->has_stat = true;
        else
                io->has_max = true;
        return 0;
}

int limits_parse_io_stat(const char *buf, size_t len, IoLimits *io) {
        return parse_keyed_lines(buf, len, true, io);
}

int limits_parse_io_max(const char *buf, size_t len, IoLimits *io) {
        return parse_keyed_lines(buf, len, false, io);
}

int limits_parse_blkio(const char *buf, size_t len, IoV1File which, IoLimits *io) {
        bool rwstat = which == IO_V1_SERVICE_BYTES || which == IO_V1_SERVICED;
        IoLimits c = *io;
        const char *p = buf, *end = buf + len, *line, *le;

        while (line_next(&p, end, &line, &le)) {
                IoDeviceLimits scratch, *d;
                uint32_t maj, min;
                const char *s, *name = NULL, *ne = NULL;
                uint64_t v;

                if (line == le || (le - line >= 6 && memcmp(line, "Total ", 6) == 0))
                        continue;
                if (parse_device(line, le, &maj, &min, &s) < 0 || s >= le || *s != ' ')
                        goto skip;
                s++;
                if (rwstat) {
                        name = s;
                        ne = memchr(s, ' ', (size_t) (le - s));
                        if (!ne)
                                goto skip;
                        s = ne + 1;
                }
                if (parse_u64_exact(s, (size_t) (le - s), &v) < 0)
                        goto skip;
                d = device_get(&c, maj, min);
                if (!d)
                        d = &scratch;
                if (rwstat) {
                        bool bytes = which == IO_V1_SERVICE_BYTES;
                        size_t nl = (size_t) (ne - name);

                        /* blkg_rwstat_names: Read, Write, Sync, Async, Discard, then Total. */
                        if (nl == 4 && memcmp(name, "Read", 4) == 0)
                                *(bytes ? &d->rbytes : &d->rios) = v;
                        else if (nl == 5 && memcmp(name, "Write", 5) == 0)
                                *(bytes ? &d->wbytes : &d->wios) = v;
                        else if (nl == 7 && memcmp(name, "Discard", 7) == 0)
                                *(bytes ? &d->dbytes : &d->dios) = v;
                        d->has_stat = true;
                } else {
                        uint64_t *f = which == IO_V1_READ_BPS    ? &d->rbps
                                      : which == IO_V1_WRITE_BPS ? &d->wbps
                                      : which == IO_V1_READ_IOPS ? &d->riops
                                                                 : &d->wiops;
                        *f = v;
                        d->has_max = true;
                }
                continue;
        skip:
                unparsed_note(UNPARSED_BLKIO, line, le);
        }
        if (rwstat)
                c.has_stat = true;
        else
                c.has_max = true;
        *io = c;
        return 0;
}

int limits_parse_uevent_devname(const char *buf, size_t len, char *out, size_t size) {
        const char *p, *le;
        size_t n;

        if (line_find(buf, len, "DEVNAME=", &p, &le) < 0)
                return -ENOENT;
        n = (size_t) (le - p);
        if (n == 0 || size == 0)
                return -EINVAL;
        n = n < size - 1 ? n : size - 1;
        memcpy(out, p, n);
        out[n] = '\0';
        return 0;
}

/* The length of buf[0..n) without a last line cut by a full buffer (a host with hundreds of
 * devices): the devices past it are beyond LIMITS_IO_DEVICES_MAX anyway, and a cut number would
 * read as a smaller one. */
static size_t whole_lines(const char *buf, size_t n, size_t size) {
        if (n < size - 1)
                return n;
        while (n > 0 && buf[n - 1] != '\n')
                n--;
        return n;
}

/* dirfd/name parsed into io when it is there. 1 read, 0 absent, -errno. */
static int read_into(int dirfd, const char *name, int (*parse)(const char *, size_t, IoLimits *), IoLimits *io) {
        char buf[16384];
        size_t n = 0;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        return parse(buf, whole_lines(buf, n, sizeof buf), io) < 0 ? -EINVAL : 1;
}

int limits_read_io_v2(int cgroup_fd, IoLimits *ret) {
        IoLimits io = { .source = LIMITS_SOURCE_V2 };
        int r;

        r = read_into(cgroup_fd, "io.stat", limits_parse_io_stat, &io);
        if (r >= 0)
                r = read_into(cgroup_fd, "io.max", limits_parse_io_max, &io);
        if (r < 0)
                return r;
        *ret = io;
        return 0;
}

static int read_blkio(int dirfd, const char *name, IoV1File which, IoLimits *io) {
        char buf[16384];
        size_t n = 0;
        int r = read_file_optional_at(dirfd, name, buf, sizeof buf, &n);

        if (r <= 0)
                return r;
        return limits_parse_blkio(buf, whole_lines(buf, n, sizeof buf), which, io) < 0 ? -EINVAL : 1;
}

int limits_read_io_v1(int blkio_fd, IoLimits *ret) {
        static const struct {
                const char *name;
                IoV1File which;
        } rules[] = {
                { "blkio.throttle.read_bps_device", IO_V1_READ_BPS },
                { "blkio.throttle.write_bps_device", IO_V1_WRITE_BPS },
                { "blkio.throttle.read_iops_device", IO_V1_READ_IOPS },
                { "blkio.throttle.write_iops_device", IO_V1_WRITE_IOPS },
        };
        IoLimits io = { .source = LIMITS_SOURCE_V1 };
        int r;

        r = read_blkio(blkio_fd, "blkio.throttle.io_service_bytes_recursive", IO_V1_SERVICE_BYTES, &io);
        if (r == 0)
                r = read_blkio(blkio_fd, "blkio.throttle.io_service_bytes", IO_V1_SERVICE_BYTES, &io);
        if (r >= 0)
                r = read_blkio(blkio_fd, "blkio.throttle.io_serviced_recursive", IO_V1_SERVICED, &io);
        if (r == 0)
                r = read_blkio(blkio_fd, "blkio.throttle.io_serviced", IO_V1_SERVICED, &io);
        for (size_t i = 0; r >= 0 && i < sizeof rules / sizeof rules[0]; i++)
                r = read_blkio(blkio_fd, rules[i].name, rules[i].which, &io);
        if (r < 0)
                return r;
        *ret = io;
        return 0;
}

int limits_read_device_name(int root_fd, uint32_t major, uint32_t minor, char *out, size_t size) {
        char path[64], buf[1024];
        ssize_t n;

        /* /sys/dev/block/MAJ:MIN is a symlink into /sys/devices; relative, so it resolves inside
         * a fixture tree too. */
        snprintf(path, sizeof path, "sys/dev/block/%u:%u/uevent", major, minor);
        n = read_file_at(root_fd, path, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return limits_parse_uevent_devname(buf, (size_t) n, out, size);
}

int limits_io_name_devices(int root_fd, IoLimits *io) {
        int ret = 0;

        for (size_t i = 0; i < io->n_devices; i++) {
                IoDeviceLimits *d = &io->devices[i];
                int r;

                if (d->name[0])
                        continue;
                r = limits_read_device_name(root_fd, d->major, d->minor, d->name, sizeof d->name);
                /* A device unplugged since the counters were read has no name any more. */
                if (r < 0 && r != -ENOENT && ret == 0)
                        ret = r;
        }
        return ret;
}

bool limits_io_is_limited(const IoLimits *io) {
        for (size_t i = 0; i < io->n_devices; i++) {
                const IoDeviceLimits *d = &io->devices[i];

                if (d->has_max && (d->rbps != LIMITS_UNLIMITED || d->wbps != LIMITS_UNLIMITED ||
                                   d->riops != LIMITS_UNLIMITED || d->wiops != LIMITS_UNLIMITED))
                        return true;
        }
        return false;
}

void limits_io_delta(const IoLimits *start, const IoLimits *end, IoLimits *ret) {
        IoLimits d = *end;

        d.has_stat = start->has_stat && end->has_stat;
        for (size_t i = 0; i < d.n_devices; i++) {
                IoDeviceLimits *e = &d.devices[i];
                const IoDeviceLimits *s = NULL;

                if (!d.has_stat)
                        e->has_stat = false;
                if (!e->has_stat)
                        continue;
                for (size_t j = 0; j < start->n_devices && !s; j++)
                        if (start->devices[j].major == e->major && start->devices[j].minor == e->minor &&
                            start->devices[j].has_stat)
                                s = &start->devices[j];
                if (!s)
                        continue; /* no io at the start: all of it is growth */
                e->rbytes = limits_counter_delta(s->rbytes, e->rbytes);
                e->wbytes = limits_counter_delta(s->wbytes, e->wbytes);
                e->rios = limits_counter_delta(s->rios, e->rios);
                e->wios = limits_counter_delta(s->wios, e->wios);
                e->dbytes = limits_counter_delta(s->dbytes, e->dbytes);
                e->dios = limits_counter_delta(s->dios, e->dios);
        }
        *ret = d;
}
