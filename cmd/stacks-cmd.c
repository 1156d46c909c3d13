/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "cmd/flamegraph.h"
#include "cmd/lines.h"
#include "cmd/stacks-cmd.h"

#define FRAME_NAME_MAX 600
#define FRAMES_MAX 512

/* s made safe for a folded line: control characters '?', the separator ';' ':'. */
static const char *folded_safe(const char *s, char *buf, size_t size) {
        text_terminal_safe(s, buf, size);
        for (char *p = buf; *p; p++)
                if (*p == ';')
                        *p = ':';
        return buf;
}

static const char *frame_name(json_t *frame, json_t *modules, char *buf, size_t size) {
        const char *fn = json_string_value(json_object_get(frame, "function"));
        bool kernel = json_is_true(json_object_get(frame, "kernel"));
        char raw[FRAME_NAME_MAX];

        if (fn)
                snprintf(raw, sizeof raw, "%.500s%s", fn, kernel ? "_[k]" : "");
        else {
                json_t *mod = json_object_get(frame, "module");
                const char *path = json_is_integer(mod)
                                           ? json_string_value(json_object_get(
                                                     json_array_get(modules, (size_t) json_integer_value(mod)), "path"))
                                           : NULL;
                const char *addr = json_string_value(json_object_get(frame, "address"));
                const char *base = path ? strrchr(path, '/') : NULL;
                if (path && addr)
                        snprintf(raw, sizeof raw, "%.400s+%.40s", base ? base + 1 : path, addr);
                else
                        snprintf(raw, sizeof raw, "[unknown]%s", kernel ? "_[k]" : "");
        }
        return folded_safe(raw, buf, size);
}

static void fold_stack(const char *comm, json_t *stack, json_t *modules, StackFoldFn fn, void *userdata) {
        static char names[FRAMES_MAX][FRAME_NAME_MAX * 2];
        const char *frames[FRAMES_MAX];
        json_t *fr = json_object_get(stack, "frames");
        size_t n = 0;
        json_int_t count = json_integer_value(json_object_get(stack, "count"));

        frames[n++] = comm;
        for (size_t i = json_array_size(fr); i > 0 && n < FRAMES_MAX; i--, n++)
                frames[n] = frame_name(json_array_get(fr, i - 1), modules, names[n], sizeof names[n]);
        fn(frames, n, count > 0 ? (uint64_t) count : 0, userdata);
}

int stacks_of_line(const char *line, size_t len, const char *id, StackFoldFn fn, void *userdata, char *error,
                   size_t error_size) {
        json_error_t jerr;
        json_t *inc = json_loadb(line, len, 0, &jerr);

        if (!inc) {
                snprintf(error, error_size, "not JSON: %s", jerr.text);
                return -EINVAL;
        }
        if (!json_is_object(inc) || !json_is_string(json_object_get(inc, "type"))) {
                snprintf(error, error_size, "not an incident (no type)");
                json_decref(inc);
                return -EINVAL;
        }
        const char *its = json_string_value(json_object_get(inc, "id"));
        json_t *st = json_object_get(inc, "stacks"), *modules = json_object_get(st, "modules"), *p;
        if (!json_is_object(st) || (id && (!its || strcmp(its, id) != 0))) {
                json_decref(inc);
                return 0;
        }
        size_t i;
        json_array_foreach(json_object_get(st, "processes"), i, p) {
                const char *c = json_string_value(json_object_get(p, "comm"));
                char comm[64];
                json_t *s;
                size_t j;
                folded_safe(c && *c ? c : "[unknown]", comm, sizeof comm);
                json_array_foreach(json_object_get(p, "stacks"), j, s) fold_stack(comm, s, modules, fn, userdata);
        }
        json_decref(inc);
        return 1;
}

void stacks_print_folded(const char *const *frames, size_t n, uint64_t count, void *userdata) {
        FILE *out = userdata;

        for (size_t i = 0; i < n; i++)
                fprintf(out, "%s%s", i ? ";" : "", frames[i]);
        fprintf(out, " %llu\n", (unsigned long long) count);
}

static void add_to_graph(const char *const *frames, size_t n, uint64_t count, void *userdata) {
        (void) flame_add(userdata, frames, n, count); /* past its bound: counted in the root */
}

/* What one run reads lines for (LineFn's userdata). */
typedef struct StacksRun {
        const char *id;
        StackFoldFn fn;
        void *userdata;
        unsigned long with; /* lines that had stacks */
} StacksRun;

static int stacks_one(const char *line, size_t len, char *error, size_t error_size, void *userdata) {
        StacksRun *run = userdata;
        int r = stacks_of_line(line, len, run->id, run->fn, run->userdata, error, error_size);

        if (r > 0)
                run->with++;
        return r;
}

int stacks_cmd_run(const StacksCmdOptions *o) {
        const char *name = o->path && strcmp(o->path, "-") != 0 ? o->path : "stdin";
        FlameGraph *g = NULL;
        FILE *in = lines_open(o->path);

        if (!in)
                return 2;
        if (o->svg && !(g = flame_new())) {
                lines_close(in);
                fprintf(stderr, "psidiag: out of memory\n");
                return 1;
        }
        StacksRun run = { .id = o->id,
                          .fn = g ? add_to_graph : stacks_print_folded,
                          .userdata = g ? (void *) g : (void *) stdout };
        unsigned long bad = lines_each(in, name, stacks_one, &run);
        lines_close(in);
        if (g && run.with > 0) {
                char title[300];
                snprintf(title, sizeof title, "psidiag stacks: %.200s%s%.60s", name, o->id ? ", incident " : "",
                         o->id ? o->id : "");
                (void) flame_write_svg(g, title, stdout);
        }
        flame_free(g);
        if (run.with == 0)
                fprintf(stderr, "psidiag: %s: no incident%s with stacks (stacks_hz, snapshot --stacks-hz)\n", name,
                        o->id ? " of that id" : "");
        return bad || run.with == 0 ? 1 : 0;
}
