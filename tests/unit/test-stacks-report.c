/* SPDX-License-Identifier: MIT */
/* An incident's "stacks" (incident/stacks-report.h) from a capture filled by hand: the modules
 * with their build-ids in hex, frames innermost first with their module indexes, a kernel frame
 * without an address, an unnamed user frame with its module's address, the ends said, the first
 * STACKS_REPORT_PROCS processes by samples and a named one past them (an unnamed one past them
 * left out), a process's stacks cut to STACKS_REPORT_STACKS with the rest counted in
 * other_samples, a capture that could not open written with its error, and a hostile comm kept
 * valid JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "incident/stacks-report.h"
#include "tests/unit/test-util.h"

static uint32_t add_name(StackCapture *c, const char *s) {
        size_t len = strlen(s) + 1;

        c->names = realloc(c->names, c->n_names + len);
        assert_non_null(c->names);
        memcpy(c->names + c->n_names, s, len);
        c->n_names += len;
        return (uint32_t) (c->n_names - len);
}

static void add_frame(StackCapture *c, const char *name, uint32_t offset, int32_t module, uint64_t address,
                      bool kernel) {
        c->frames = realloc(c->frames, (c->n_frames + 1) * sizeof *c->frames);
        assert_non_null(c->frames);
        c->frames[c->n_frames++] = (StackFrame) { .name = name ? add_name(c, name) : STACK_NO_NAME,
                                                  .offset = offset,
                                                  .module = module,
                                                  .address = address,
                                                  .kernel = kernel };
}

static void add_proc(StackCapture *c, pid_t pid, const char *comm, uint32_t samples) {
        c->procs = realloc(c->procs, (c->n_procs + 1) * sizeof *c->procs);
        assert_non_null(c->procs);
        StackProc *p = &c->procs[c->n_procs++];
        *p = (StackProc) { .pid = pid, .samples = samples };
        snprintf(p->comm, sizeof p->comm, "%s", comm);
}

static void add_stack(StackCapture *c, uint32_t count, uint32_t first, uint16_t n, StackEnd how, UnwindEnd end) {
        StackProc *p = &c->procs[c->n_procs - 1];

        p->stacks = realloc(p->stacks, (p->n_stacks + 1) * sizeof *p->stacks);
        assert_non_null(p->stacks);
        p->stacks[p->n_stacks++] =
                (StackEntry) { .count = count, .first = first, .n_frames = n, .how = how, .user_end = end };
}

static void capture_free(StackCapture *c) {
        for (size_t i = 0; i < c->n_procs; i++)
                free(c->procs[i].stacks);
        free(c->procs);
        free(c->frames);
        free(c->modules);
        free(c->names);
}

/* Two modules, the kernel's and a library's; xz with a kernel frame, a named and an unnamed user
 * frame; then processes p1..p6 of fewer samples. */
static void fill(StackCapture *c) {
        *c = (StackCapture) { .o = { .hz = 99 },
                              .start_mono_us = 1000000,
                              .end_mono_us = 2000400,
                              .info = { .kernel_callchains = true },
                              .unwinder = true,
                              .samples = 300,
                              .lost = 2,
                              .unwind_us = 12345,
                              .over_budget = 3 };
        c->modules = calloc(2, sizeof *c->modules);
        assert_non_null(c->modules);
        c->modules[0] = (StackModule) { .path = add_name(c, "[kernel]"), .kernel = true };
        c->modules[1] = (StackModule) { .path = add_name(c, "/usr/lib/x86_64-linux-gnu/liblzma.so.5"),
                                        .build_id_size = 3,
                                        .build_id = { 0x0a, 0xbc, 0xff } };
        c->n_modules = 2;
        add_frame(c, "clear_page_erms", 7, 0, 0xffffffff81234567ULL, true);
        add_frame(c, "lzma_code", 0x42, 1, 0x5d10, false);
        add_frame(c, NULL, 0, 1, 0x1234, false);
        add_proc(c, 4242, "x\x1b\n\xff", 200);
        for (uint32_t i = 0; i < 7; i++)
                add_stack(c, 30 - i, 0, i == 0 ? 3 : 2, STACK_END_UNWOUND, UNWIND_END_NO_CFI);
        for (int i = 1; i <= 6; i++) {
                char comm[16];
                snprintf(comm, sizeof comm, "p%d", i);
                add_proc(c, 5000 + i, comm, (uint32_t) (20 - i));
                add_stack(c, (uint32_t) (20 - i), 0, 1, i == 1 ? STACK_END_KERNEL : STACK_END_NOT_UNWOUND,
                          UNWIND_END_OUTERMOST);
        }
}

