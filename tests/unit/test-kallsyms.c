/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "probes/kallsyms.h"
#include "tests/unit/test-util.h"

/* The shape of a Debian kernel's /proc/kallsyms (6.1, KALLSYMS_ALL): per-cpu symbols at 0, the
 * core kernel sorted, its data after _etext, then each module's symbols in its ELF symbol table's
 * order (unsorted), exported ones upper case, then the pseudo-modules. */
static const char real_kallsyms[] = "0000000000000000 A fixed_percpu_data\n"
                                    "0000000000000000 A __per_cpu_start\n"
                                    "0000000000001000 A cpu_debug_store\n"
                                    "ffffffff81000000 T _stext\n"
                                    "ffffffff81000000 T _text\n"
                                    "ffffffff81000000 T startup_64\n"
                                    "ffffffff81000070 T secondary_startup_64\n"
                                    "ffffffff810001f0 t verify_cpu\n"
                                    "ffffffff81100000 T schedule\n"
                                    "ffffffff81100080 t __schedule_cold\n"
                                    "ffffffff81100100 W arch_cpu_idle\n"
                                    "ffffffff81e00000 T __entry_text_start\n"
                                    "ffffffff81e00000 T entry_SYSCALL_64\n"
                                    "ffffffff82002000 T _etext\n"
                                    "ffffffff82200000 D __start_rodata\n"
                                    "ffffffff82200040 d some_rodata\n"
                                    "ffffffff83000000 T _sinittext\n"
                                    "ffffffff83000010 T init_function\n"
                                    "ffffffff83100000 T _einittext\n"
                                    "ffffffffc0a01020 t ext4_es_free_extent\t[ext4]\n"
                                    "ffffffffc0a01000 t ext4_es_init_tree\t[ext4]\n"
                                    "ffffffffc0a30000 d ext4_fs_type\t[ext4]\n"
                                    "ffffffffc0a02000 T ext4_sync_fs\t[ext4]\n"
                                    "ffffffffc0a04000 t ext4_exit_fs\t[ext4]\n"
                                    "ffffffffc0a00000 t jbd2_first\t[jbd2]\n"
                                    "ffffffffc0a00800 T jbd2_journal_start\t[jbd2]\n"
                                    "ffffffffc0b00000 t ftrace_trampoline\t[__builtin__ftrace]\n"
                                    "ffffffffc0c00000 t bpf_prog_6deef7357e7b4530_sd_devices\t[bpf]\n"
                                    "ffffffffc0c01000 t bpf_prog_a1b2c3d4e5f60718_sd_fw_egress\t[bpf]\n";

static KallSyms *parse(const char *s) {
        KallSyms *k = NULL;

        assert_int_equal(kallsyms_parse_buf(s, strlen(s), &k), 0);
        assert_non_null(k);
        return k;
}

/* kallsyms_find() is name at offset in module (NULL: the core kernel). */
static void assert_find(const KallSyms *k, uint64_t addr, const char *name, uint64_t offset, const char *module) {
        const char *m = "unset", *found;
        uint64_t off = UINT64_MAX;

        found = kallsyms_find(k, addr, &off, &m);
        if (!found)
                fail_msg("0x%llx: not found, wanted %s", (unsigned long long) addr, name);
        assert_string_equal(found, name);
        assert_int_equal(off, offset);
        if (module)
                assert_string_equal(m, module);
        else
                assert_null(m);
}

static void assert_miss(const KallSyms *k, uint64_t addr) {
        const char *found = kallsyms_find(k, addr, NULL, NULL);

        if (found)
                fail_msg("0x%llx: found %s, wanted nothing", (unsigned long long) addr, found);
}

