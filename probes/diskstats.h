/* SPDX-License-Identifier: MIT */
/* The node's own per-device io counters, /proc/diskstats (Documentation/admin-guide/iostats.rst),
 * for "on what" on hosts whose io counters are not per cgroup: cgroup-v1 blkio counts only on a
 * queue with a throttle rule (limits-io.h), and a node-wide watch has no cgroup at all. Whole disks
 * only (a partition's io is in its disk's line). The parser is pure; the reader reads beneath the
 * sysroot. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISKSTATS_MAX 128          /* devices kept per reading; more are counted in dropped */
#define DISKSTATS_NAME_MAX 32      /* the kernel's disk names are at most 32 bytes (DISK_NAME_LEN) */
#define DISKSTATS_SECTOR_BYTES 512 /* diskstats counts 512-byte sectors whatever the device's */

typedef struct DiskStat {
        uint32_t major, minor;
        char name[DISKSTATS_NAME_MAX];
        uint64_t rios, rsectors, rticks_ms; /* reads completed, sectors read, ms spent reading */
        uint64_t wios, wsectors, wticks_ms;
        uint64_t in_flight;   /* ios in flight now */
        uint64_t io_ticks_ms; /* ms during which the device had io in flight */
} DiskStat;

typedef struct DiskStats {
        size_t n;
        DiskStat disks[DISKSTATS_MAX];
        size_t dropped;
} DiskStats;

/* What one device did between two readings. */
typedef struct DiskBusy {
        uint32_t major, minor;
        char name[DISKSTATS_NAME_MAX];
        uint64_t rbytes, wbytes, rios, wios;
        double util;        /* share of the interval with io in flight, 0..1 */
        double await_ms;    /* mean time an io completed in the interval took (queue and service); <0: none completed */
        uint64_t in_flight; /* at the end */
        uint64_t in_flight_start;
        /* Requests in flight at both ends and fewer completed in the whole interval than wait at
         * its end: the device is not serving them (a stalled or failing disk, a throttled
         * volume), however its utilisation reads. */
        bool stuck;
} DiskBusy;

/* Parses /proc/diskstats ("MAJ MIN NAME" and at least 11 counters per line; kernels since 4.18
 * add discards, 5.5 flushes). Lines it cannot read are skipped and noted (base/unparsed.h);
 * devices past DISKSTATS_MAX are counted in dropped. 0, or -EINVAL when no line could be read. */
int diskstats_parse(const char *buf, size_t len, DiskStats *ret);

/* The same, keeping only the devices keep() says yes to (before DISKSTATS_MAX counts them): the
 * reader leaves partitions out this way. */
int diskstats_parse_filtered(const char *buf, size_t len, bool (*keep)(uint32_t major, uint32_t minor, void *userdata),
                             void *userdata, DiskStats *ret);

/* Reads <root>/proc/diskstats and keeps the whole disks: a device whose
 * <root>/sys/dev/block/MAJ:MIN/partition exists is a partition and is left out. buf is the
 * caller's scratch (the file's size: about 130 bytes a device). 0, -ENOENT when the file is not
 * there, -ENOBUFS when it does not fit in buf, or -errno. */
int diskstats_read(int root_fd, char *buf, size_t size, DiskStats *ret);

/* The devices that did io between a and b (interval_us apart), or had requests in flight at both
 * ends, busiest first (stuck ones, then utilisation, then bytes), at most max into ret. A device missing from a is left
 * out (it appeared meanwhile). Returns how many were written. Never fails. */
size_t diskstats_busiest(const DiskStats *a, const DiskStats *b, uint64_t interval_us, DiskBusy *ret, size_t max);

/* The node's page cache waiting to reach its disks, /proc/meminfo: dirty (Dirty) and being written
 * back now (Writeback), in bytes. What a buffered writer leaves behind, which the flusher writes
 * later and an fsync of anyone's waits behind (kernel-facts.md: writeback). */
typedef struct NodeDirty {
        uint64_t dirty_bytes, writeback_bytes;
} NodeDirty;

/* Both lines ("Dirty:   16264 kB"). 0, or -EINVAL when either is missing or malformed. */
int node_dirty_parse(const char *buf, size_t len, NodeDirty *ret);
/* Reads proc/meminfo beneath the sysroot. 0 or -errno. */
int node_dirty_read(int root_fd, NodeDirty *ret);