static void test_report(void **state) {
        StackCapture c;
        pid_t named[] = { 5006 };

        fill(&c);
        json_t *o = stacks_report_object(&c, "batch/x", named, 1);
        assert_non_null(o);
        char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        assert_non_null(text);
        assert_int_equal(json_integer_value(json_object_get(o, "hz")), 99);
        assert_string_equal(json_string_value(json_object_get(o, "scope")), "/batch/x");
        assert_int_equal(json_integer_value(json_object_get(o, "duration_ms")), 1000);
        assert_true(json_is_null(json_object_get(o, "error")));
        assert_true(json_is_true(json_object_get(o, "kernel_callchains")));
        assert_int_equal(json_integer_value(json_object_get(o, "lost")), 2);
        assert_int_equal(json_integer_value(json_object_get(o, "unwind_ms")), 12);
        assert_int_equal(json_integer_value(json_object_get(o, "over_budget_samples")), 3);

        json_t *mods = json_object_get(o, "modules");
        assert_int_equal(json_array_size(mods), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(mods, 0), "path")), "[kernel]");
        assert_true(json_is_null(json_object_get(json_array_get(mods, 0), "build_id")));
        assert_string_equal(json_string_value(json_object_get(json_array_get(mods, 1), "build_id")), "0abcff");

        json_t *procs = json_object_get(o, "processes");
        /* The first five by samples (xz, p1..p4), then p6, named; p5 is neither. */
        assert_int_equal(json_array_size(procs), STACKS_REPORT_PROCS + 1);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(procs, 5), "pid")), 5006);
        for (size_t i = 0; i < json_array_size(procs); i++)
                assert_int_not_equal(json_integer_value(json_object_get(json_array_get(procs, i), "pid")), 5005);

        json_t *xz = json_array_get(procs, 0);
        assert_string_equal(json_string_value(json_object_get(xz, "comm")), "x\x1b\n\xef\xbf\xbd");
        json_t *stacks = json_object_get(xz, "stacks");
        assert_int_equal(json_array_size(stacks), STACKS_REPORT_STACKS);
        /* 200 samples, 30+29+28+27+26 shown. */
        assert_int_equal(json_integer_value(json_object_get(xz, "other_samples")), 200 - 140);
        json_t *s0 = json_array_get(stacks, 0);
        assert_int_equal(json_integer_value(json_object_get(s0, "count")), 30);
        assert_string_equal(json_string_value(json_object_get(s0, "end")), "no_cfi");
        json_t *frames = json_object_get(s0, "frames");
        assert_int_equal(json_array_size(frames), 3);
        json_t *k = json_array_get(frames, 0), *named_f = json_array_get(frames, 1), *anon = json_array_get(frames, 2);
        assert_string_equal(json_string_value(json_object_get(k, "function")), "clear_page_erms");
        assert_int_equal(json_integer_value(json_object_get(k, "offset")), 7);
        assert_true(json_is_true(json_object_get(k, "kernel")));
        assert_true(json_is_null(json_object_get(k, "address"))); /* never a kernel address */
        assert_null(strstr(text, "ffffffff81234567"));
        assert_string_equal(json_string_value(json_object_get(named_f, "function")), "lzma_code");
        assert_int_equal(json_integer_value(json_object_get(named_f, "module")), 1);
        assert_string_equal(json_string_value(json_object_get(named_f, "address")), "0x5d10");
        assert_true(json_is_null(json_object_get(anon, "function")));
        assert_true(json_is_null(json_object_get(anon, "offset")));
        assert_string_equal(json_string_value(json_object_get(anon, "address")), "0x1234");

        json_t *p1 = json_array_get(procs, 1), *p2 = json_array_get(procs, 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(p1, "stacks"), 0), "end")),
                            "kernel_thread");
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(p2, "stacks"), 0), "end")),
                            "not_unwound");
        free(text);
        json_decref(o);
        capture_free(&c);
}

static void test_error(void **state) {
        StackCapture c = { .o = { .hz = 49 }, .error = -EACCES, .kernel_names_error = -EPERM };
        char buf[256];

        json_t *o = stacks_report_object(&c, NULL, NULL, 0);
        assert_non_null(o);
        assert_true(json_is_null(json_object_get(o, "scope")));
        assert_string_equal(json_string_value(json_object_get(o, "error")),
                            stacks_report_error(-EACCES, buf, sizeof buf));
        assert_non_null(strstr(buf, "CAP_PERFMON"));
        assert_non_null(strstr(json_string_value(json_object_get(o, "kernel_names")), "kptr_restrict"));
        assert_true(json_is_false(json_object_get(o, "kernel_callchains")));
        assert_int_equal(json_array_size(json_object_get(o, "processes")), 0);
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_report),
                cmocka_unit_test(test_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