static void test_real_shape(void **state) {
        _cleanup_(kallsyms_freep) KallSyms *k = parse(real_kallsyms);

        /* startup_64 and entry_SYSCALL_64 share their addresses with _stext and
         * __entry_text_start: one symbol each. */
        assert_int_equal(kallsyms_count(k), 20);
        assert_int_equal(kallsyms_skipped(k), 0);
        assert_false(kallsyms_truncated(k));
        /* Of T symbols at one address, the first in the file. */
        assert_find(k, 0xffffffff81000000, "_stext", 0, NULL);
        assert_find(k, 0xffffffff8100006f, "_stext", 0x6f, NULL);
        assert_find(k, 0xffffffff81000070, "secondary_startup_64", 0, NULL);
        assert_find(k, 0xffffffff81100000, "schedule", 0, NULL);
        assert_find(k, 0xffffffff81100001, "schedule", 1, NULL);
        assert_find(k, 0xffffffff8110007f, "schedule", 0x7f, NULL);
        assert_find(k, 0xffffffff81100080, "__schedule_cold", 0, NULL);
        assert_find(k, 0xffffffff81100100, "arch_cpu_idle", 0, NULL);
        assert_find(k, 0xffffffff81e00010, "__entry_text_start", 0x10, NULL);
        /* The last function before _etext reaches it. */
        assert_find(k, 0xffffffff82001fff, "__entry_text_start", 0x201fff, NULL);
        assert_find(k, 0xffffffffc0a01000, "ext4_es_init_tree", 0, "ext4");
        assert_find(k, 0xffffffffc0a0101f, "ext4_es_init_tree", 0x1f, "ext4");
        assert_find(k, 0xffffffffc0a01020, "ext4_es_free_extent", 0, "ext4");
        assert_find(k, 0xffffffffc0a02abc, "ext4_sync_fs", 0xabc, "ext4");
        assert_find(k, 0xffffffffc0a007ff, "jbd2_first", 0x7ff, "jbd2");
        assert_find(k, 0xffffffffc0b00000, "ftrace_trampoline", 0, "__builtin__ftrace");
        assert_find(k, 0xffffffffc0c00123, "bpf_prog_6deef7357e7b4530_sd_devices", 0x123, "bpf");
        assert_find(k, 0xffffffffc0c01000, "bpf_prog_a1b2c3d4e5f60718_sd_fw_egress", 0, "bpf");
}

/* At the edges of the ranges the file defines. */
static void test_range_edges(void **state) {
        _cleanup_(kallsyms_freep) KallSyms *k = parse(real_kallsyms);

        assert_miss(k, 0);
        assert_miss(k, 0x1000);             /* a per-cpu symbol: not text */
        assert_miss(k, 0xffffffff80ffffff); /* before _stext */
        assert_miss(k, 0xffffffff82002000); /* at _etext */
        assert_miss(k, 0xffffffff82002001); /* past it */
        assert_miss(k, 0xffffffff82200000); /* rodata */
        assert_miss(k, 0xffffffff83000010); /* init text: not a range */
        assert_miss(k, 0xffffffffc09fffff); /* before the first module */
        /* jbd2's last symbol: no symbol of jbd2 lies above it, so only its own address is named,
         * not the bytes up to the next symbol (ext4's). */
        assert_find(k, 0xffffffffc0a00800, "jbd2_journal_start", 0, "jbd2");
        assert_miss(k, 0xffffffffc0a00801);
        assert_miss(k, 0xffffffffc0a00fff);
        /* ext4's last text symbol reaches its data symbol, which bounds it. */
        assert_find(k, 0xffffffffc0a04000, "ext4_exit_fs", 0, "ext4");
        assert_find(k, 0xffffffffc0a2ffff, "ext4_exit_fs", 0x2bfff, "ext4");
        assert_miss(k, 0xffffffffc0a30000);
        assert_miss(k, 0xffffffffc0a30001);
        /* Between modules, and past the last symbol of one that has no other. */
        assert_miss(k, 0xffffffffc0a31000);
        assert_miss(k, 0xffffffffc0b00001);
        assert_miss(k, 0xffffffffc0c01001);
        assert_miss(k, UINT64_MAX);
}

/* A module span covering another module's symbols names each by its own. */
static void test_interleaved_modules(void **state) {
        _cleanup_(kallsyms_freep) KallSyms *k = parse("ffffffffc0000000 t a_first\t[a]\n"
                                                      "ffffffffc0003000 d a_data\t[a]\n"
                                                      "ffffffffc0001000 t b_first\t[b]\n"
                                                      "ffffffffc0001800 t b_last\t[b]\n"
                                                      "ffffffffc0000800 t a_second\t[a]\n");

        assert_int_equal(kallsyms_count(k), 4);
        assert_find(k, 0xffffffffc0000900, "a_second", 0x100, "a");
        assert_find(k, 0xffffffffc0001000, "b_first", 0, "b");
        assert_find(k, 0xffffffffc0001800, "b_last", 0, "b");
        /* Past b's span, b_last is the greatest symbol below: b ends at its last symbol. */
        assert_miss(k, 0xffffffffc0001801);
        assert_miss(k, 0xffffffffc0002fff);
}

