/* SPDX-License-Identifier: MIT */
/* A module's function symbols sorted for lookups (probes/symtab.h): an address inside, at the
 * edges and between symbols; aliases at one address named global first; a local label nested in
 * a function; sizeless, nameless and overflowing symbols left out; the bound; and every address
 * of a random table against a linear scan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/symtab.h"
#include "tests/unit/test-util.h"

static void test_find(void **state) {
        SymTab t = {};

        (void) state;
        assert_int_equal(symtab_add(&t, 0x3000, 0x100, "c", SYM_GLOBAL), 0);
        assert_int_equal(symtab_add(&t, 0x1000, 0x10, "a", SYM_LOCAL), 0);
        assert_int_equal(symtab_add(&t, 0x2000, 0x800, "b", SYM_GLOBAL), 0);
        symtab_seal(&t);
        assert_int_equal(t.n, 3);
        assert_null(symtab_find(&t, 0));
        assert_null(symtab_find(&t, 0xfff));
        assert_string_equal(symtab_find(&t, 0x1000)->name, "a");
        assert_string_equal(symtab_find(&t, 0x100f)->name, "a");
        assert_null(symtab_find(&t, 0x1010)); /* past a's end, before b: no symbol, not "a+0x10" */
        assert_string_equal(symtab_find(&t, 0x27ff)->name, "b");
        assert_null(symtab_find(&t, 0x2800));
        assert_string_equal(symtab_find(&t, 0x30ff)->name, "c");
        assert_null(symtab_find(&t, 0x3100));
        assert_null(symtab_find(&t, UINT64_MAX));
        symtab_clear(&t);
        assert_null(t.syms);
}

static void test_aliases_and_nesting(void **state) {
        SymTab t = {};

        (void) state;
        /* memcpy's aliases as libc's .symtab has them: local, weak and global at one address. */
        assert_int_equal(symtab_add(&t, 0x5000, 0x40, "__memcpy_local", SYM_LOCAL), 0);
        assert_int_equal(symtab_add(&t, 0x5000, 0x40, "memcpy_weak", SYM_WEAK), 0);
        assert_int_equal(symtab_add(&t, 0x5000, 0x40, "memcpy", SYM_GLOBAL), 0);
        /* A function with a sized local symbol inside it (a cold part, a label). */
        assert_int_equal(symtab_add(&t, 0x6000, 0x1000, "outer", SYM_GLOBAL), 0);
        assert_int_equal(symtab_add(&t, 0x6400, 0x20, "outer.part", SYM_LOCAL), 0);
        symtab_seal(&t);
        assert_int_equal(t.n, 3);
        assert_string_equal(symtab_find(&t, 0x5010)->name, "memcpy");
        assert_string_equal(symtab_find(&t, 0x6410)->name, "outer.part");
        assert_string_equal(symtab_find(&t, 0x6420)->name, "outer"); /* past the nested one: the outer */
        assert_string_equal(symtab_find(&t, 0x6fff)->name, "outer");
        symtab_clear(&t);
}

static void test_ignored(void **state) {
        SymTab t = {};

        (void) state;
        assert_int_equal(symtab_add(&t, 0x1000, 0, "label", SYM_GLOBAL), 0);
        assert_int_equal(symtab_add(&t, 0x2000, 0x10, NULL, SYM_GLOBAL), 0);
        assert_int_equal(symtab_add(&t, 0x3000, 0x10, "", SYM_GLOBAL), 0);
        assert_int_equal(symtab_add(&t, UINT64_MAX - 4, 0x10, "wraps", SYM_GLOBAL), 0);
        symtab_seal(&t);
        assert_int_equal(t.n, 0);
        assert_null(symtab_find(&t, 0x1000));
        assert_null(symtab_find(&t, UINT64_MAX - 1));
        symtab_clear(&t);
}

static void test_bound(void **state) {
        SymTab t = {};

        (void) state;
        for (uint64_t i = 0; i < SYMTAB_SYMBOLS_MAX + 10; i++)
                assert_int_equal(symtab_add(&t, i * 16, 16, "f", SYM_GLOBAL), 0);
        assert_true(t.truncated);
        assert_int_equal(t.n, SYMTAB_SYMBOLS_MAX);
        symtab_seal(&t);
        assert_non_null(symtab_find(&t, (SYMTAB_SYMBOLS_MAX - 1) * 16ULL));
        assert_null(symtab_find(&t, SYMTAB_SYMBOLS_MAX * 16ULL));
        symtab_clear(&t);
}

/* Random non-overlapping functions: every address agrees with a linear scan. */
static void test_against_scan(void **state) {
        static char names[500][8];
        uint64_t start[500], size[500], at = 0x400000;
        SymTab t = {};

        (void) state;
        srand(7);
        for (int i = 0; i < 500; i++) {
                at += (uint64_t) (rand() % 64);
                start[i] = at;
                size[i] = 1 + (uint64_t) (rand() % 200);
                at += size[i];
                snprintf(names[i], sizeof names[i], "f%d", i);
        }
        for (int i = 499; i >= 0; i--) /* out of order: seal sorts */
                assert_int_equal(symtab_add(&t, start[i], size[i], names[i], SYM_GLOBAL), 0);
        symtab_seal(&t);
        for (uint64_t a = 0x400000 - 8; a < at + 8; a++) {
                const Sym *s = symtab_find(&t, a);
                int want = -1;

                for (int i = 0; i < 500; i++)
                        if (a >= start[i] && a < start[i] + size[i])
                                want = i;
                if (want < 0)
                        assert_null(s);
                else
                        assert_string_equal(s->name, names[want]);
        }
        symtab_clear(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_find),         cmocka_unit_test(test_aliases_and_nesting),
                cmocka_unit_test(test_ignored),      cmocka_unit_test(test_bound),
                cmocka_unit_test(test_against_scan),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
