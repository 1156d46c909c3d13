/* SPDX-License-Identifier: MIT */
/* One line of /proc/kallsyms into its fields, as kernel/kallsyms.c s_show() writes it (see
 * docs/kernel-facts.md: kallsyms): pure, no allocation, the fields pointing into the line. It checks
 * the form only: what the fields mean (which types are text, which symbols bound others) is
 * probes/kallsyms.c's. Trusts nothing: a line is read whole or refused. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define KSYMLINE_MODULE_NAME_MAX 64 /* bytes of a module name, NUL included (the kernel's is 56) */

typedef struct KsymLine {
        uint64_t addr;
        char type;
        const char *name, *module;
        size_t name_len, module_len; /* module_len 0: the core kernel */
} KsymLine;

/* [s, end), a line without its '\n': "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MODULE]", ADDR 1 to 16
 * hex digits, TYPE one byte of 0x21-0x7e, NAME at least one such byte (any length: cutting it is
 * the caller's), MODULE 1 to KSYMLINE_MODULE_NAME_MAX - 1 of them without '[' or ']', nothing
 * else. 0, or -EINVAL for anything else (a NUL, a space or tab too many, a byte past 0x7e); *ret
 * written only on success. */
int ksymline_parse(const char *s, const char *end, KsymLine *ret);