/* The order of the lines does not matter: the same table read backwards. */
static void test_unsorted(void **state) {
        _cleanup_(kallsyms_freep) KallSyms *fwd = parse(real_kallsyms), *back = NULL;
        _cleanup_free_ char *rev = malloc(sizeof real_kallsyms);
        const char *end = real_kallsyms + strlen(real_kallsyms);
        size_t len = 0;

        assert_non_null(rev);
        /* The lines in reverse. */
        while (end > real_kallsyms) {
                const char *s = end - 1;

                while (s > real_kallsyms && s[-1] != '\n')
                        s--;
                memcpy(rev + len, s, (size_t) (end - s));
                len += (size_t) (end - s);
                end = s;
        }
        assert_int_equal(kallsyms_parse_buf(rev, len, &back), 0);
        assert_int_equal(kallsyms_count(back), kallsyms_count(fwd));
        for (uint64_t a = 0xffffffffc0a00000; a < 0xffffffffc0a05000; a += 0x80) {
                const char *x = kallsyms_find(fwd, a, NULL, NULL), *y = kallsyms_find(back, a, NULL, NULL);

                assert_true((x && y && strcmp(x, y) == 0) || (!x && !y));
        }
        assert_find(back, 0xffffffff81100001, "schedule", 1, NULL);
        /* Reversed, entry_SYSCALL_64 comes first of its address. */
        assert_find(back, 0xffffffff81e00000, "entry_SYSCALL_64", 0, NULL);
}

/* Of symbols at one address: text before any other, T before W before t before w, then the first
 * in the file; a million copies of one line are one symbol, and keep one name. */
static void test_duplicates(void **state) {
        static const char line[] = "ffffffff81000100 t dup_local\n";
        _cleanup_(kallsyms_freep) KallSyms *k = parse("ffffffff81000000 T _stext\n"
                                                      "ffffffff81000100 D data_first\n"
                                                      "ffffffff81000100 w weak_local\n"
                                                      "ffffffff81000100 t local_one\n"
                                                      "ffffffff81000100 W weak_global\n"
                                                      "ffffffff81000100 t local_two\n"
                                                      "ffffffff81000200 t only_local\n"
                                                      "ffffffff81000200 w only_weak\n"
                                                      "ffffffff81000300 T global_one\n"
                                                      "ffffffff81000300 T global_two\n"
                                                      "ffffffff81001000 T _etext\n");
        _cleanup_(kallsyms_freep) KallSyms *many = NULL;
        size_t n = 1000000, size = n * strlen(line) + 64;
        _cleanup_free_ char *buf = malloc(size);
        size_t len;

        assert_int_equal(kallsyms_count(k), 5);
        assert_find(k, 0xffffffff81000100, "weak_global", 0, NULL);
        assert_find(k, 0xffffffff81000200, "only_local", 0, NULL);
        assert_find(k, 0xffffffff81000300, "global_one", 0, NULL);

        assert_non_null(buf);
        len = (size_t) snprintf(buf, size, "ffffffff81000000 T _stext\nffffffff81001000 T _etext\n");
        for (size_t i = 0; i < n; i++, len += strlen(line))
                memcpy(buf + len, line, strlen(line));
        assert_int_equal(kallsyms_parse_buf(buf, len, &many), 0);
        assert_int_equal(kallsyms_count(many), 3);
        assert_false(kallsyms_truncated(many));
        assert_find(many, 0xffffffff81000fff, "dup_local", 0xeff, NULL);
}

/* The padding before functions (__pfx_) and CFI preambles (__cfi_) only bound the function before
 * them; a bound near a function (folded into its size) or far from it bounds it the same. */
