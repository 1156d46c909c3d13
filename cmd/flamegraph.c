/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cmd/flamegraph.h"

#define NAME_MAX_BYTES 512

typedef struct FlameNode {
        char *name; /* NULL: the root */
        uint64_t count;
        int32_t first_child, last_child, next_sibling; /* indexes, -1: none */
} FlameNode;

struct FlameGraph {
        FlameNode *nodes; /* [0]: the root */
        size_t n, cap;
        int32_t *index; /* open addressing by (parent, name): a node's index, -1 empty */
        int32_t *parent_of;
        size_t cap_index;
};

static uint64_t key_of(int32_t parent, const char *name) {
        uint64_t h = 1469598103934665603ULL ^ (uint64_t) (uint32_t) parent;

        for (const char *p = name; *p; p++)
                h = (h ^ (uint8_t) *p) * 1099511628211ULL;
        return h;
}

/* Makes room for one more node in the index: at most half full. */
static int index_grow(FlameGraph *g) {
        if ((g->n + 1) * 2 <= g->cap_index)
                return 0;
        size_t cap = g->cap_index ? g->cap_index * 2 : 1024;
        int32_t *t = malloc(cap * sizeof *t);
        if (!t)
                return -ENOMEM;
        memset(t, 0xff, cap * sizeof *t);
        for (size_t i = 1; i < g->n; i++) {
                size_t j = key_of(g->parent_of[i], g->nodes[i].name) & (cap - 1);
                while (t[j] >= 0)
                        j = (j + 1) & (cap - 1);
                t[j] = (int32_t) i;
        }
        free(g->index);
        g->index = t;
        g->cap_index = cap;
        return 0;
}

FlameGraph *flame_new(void) {
        FlameGraph *g = calloc(1, sizeof *g);

        if (g) {
                g->nodes = calloc(64, sizeof *g->nodes);
                g->parent_of = calloc(64, sizeof *g->parent_of);
        }
        if (!g || !g->nodes || !g->parent_of) {
                if (g) {
                        free(g->nodes);
                        free(g->parent_of);
                }
                free(g);
                return NULL;
        }
        g->cap = 64;
        g->n = 1;
        g->nodes[0] = (FlameNode) { .first_child = -1, .last_child = -1, .next_sibling = -1 };
        return g;
}

void flame_free(FlameGraph *g) {
        if (!g)
                return;
        for (size_t i = 0; i < g->n; i++)
                free(g->nodes[i].name);
        free(g->nodes);
        free(g->index);
        free(g->parent_of);
        free(g);
}

/* The child of parent named name, made when missing (the last of its siblings); -1 past
 * FLAME_NODES_MAX or short of memory. */
static int32_t child(FlameGraph *g, int32_t parent, const char *name) {
        if (index_grow(g) < 0)
                return -1;
        size_t j = key_of(parent, name) & (g->cap_index - 1);
        for (; g->index[j] >= 0; j = (j + 1) & (g->cap_index - 1)) {
                int32_t c = g->index[j];
                if (g->parent_of[c] == parent && strcmp(g->nodes[c].name, name) == 0)
                        return c;
        }
        if (g->n >= FLAME_NODES_MAX)
                return -1;
        if (g->n == g->cap) {
                FlameNode *t = realloc(g->nodes, 2 * g->cap * sizeof *t);
                int32_t *q = t ? realloc(g->parent_of, 2 * g->cap * sizeof *q) : NULL;
                if (t)
                        g->nodes = t;
                if (!q)
                        return -1;
                g->parent_of = q;
                g->cap *= 2;
        }
        char *copy = strndup(name, NAME_MAX_BYTES);
        if (!copy)
                return -1;
        int32_t i = (int32_t) g->n++;
        g->nodes[i] = (FlameNode) { .name = copy, .first_child = -1, .last_child = -1, .next_sibling = -1 };
        g->parent_of[i] = parent;
        g->index[j] = i;
        /* The last sibling, so children are drawn in the order they came. */
        int32_t *link = &g->nodes[parent].first_child;
        if (g->nodes[parent].last_child >= 0)
                link = &g->nodes[g->nodes[parent].last_child].next_sibling;
        *link = i;
        g->nodes[parent].last_child = i;
        return i;
}

int flame_add(FlameGraph *g, const char *const *frames, size_t n, uint64_t count) {
        int32_t at = 0;

        g->nodes[0].count += count;
        for (size_t i = 0; i < n; i++) {
                at = child(g, at, frames[i]);
                if (at < 0)
                        return -ENOMEM;
                g->nodes[at].count += count;
        }
        return 0;
}

