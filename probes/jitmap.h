/* SPDX-License-Identifier: MIT */
/* A process's JIT symbol map, /tmp/perf-PID.map as perf reads it (Node's --perf-basic-prof,
 * Python 3.12's perf trampoline, Java agents write it): one line a function, "START SIZE NAME",
 * START and SIZE in hex (an "0x" allowed), NAME the rest of the line; a later line over the same
 * addresses is newer code, and wins. The file is the process's own words: its names are labels,
 * and another user's file is not its map. jitmap_load() opens it inside the process's root (PID
 * in its own PID namespace, as the process names it) with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_SYMLINKS), keeps it only as a regular file of the process's owner (or root), and
 * reads at most JITMAP_BYTES_MAX. Bounded: JITMAP_ENTRIES_MAX entries, JITMAP_NAME_MAX bytes a
 * name. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JITMAP_BYTES_MAX (16u << 20)
#define JITMAP_ENTRIES_MAX (1u << 18)
#define JITMAP_NAME_MAX 256 /* bytes kept of a name, NUL included */

typedef struct JitMap JitMap;

/* Parses buf[0..len). Lines that are not "START SIZE NAME" (no name, a number that is not hex or
 * past 64 bits, a size of 0, an end past 2^64) are skipped and counted. 0 or -ENOMEM. */
int jitmap_parse_buf(const char *buf, size_t len, JitMap **ret);
/* The pid a process has in its own PID namespace: the last of /proc/PID/status's NSpid (buf of len
 * bytes); 0 when there is none. */
pid_t jitmap_parse_nspid(const char *buf, size_t len);
/* The map of process pid (proc_fd: /proc), as the process names it (its NSpid). 0; -ENOENT
 * without one; -EPERM when the file is not the process owner's (or root's), not a regular file,
 * or reached through a symlink; -ESRCH when the process is gone; -ENOMEM or -errno. */
int jitmap_load(int proc_fd, pid_t pid, JitMap **ret);
JitMap *jitmap_free(JitMap *m);
size_t jitmap_count(const JitMap *m);
size_t jitmap_skipped(const JitMap *m);
bool jitmap_truncated(const JitMap *m);
/* The name of the function covering addr (the newest line that does), and addr's offset in it;
 * NULL when none does. */
const char *jitmap_find(const JitMap *m, uint64_t addr, uint64_t *ret_offset);