static void test_padding(void **state) {
        _cleanup_(kallsyms_freep) KallSyms *k = parse("ffffffff81000000 T _stext\n"
                                                      "ffffffff81000000 t __pfx_first\n"
                                                      "ffffffff81000010 T first\n"
                                                      "ffffffff81000040 t __pfx_second\n"
                                                      "ffffffff81000050 T second\n"
                                                      "ffffffff81000060 t __cfi_third\n"
                                                      "ffffffff81000070 T third\n"
                                                      "ffffffff81001000 T __pfx_\n"
                                                      "ffffffff81020000 d far_data\n"
                                                      "ffffffff81030000 T fourth\n"
                                                      "ffffffff81040000 T _etext\n");

        assert_int_equal(kallsyms_count(k), 7);
        assert_find(k, 0xffffffff8100000f, "_stext", 0xf, NULL);
        assert_find(k, 0xffffffff8100003f, "first", 0x2f, NULL);
        assert_miss(k, 0xffffffff81000040);
        assert_miss(k, 0xffffffff8100004f);
        assert_find(k, 0xffffffff81000050, "second", 0, NULL);
        assert_find(k, 0xffffffff8100005f, "second", 0xf, NULL);
        assert_miss(k, 0xffffffff81000060);
        assert_find(k, 0xffffffff81000fff, "third", 0xf8f, NULL);
        /* A name that is only the prefix is a name. */
        assert_find(k, 0xffffffff8101ffff, "__pfx_", 0x1efff, NULL);
        assert_miss(k, 0xffffffff81020000);
        assert_miss(k, 0xffffffff8102ffff);
        assert_find(k, 0xffffffff8103ffff, "fourth", 0xffff, NULL);
        assert_miss(k, 0xffffffff81040000);
}

/* kernel-facts.md: kallsyms: without CAP_SYSLOG (or with kptr_restrict 2) every address reads 0. */
static void test_hidden(void **state) {
        static const char hidden[] = "0000000000000000 A fixed_percpu_data\n"
                                     "0000000000000000 T _stext\n"
                                     "0000000000000000 T schedule\n"
                                     "0000000000000000 t ext4_sync_fs\t[ext4]\n";
        KallSyms *k = NULL;

        assert_int_equal(kallsyms_parse_buf(hidden, strlen(hidden), &k), -EPERM);
        assert_null(k);
        assert_int_equal(kallsyms_parse_chunked(hidden, strlen(hidden), 5, &k), -EPERM);
        assert_null(k);
        /* Lines that do not parse are not addresses read as 0. */
        k = parse("garbage\n\n");
        assert_int_equal(kallsyms_count(k), 0);
        assert_int_equal(kallsyms_skipped(k), 2);
        assert_miss(k, 0);
        k = kallsyms_free(k);
        /* An empty file is an empty table. */
        assert_int_equal(kallsyms_parse_buf(NULL, 0, &k), 0);
        assert_int_equal(kallsyms_count(k), 0);
        assert_null(kallsyms_find(k, 0, NULL, NULL));
        k = kallsyms_free(k);
        assert_null(kallsyms_find(NULL, 0xffffffff81000000, NULL, NULL));
        assert_int_equal(kallsyms_count(NULL), 0);
        assert_false(kallsyms_truncated(NULL));
}