/* XML text of s: the five entities escaped, control characters as '?'. */
static void put_xml(const char *s, size_t max, FILE *out) {
        char safe[NAME_MAX_BYTES * 2 + 8];

        text_terminal_safe(s, safe, sizeof safe);
        size_t n = 0;
        for (const char *p = safe; *p && n < max; p++, n++) {
                switch (*p) {
                case '&':
                        fputs("&amp;", out);
                        break;
                case '<':
                        fputs("&lt;", out);
                        break;
                case '>':
                        fputs("&gt;", out);
                        break;
                case '"':
                        fputs("&quot;", out);
                        break;
                case '\'':
                        fputs("&apos;", out);
                        break;
                default:
                        fputc(*p, out);
                }
        }
        if (strlen(safe) > max)
                fputs("..", out);
}

static size_t depth_of(const FlameGraph *g, int32_t at) {
        size_t d = 0;

        for (int32_t c = g->nodes[at].first_child; c >= 0; c = g->nodes[c].next_sibling) {
                size_t k = depth_of(g, c) + 1;
                if (k > d)
                        d = k;
        }
        return d;
}

static void colour(const char *name, char *buf, size_t size) {
        uint32_t h = 2166136261u;
        size_t len = name ? strlen(name) : 0;

        for (size_t i = 0; i < len; i++)
                h = (h ^ (uint8_t) name[i]) * 16777619u;
        if (len > 4 && strcmp(name + len - 4, "_[k]") == 0) /* the kernel's: orange */
                snprintf(buf, size, "rgb(%u,%u,%u)", 230 + h % 20, 130 + (h >> 8) % 40, 40 + (h >> 16) % 30);
        else
                snprintf(buf, size, "rgb(%u,%u,%u)", 205 + h % 50, 60 + (h >> 8) % 140, 40 + (h >> 16) % 40);
}

typedef struct Canvas {
        FILE *out;
        uint64_t total;
        size_t depth;
        size_t drawn;
} Canvas;

static void draw(const FlameGraph *g, Canvas *cv, int32_t at, double x, size_t level) {
        const FlameNode *nd = &g->nodes[at];
        double w = (double) nd->count * FLAME_WIDTH / (double) cv->total;
        double y = (double) (cv->depth - level) * FLAME_FRAME_HEIGHT + 24;
        char fill[32];

        if (w < 0.1)
                return;
        colour(nd->name, fill, sizeof fill);
        fprintf(cv->out, "<g class=\"frame\"><title>");
        put_xml(nd->name ? nd->name : "all", NAME_MAX_BYTES, cv->out);
        fprintf(cv->out, " (%" PRIu64 " samples, %.2f%%)</title>", nd->count,
                100.0 * (double) nd->count / (double) cv->total);
        fprintf(cv->out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" rx=\"2\"/>", x, y, w,
                FLAME_FRAME_HEIGHT - 1, nd->name ? fill : "rgb(200,200,200)");
        /* About 7 px a character at 12 px: a name cut to the box, none in a box under 3 of them. */
        size_t fits = (size_t) (w / 7.0);
        if (fits >= 3) {
                fprintf(cv->out, "<text x=\"%.1f\" y=\"%.1f\">", x + 3, y + FLAME_FRAME_HEIGHT - 4);
                put_xml(nd->name ? nd->name : "all", fits - 2, cv->out);
                fputs("</text>", cv->out);
        }
        fputs("</g>\n", cv->out);
        cv->drawn++;
        for (int32_t c = nd->first_child; c >= 0; c = g->nodes[c].next_sibling) {
                draw(g, cv, c, x, level + 1);
                x += (double) g->nodes[c].count * FLAME_WIDTH / (double) cv->total;
        }
}

int flame_write_svg(const FlameGraph *g, const char *title, FILE *out) {
        Canvas cv = { .out = out, .total = g->nodes[0].count ? g->nodes[0].count : 1, .depth = depth_of(g, 0) };
        size_t height = (cv.depth + 1) * FLAME_FRAME_HEIGHT + 40;

        fprintf(out,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\">\n"
                "<style>text{font-family:monospace;font-size:12px;fill:#000;pointer-events:none}"
                ".frame:hover rect{stroke:#000;stroke-width:0.5}</style>\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n<text x=\"%d\" y=\"16\">",
                FLAME_WIDTH, height, FLAME_WIDTH, height, 4);
        put_xml(title, 200, out);
        fprintf(out, " (%" PRIu64 " samples)</text>\n", g->nodes[0].count);
        draw(g, &cv, 0, 0.0, 0);
        fputs("</svg>\n", out);
        return ferror(out) ? -EIO : 0;
}
