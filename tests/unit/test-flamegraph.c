/* SPDX-License-Identifier: MIT */
/* cmd/flamegraph.h: stacks merged into boxes as wide as their samples (a caller as wide as its
 * callees together, the root as all of them), the root at the bottom and callees above, a name in
 * its box where it fits and in its tooltip always, kernel frames orange, hostile names escaped
 * for XML, and the bound on boxes. Rendering in a real browser is integration-stacks'. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/flamegraph.h"
#include "tests/unit/test-util.h"

static char *svg_of(FlameGraph *g) {
        char *buf = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&buf, &size);

        assert_non_null(out);
        assert_int_equal(flame_write_svg(g, "t <&>", out), 0);
        fclose(out);
        return buf;
}

static void test_boxes(void **state) {
        FlameGraph *g = flame_new();
        const char *a[] = { "xz", "main", "lzma_code" }, *b[] = { "xz", "main", "read_[k]" },
                   *c[] = { "dd", "<b>&\"'\x1b" };

        assert_non_null(g);
        assert_int_equal(flame_add(g, a, 3, 300), 0);
        assert_int_equal(flame_add(g, b, 3, 100), 0);
        assert_int_equal(flame_add(g, c, 2, 400), 0);
        char *svg = svg_of(g);
        /* 800 samples over 1200 px: xz and main 600, lzma_code 450, read 150, dd 600. */
        assert_non_null(strstr(svg, "<title>all (800 samples, 100.00%)</title>"));
        assert_non_null(strstr(svg, "<title>main (400 samples, 50.00%)</title><rect x=\"0.0\""));
        assert_non_null(strstr(svg, "width=\"450.0\""));
        assert_non_null(strstr(svg, "<title>read_[k] (100 samples, 12.50%)</title><rect x=\"450.0\""));
        assert_non_null(strstr(svg, "<title>dd (400 samples, 50.00%)</title><rect x=\"600.0\""));
        assert_non_null(strstr(svg, "&lt;b&gt;&amp;&quot;&apos;?"));
        assert_null(strstr(svg, "<b>"));
        assert_null(strstr(svg, "\x1b"));
        assert_non_null(strstr(svg, "t &lt;&amp;&gt; (800 samples)"));
        /* The root at the bottom (depth 3: y 24 + 3 * 16), lzma_code at the top (y 24). */
        assert_non_null(strstr(svg, "<title>all (800 samples, 100.00%)</title><rect x=\"0.0\" y=\"72.0\""));
        assert_non_null(strstr(svg, "<title>lzma_code (300 samples, 37.50%)</title><rect x=\"0.0\" y=\"24.0\""));
        free(svg);
        flame_free(g);
}

static void test_bound(void **state) {
        FlameGraph *g = flame_new();
        char name[32];
        const char *f[2] = { "p", name };

        assert_non_null(g);
        for (int i = 0; i < FLAME_NODES_MAX; i++) {
                snprintf(name, sizeof name, "f%d", i);
                int r = flame_add(g, f, 2, 1);
                if (i < FLAME_NODES_MAX - 2)
                        assert_int_equal(r, 0);
                else
                        assert_int_equal(r, -ENOMEM);
        }
        char *svg = svg_of(g);
        assert_non_null(strstr(svg, "<title>all (100000 samples, 100.00%)</title>"));
        free(svg);
        flame_free(g);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_boxes),
                cmocka_unit_test(test_bound),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