/* Every line here is broken and skipped; the good ones around them are kept. */
static void test_hostile_lines(void **state) {
        static const char *bad[] = {
                "",
                "ffffffff81000100",
                "ffffffff81000100 ",
                "ffffffff81000100 T",
                "ffffffff81000100 T ",
                "ffffffff81000100  T x",
                "ffffffff81000100 TT x",
                "ffffffff8100010g T x",
                "0ffffffff81000100 T x",
                "-ffffffff8100010 T x",
                " ffffffff81000100 T x",
                "ffffffff81000100\tT x",
                "ffffffff81000100 T x y",
                "ffffffff81000100 T x ",
                "ffffffff81000100 T x\t",
                "ffffffff81000100 T x\t[",
                "ffffffff81000100 T x\t[]",
                "ffffffff81000100 T x\t[m",
                "ffffffff81000100 T x\t[m] ",
                "ffffffff81000100 T x\t[m]]",
                "ffffffff81000100 T x\t[[m]",
                "ffffffff81000100 T x\t[m m]",
                "ffffffff81000100 T x\t\t[m]",
                "ffffffff81000100 T x [m]",
                "ffffffff81000100 T x\r",
                "ffffffff81000100 T caf\xc3\xa9",
                "ffffffff81000100 T x\x7f",
                "ffffffff81000100 \x01 x",
        };
        char buf[4096];
        size_t len = 0;
        _cleanup_(kallsyms_freep) KallSyms *k = NULL;

        len += (size_t) snprintf(buf + len, sizeof buf - len, "ffffffff81000000 T _stext\n");
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                len += (size_t) snprintf(buf + len, sizeof buf - len, "%s\n", bad[i]);
        /* A NUL inside a name would cut it short for whoever reads it. */
        memcpy(buf + len, "ffffffff81000100 T nul\0x\n", 25);
        len += 25;
        len += (size_t) snprintf(buf + len, sizeof buf - len,
                                 "ffffffff81000f00 ? odd_type\n"
                                 "0 t zero_digits_but_one\n"
                                 "FFFFFFFF81000200 t Upper_hex\n"
                                 "81000300 T short_addr\n"
                                 "ffffffff81001000 T _etext");
        assert_true(len < sizeof buf);
        assert_int_equal(kallsyms_parse_buf(buf, len, &k), 0);
        assert_int_equal(kallsyms_skipped(k), ELEMENTSOF(bad) + 1);
        /* _stext, Upper_hex, short_addr, zero_digits_but_one and _etext (a last line without '\n'). */
        assert_int_equal(kallsyms_count(k), 5);
        assert_find(k, 0xffffffff81000100, "_stext", 0x100, NULL);
        assert_find(k, 0xffffffff81000200, "Upper_hex", 0, NULL);
        /* A symbol of another type bounds the one below it. */
        assert_miss(k, 0xffffffff81000f00);
        assert_miss(k, 0x81000300);
}

/* A name of KALLSYMS_NAME_MAX - 1 bytes is kept; longer, cut and marked. A module name of
 * KALLSYMS_MODULE_NAME_MAX bytes, or a line of KALLSYMS_LINE_MAX, is skipped. */
static void test_long_names(void **state) {
        char name[KALLSYMS_LINE_MAX + 64], buf[4 * sizeof name], want[KALLSYMS_NAME_MAX];
        _cleanup_(kallsyms_freep) KallSyms *k = NULL;
        const size_t line_prefix = strlen("ffffffffc0000400 t ");
        const char *module = NULL;
        int n;

        memset(name, 'n', sizeof name);
        n = snprintf(buf, sizeof buf,
                     "ffffffffc0000000 t %.*s\t[m]\n"
                     "ffffffffc0000100 t %.*s\t[m]\n"
                     "ffffffffc0000200 t long_module\t[%.*s]\n"
                     "ffffffffc0000300 t longest_module\t[%.*s]\n"
                     "ffffffffc0000400 t %.*s\n"
                     "ffffffffc0000500 t %.*s\n"
                     "ffffffffc0000600 t last\t[m]\n",
                     KALLSYMS_NAME_MAX - 1, name, KALLSYMS_LINE_MAX - 64, name, KALLSYMS_MODULE_NAME_MAX - 1, name,
                     KALLSYMS_MODULE_NAME_MAX, name, (int) (KALLSYMS_LINE_MAX - 1 - line_prefix), name,
                     (int) (KALLSYMS_LINE_MAX - line_prefix), name);
        assert_true(n > 0 && (size_t) n < sizeof buf);
        assert_int_equal(kallsyms_parse_buf(buf, (size_t) n, &k), 0);
        assert_int_equal(kallsyms_skipped(k), 2);
        assert_int_equal(kallsyms_count(k), 5);
        assert_int_equal(strlen(kallsyms_find(k, 0xffffffffc0000000, NULL, NULL)), KALLSYMS_NAME_MAX - 1);
        memset(want, 'n', sizeof want);
        memcpy(want + KALLSYMS_NAME_MAX - 1 - strlen(KALLSYMS_CUT_MARK), KALLSYMS_CUT_MARK,
               strlen(KALLSYMS_CUT_MARK) + 1);
        assert_find(k, 0xffffffffc0000100, want, 0, "m");
        assert_non_null(kallsyms_find(k, 0xffffffffc0000200, NULL, &module));
        assert_int_equal(strlen(module), KALLSYMS_MODULE_NAME_MAX - 1);
        /* The line of the longer one was skipped: the one below names only its own address. */
        assert_miss(k, 0xffffffffc0000300);
        /* The core kernel has no _stext here: its symbols are kept, and never found. */
        assert_miss(k, 0xffffffffc0000400);
        assert_find(k, 0xffffffffc0000600, "last", 0, "m");
}

