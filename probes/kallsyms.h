/* SPDX-License-Identifier: MIT */
/* /proc/kallsyms, parsed and bounded, to name the kernel frames of perf callchains: the pure parser
 * (taking bytes), the bounded streaming read through a /proc directory fd, and the lookup of an
 * address. It keeps the text symbols (types t, T, w, W) sorted in one array of 16-byte entries and
 * one pool of names, and does not trust the file: a line is read whole or skipped, every length is
 * bounded, and a name is kept only as a label of printable ASCII. Never logs.
 *
 * The rule of a lookup, the kernel's own (kernel/kallsyms.c get_symbol_pos(),
 * kernel/module/kallsyms.c find_kallsyms_symbol()) within what the file says: an address is named
 * by the text symbol with the greatest address at or below it, provided no other symbol of any type
 * (data, rodata, bss, absolute, and the padding and CFI preambles before functions, __pfx_* and
 * __cfi_*: these are read only as bounds) lies between them, and provided it lies in a text range
 * the file defines: [_stext, _etext) of the core kernel, or for a module (and the kernel's
 * pseudo-modules, "bpf", "__builtin__ftrace", "__builtin__kprobes") the span from its lowest to its
 * highest symbol of any type, that one included. The file does not say where a module's text ends:
 * the last text symbol of a module whose other symbols lie below it names its own address only.
 * Init text (_sinittext.._einittext, freed after boot) is not a range.
 *
 * Measured here (6.18, 121,437 lines, 5.4 MB, no modules): kallsyms_load() takes 49 ms (best of 20;
 * 13 ms of cpu in user space, the rest the kernel's making the file) and keeps 2.5 MB for 63,874
 * text symbols; the load's peak, its 64 KiB read buffer included, is 3.7 MB. See
 * docs/kernel-facts.md: kallsyms. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KALLSYMS_BYTES_MAX (64u << 20) /* of the file read; past it: truncated */
#define KALLSYMS_SYMS_MAX (1u << 20)   /* symbols read, text or not; past them: truncated */
#define KALLSYMS_MODULES_MAX 4096      /* distinct modules; past them: truncated */
#define KALLSYMS_NAME_MAX 128          /* bytes of a kept name, NUL included; longer: cut, and marked */
#define KALLSYMS_MODULE_NAME_MAX 64    /* bytes of a module's name, NUL included (the kernel's is 56) */
#define KALLSYMS_LINE_MAX 4096         /* bytes of a line; longer: skipped (the kernel's are < 600) */
#define KALLSYMS_CUT_MARK "..."        /* ends a name cut to KALLSYMS_NAME_MAX - 1 bytes */

typedef struct KallSyms KallSyms;

/* Parses buf[0..len) as /proc/kallsyms: lines "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]" (the
 * kernel's s_show()), ADDR 1 to 16 hex digits, TYPE one printable byte, NAME and MODULE printable
 * ASCII without spaces. A line that is not so (a missing field, a non-hex or overlong address, a
 * NUL or any byte outside 0x21-0x7e, a module name of KALLSYMS_MODULE_NAME_MAX bytes or more, a
 * line of KALLSYMS_LINE_MAX bytes or more) is skipped and counted. A name of KALLSYMS_NAME_MAX
 * bytes or more is kept cut: its first KALLSYMS_NAME_MAX - 4 bytes and KALLSYMS_CUT_MARK. The lines
 * may come in any order; symbols at one address are one: a text symbol before any other, then T,
 * W, t, w, then the first in the file. Past KALLSYMS_BYTES_MAX bytes only the whole lines within
 * them are read; past KALLSYMS_SYMS_MAX symbols or KALLSYMS_MODULES_MAX modules the rest is not
 * read: truncated is set either way (a truncated table may miss the bound of a symbol, or a range).
 * A last line without '\n' is a line; len 0 is an empty table. 0; -EPERM when every address read
 * is 0 (kptr_restrict hides them: kernel-facts.md: kallsyms); -ENOMEM. */
int kallsyms_parse_buf(const char *buf, size_t len, KallSyms **ret);

/* The same, fed chunk bytes at a time (chunk >= 1) as kallsyms_load() feeds its reads: the same
 * table whatever the chunk, which the unit test and the fuzzer check. */
int kallsyms_parse_chunked(const char *buf, size_t len, size_t chunk, KallSyms **ret);

/* Reads "kallsyms" under proc_fd (a /proc directory fd) in 64 KiB reads, parsed as they come (the
 * file is never held whole), at most KALLSYMS_BYTES_MAX bytes (past them: truncated, the line cut
 * by the bound dropped), as kallsyms_parse_buf(). 0; -EPERM as there (the caller can say "kernel
 * frames unnamed: /proc/kallsyms hides its addresses (kptr_restrict)"); -ENOENT without the file
 * (a kernel without CONFIG_KALLSYMS); -ENOMEM or -errno. */
int kallsyms_load(int proc_fd, KallSyms **ret);

/* Frees k and all it holds. NULL-safe; returns NULL. */
KallSyms *kallsyms_free(KallSyms *k);

static inline void kallsyms_freep(KallSyms **k) {
        if (*k)
                kallsyms_free(*k);
}

/* The text symbols kept (one per address). */
size_t kallsyms_count(const KallSyms *k);
/* The lines skipped as unreadable. */
size_t kallsyms_skipped(const KallSyms *k);
bool kallsyms_truncated(const KallSyms *k);

/* The text symbol that covers addr by the rule above, or NULL (and the outputs untouched). The name
 * and the module's live as long as k. *ret_offset (may be NULL): addr minus the symbol's address;
 * *ret_module (may be NULL): its module's name ("ext4"), or NULL for the core kernel. NULL-safe. */
const char *kallsyms_find(const KallSyms *k, uint64_t addr, uint64_t *ret_offset, const char **ret_module);
