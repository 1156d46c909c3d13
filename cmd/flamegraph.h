/* SPDX-License-Identifier: MIT */
/* A flame graph of stacks, as one self-contained SVG (no script, no external reference): each
 * frame a box as wide as its samples, its callers below it, the root ("all") at the bottom; a box
 * holds its name where it fits, and every box a <title> (the browser's tooltip) with its name, its
 * samples and their share. Kernel frames (named with "_[k]", as folded lines mark them) are drawn
 * in orange, the rest in warm colours chosen by name, so a frame keeps its colour from one graph
 * to the next. Names are anyone's words: escaped for XML, control characters as '?'. Bounded:
 * at most FLAME_NODES_MAX boxes; a stack past them is counted in the root and the boxes it
 * already has. Pure: writes to
 * the FILE it is given. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAME_NODES_MAX 100000
#define FLAME_WIDTH 1200
#define FLAME_FRAME_HEIGHT 16

typedef struct FlameGraph FlameGraph;

FlameGraph *flame_new(void);
void flame_free(FlameGraph *g);
/* One stack of count samples, frames[0] its outermost frame (the process's name, for
 * `psidiag stacks`). 0, or -ENOMEM (the stack then counted in the root only). */
int flame_add(FlameGraph *g, const char *const *frames, size_t n, uint64_t count);
/* The SVG, titled title. 0, or -EIO when out failed. */
int flame_write_svg(const FlameGraph *g, const char *title, FILE *out);