/* Fed in chunks of any size, the same table as whole: lines cut anywhere, long ones too. */
static void test_chunked(void **state) {
        static const size_t chunks[] = { 1, 2, 3, 7, 16, 17, 64, 4095, 4096, 4097, SIZE_MAX };
        char name[KALLSYMS_LINE_MAX], buf[3 * KALLSYMS_LINE_MAX + sizeof real_kallsyms];
        _cleanup_(kallsyms_freep) KallSyms *whole = NULL;
        int n;

        memset(name, 'x', sizeof name);
        n = snprintf(buf, sizeof buf, "%sffffffffc0d00000 t %.*s\t[long]\nffffffffc0d01000 t %.*s\t[long]\n%s",
                     real_kallsyms, KALLSYMS_LINE_MAX - 40, name, KALLSYMS_LINE_MAX, name,
                     "ffffffffc0d02000 t after_the_long\t[long]");
        assert_true(n > 0 && (size_t) n < sizeof buf);
        assert_int_equal(kallsyms_parse_buf(buf, (size_t) n, &whole), 0);
        assert_int_equal(kallsyms_skipped(whole), 1);
        for (size_t i = 0; i < ELEMENTSOF(chunks); i++) {
                _cleanup_(kallsyms_freep) KallSyms *k = NULL;

                assert_int_equal(kallsyms_parse_chunked(buf, (size_t) n, chunks[i], &k), 0);
                assert_int_equal(kallsyms_count(k), kallsyms_count(whole));
                assert_int_equal(kallsyms_skipped(k), 1);
                for (uint64_t a = 0xffffffffc0a00000; a < 0xffffffffc0d03000; a += 0x100) {
                        const char *x = kallsyms_find(whole, a, NULL, NULL), *y = kallsyms_find(k, a, NULL, NULL);

                        assert_true((x && y && strcmp(x, y) == 0) || (!x && !y));
                }
                assert_find(k, 0xffffffffc0d02000, "after_the_long", 0, "long");
                assert_find(k, 0xffffffff81100001, "schedule", 1, NULL);
        }
}

/* Past KALLSYMS_SYMS_MAX symbols, or KALLSYMS_MODULES_MAX modules, the rest is not read. */
static void test_syms_max(void **state) {
        size_t n = KALLSYMS_SYMS_MAX + 10, size = n * 40 + 64, len = 0;
        _cleanup_free_ char *buf = malloc(size);
        _cleanup_(kallsyms_freep) KallSyms *k = NULL, *m = NULL;

        assert_non_null(buf);
        len += (size_t) snprintf(buf, size, "ffffffff81000000 T _stext\nffffffffffff0000 T _etext\n");
        for (size_t i = 2; i < n; i++)
                len += (size_t) snprintf(buf + len, size - len, "%016llx t f%zu\n",
                                         (unsigned long long) (0xffffffff81000000 + i * 16), i);
        assert_int_equal(kallsyms_parse_buf(buf, len, &k), 0);
        assert_true(kallsyms_truncated(k));
        assert_int_equal(kallsyms_count(k), KALLSYMS_SYMS_MAX);
        assert_find(k, 0xffffffff81000000 + (KALLSYMS_SYMS_MAX - 1) * 16 + 5, "f1048575", 5, NULL);
        /* The lines not read bound nothing: the last one read reaches _etext. */
        assert_find(k, 0xffffffff81000000 + KALLSYMS_SYMS_MAX * 16 + 5, "f1048575", 21, NULL);
        k = kallsyms_free(k);

        len = 0;
        for (size_t i = 0; i < KALLSYMS_MODULES_MAX + 2; i++)
                len += (size_t) snprintf(buf + len, size - len, "%016llx t f\t[m%zu]\n",
                                         (unsigned long long) (0xffffffffc0000000 + i * 16), i);
        assert_int_equal(kallsyms_parse_buf(buf, len, &m), 0);
        assert_true(kallsyms_truncated(m));
        assert_int_equal(kallsyms_count(m), KALLSYMS_MODULES_MAX);
        assert_find(m, 0xffffffffc0000000 + (KALLSYMS_MODULES_MAX - 1) * 16, "f", 0, "m4095");
}

