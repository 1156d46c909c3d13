/* SPDX-License-Identifier: MIT */
/* /proc/<pid>/maps, parsed and bounded, for a stack unwinder that maps sampled addresses to the
 * ELF modules behind them: the pure parser (taking bytes), the bounded read through a /proc
 * directory fd, and the lookup of an address. It keeps only the rows an unwinder needs, and does
 * not open, identify or trust the files it names: the path column is a name any user chooses (it
 * may hold spaces, end in " (deleted)", be very long), so it is a label; the file is the row's
 * dev and inode. Never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROCMAPS_BYTES_MAX (1024 * 1024) /* of the file read; past it: truncated */
#define PROCMAPS_ROWS_MAX 4096           /* rows kept */
#define PROCMAPS_PATH_MAX 512            /* bytes of a kept path, NUL included */

typedef struct ProcMap {
        uint64_t start, end, offset;
        uint32_t dev_major, dev_minor;
        uint64_t inode;
        bool read, write, exec, shared;
        bool deleted;  /* the kernel's " (deleted)" suffix, removed from path */
        bool path_cut; /* the path was longer than PROCMAPS_PATH_MAX - 1: path holds "" */
        /* Into ProcMaps' pool, NUL-terminated; "" for anonymous rows; "[vdso]", "[stack]" and the
         * like as the kernel writes them. A newline in a file name is the four bytes "\012" here,
         * as the kernel writes it (fs/proc/task_mmu.c show_map_vma(): seq_file_path(m, file,
         * "\n") escapes only '\n'), undecoded: a name holding a backslash and "012" reads the same.
         * A file named "x (deleted)" reads as a deleted "x" too. */
        const char *path;
} ProcMap;

typedef struct ProcMaps {
        /* Sorted by start, as the kernel writes them (checked: a row out of order is skipped and counted). */
        ProcMap *rows;
        size_t n;
        char *pool;       /* the paths */
        size_t n_skipped; /* lines no parser could read, or out of order */
        bool truncated;   /* more bytes than PROCMAPS_BYTES_MAX or rows than PROCMAPS_ROWS_MAX */
} ProcMaps;

/* Parses buf[0..len) as /proc/<pid>/maps. Keeps the rows a stack unwinder needs: those backed by a
 * file (inode != 0) and the named special ones ("[vdso]", "[vsyscall]"); anonymous rows, [heap],
 * [stack], [vvar], [anon:NAME] and the like are not kept (the unwinder reads the stack from a
 * copy). A row is kept whole or skipped (n_skipped): a line missing a column, a number past 64
 * bits (32 for the device's major and minor), start >= end, a row that starts before the previous
 * one ended, a NUL byte. A path longer than PROCMAPS_PATH_MAX - 1 keeps its row, path "" and
 * path_cut set. Past PROCMAPS_BYTES_MAX bytes only the whole lines within them are read, past
 * PROCMAPS_ROWS_MAX rows kept the rest is not read: truncated is set either way. A last line
 * without '\n' is a line. len 0 (a kernel thread's or a zombie's maps are empty) is 0 rows, not an
 * error. *ret is overwritten: procmaps_clear() it first if it held rows. 0 or -ENOMEM. */
int procmaps_parse_buf(const char *buf, size_t len, ProcMaps *ret);

/* Reads /proc/<pid>/maps through proc_fd (a /proc directory fd, as probes/procfs.h takes) in
 * chunks, at most PROCMAPS_BYTES_MAX bytes (past them: truncated, the line cut by the bound
 * dropped), and parses it as procmaps_parse_buf(). 0; -ESRCH when the process is gone (ENOENT
 * included); -EACCES without ptrace read access to it (fs/proc/task_mmu.c proc_maps_open() opens
 * the mm with PTRACE_MODE_READ: another user's process, or one that is not dumpable); -ENOMEM or
 * -errno. */
int procmaps_read(int proc_fd, pid_t pid, ProcMaps *ret);

/* Frees m's rows and pool and zeroes it. NULL-safe. */
void procmaps_clear(ProcMaps *m);

/* The row holding addr (start <= addr < end), by binary search, or NULL. */
const ProcMap *procmaps_find(const ProcMaps *m, uint64_t addr);