#define BIG_SIZE (KALLSYMS_BYTES_MAX + 4096)
#define AT_BOUND "ffffffff81000100 t at_the_bound\n"
#define PAST_BOUND "ffffffff81000200 t past_the_bound\n"

/* The core kernel's range, then lines of '#' (skipped) until the line AT_BOUND ends exactly at
 * KALLSYMS_BYTES_MAX, then PAST_BOUND. *ret_skipped: the lines of '#'. */
static char *make_big(size_t *ret_skipped) {
        char *buf = malloc(BIG_SIZE);
        size_t len, want = KALLSYMS_BYTES_MAX - strlen(AT_BOUND), skipped = 0;

        assert_non_null(buf);
        len = (size_t) snprintf(buf, BIG_SIZE, "ffffffff81000000 T _stext\nffffffff8100f000 T _etext\n");
        while (len < want) {
                size_t n = MIN((size_t) 3000, want - len);

                memset(buf + len, '#', n - 1);
                buf[len + n - 1] = '\n';
                len += n;
                skipped++;
        }
        memcpy(buf + len, AT_BOUND, strlen(AT_BOUND));
        len += strlen(AT_BOUND);
        assert_int_equal(len, KALLSYMS_BYTES_MAX);
        memcpy(buf + len, PAST_BOUND, strlen(PAST_BOUND));
        *ret_skipped = skipped;
        return buf;
}

/* Past KALLSYMS_BYTES_MAX only the whole lines within them are read; a file of exactly that many
 * bytes is whole; a line the bound cuts is dropped, not counted. */
static void test_bytes_max(void **state) {
        size_t skipped, cut = KALLSYMS_BYTES_MAX - 10;
        _cleanup_free_ char *buf = make_big(&skipped);
        KallSyms *k = NULL;

        assert_int_equal(kallsyms_parse_buf(buf, KALLSYMS_BYTES_MAX, &k), 0);
        assert_false(kallsyms_truncated(k));
        assert_int_equal(kallsyms_skipped(k), skipped);
        assert_find(k, 0xffffffff81000200, "at_the_bound", 0x100, NULL);
        k = kallsyms_free(k);
        assert_int_equal(kallsyms_parse_buf(buf, KALLSYMS_BYTES_MAX + strlen(PAST_BOUND), &k), 0);
        assert_true(kallsyms_truncated(k));
        assert_int_equal(kallsyms_skipped(k), skipped);
        assert_int_equal(kallsyms_count(k), 3);
        assert_find(k, 0xffffffff81000200, "at_the_bound", 0x100, NULL);
        k = kallsyms_free(k);
        /* AT_BOUND cut by the bound. */
        memmove(buf + cut, buf + KALLSYMS_BYTES_MAX - strlen(AT_BOUND), strlen(AT_BOUND));
        assert_int_equal(kallsyms_parse_buf(buf, cut + strlen(AT_BOUND), &k), 0);
        assert_true(kallsyms_truncated(k));
        assert_int_equal(kallsyms_skipped(k), skipped);
        assert_int_equal(kallsyms_count(k), 2);
        assert_find(k, 0xffffffff81000200, "_stext", 0x200, NULL);
        k = kallsyms_free(k);
}

/* A temporary directory standing in for /proc, holding "kallsyms" with buf[0..len). */
static int make_proc(char *dir, const char *buf, size_t len) {
        int proc, fd;

        assert_non_null(mkdtemp(dir));
        proc = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        assert_true(proc >= 0);
        fd = openat(proc, "kallsyms", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, len), (ssize_t) len);
        close(fd);
        return proc;
}

static void remove_proc(char *dir, int proc) {
        assert_int_equal(unlinkat(proc, "kallsyms", 0), 0);
        close(proc);
        assert_int_equal(rmdir(dir), 0);
}

/* Through the chunked read, the same as the parser's: at the bound and past it, and hidden. */
static void test_load_file(void **state) {
        char dir[] = "/tmp/test-kallsyms-XXXXXX", dir2[] = "/tmp/test-kallsyms-XXXXXX";
        static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 T schedule\n";
        size_t skipped;
        _cleanup_free_ char *buf = make_big(&skipped);
        KallSyms *k = NULL;
        int proc;

        proc = make_proc(dir, buf, KALLSYMS_BYTES_MAX);
        assert_int_equal(kallsyms_load(proc, &k), 0);
        assert_false(kallsyms_truncated(k));
        assert_int_equal(kallsyms_skipped(k), skipped);
        assert_find(k, 0xffffffff81000200, "at_the_bound", 0x100, NULL);
        k = kallsyms_free(k);
        remove_proc(dir, proc);
        strcpy(dir, "/tmp/test-kallsyms-XXXXXX");
        proc = make_proc(dir, buf, KALLSYMS_BYTES_MAX + strlen(PAST_BOUND));
        assert_int_equal(kallsyms_load(proc, &k), 0);
        assert_true(kallsyms_truncated(k));
        assert_int_equal(kallsyms_count(k), 3);
        assert_find(k, 0xffffffff81000200, "at_the_bound", 0x100, NULL);
        k = kallsyms_free(k);
        remove_proc(dir, proc);

        proc = make_proc(dir2, hidden, strlen(hidden));
        assert_int_equal(kallsyms_load(proc, &k), -EPERM);
        assert_null(k);
        assert_int_equal(unlinkat(proc, "kallsyms", 0), 0);
        assert_int_equal(kallsyms_load(proc, &k), -ENOENT);
        close(proc);
        assert_int_equal(rmdir(dir2), 0);
}

/* "ADDR T name\n" of /proc/kallsyms, read here by hand: its address, or 0. */
static uint64_t live_address(const char *name) {
        _cleanup_free_ char *line = NULL;
        FILE *f = fopen("/proc/kallsyms", "re");
        size_t size = 0;
        uint64_t addr = 0;

        if (!f)
                return 0;
        while (getline(&line, &size, f) > 0) {
                unsigned long long a;
                char type, sym[256];

                if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 && type == 'T' && strcmp(sym, name) == 0 &&
                    !strchr(line, '[')) {
                        addr = a;
                        break;
                }
        }
        fclose(f);
        return addr;
}

/* This machine's kernel: schedule found at its address and one byte in. */
static void test_live(void **state) {
        int proc = open("/proc", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
        _cleanup_(kallsyms_freep) KallSyms *k = NULL;
        uint64_t addr;
        int r;

        assert_true(proc >= 0);
        r = kallsyms_load(proc, &k);
        close(proc);
        if (r == -EPERM || r == -ENOENT) {
                print_message("SKIP: /proc/kallsyms: %s\n", strerror(-r));
                skip();
        }
        assert_int_equal(r, 0);
        assert_false(kallsyms_truncated(k));
        assert_int_equal(kallsyms_skipped(k), 0);
        assert_true(kallsyms_count(k) > 1000);
        addr = live_address("schedule");
        assert_true(addr != 0);
        assert_find(k, addr, "schedule", 0, NULL);
        assert_find(k, addr + 1, "schedule", 1, NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_real_shape),
                cmocka_unit_test(test_range_edges),
                cmocka_unit_test(test_interleaved_modules),
                cmocka_unit_test(test_unsorted),
                cmocka_unit_test(test_duplicates),
                cmocka_unit_test(test_padding),
                cmocka_unit_test(test_hidden),
                cmocka_unit_test(test_hostile_lines),
                cmocka_unit_test(test_long_names),
                cmocka_unit_test(test_chunked),
                cmocka_unit_test(test_syms_max),
                cmocka_unit_test(test_bytes_max),
                cmocka_unit_test(test_load_file),
                cmocka_unit_test(test_live),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
