/* yp_arena.h - byte offsets for every tensor of a schedule in one arena (docs/architecture.md §2, §6).
 *
 * Heuristic (ggml-alloc's measure pass done statically, TFLite's greedy-by-size in spirit):
 * tensors alive for the whole step (weights, gradients, optimizer state, EMA, low-precision
 * copies) are packed first, back to back from offset 0. Every other tensor is then placed, in a
 * given order, into a gap among the tensors already placed whose lives overlap its own (the
 * smallest gap that holds it, or the lowest one), or on top of them when no gap fits. Four orders
 * (size descending, life length descending, size x life descending, birth order) times the two
 * gap rules are tried, stopping early at the lower bound, and the smallest arena wins. Sizes are
 * rounded up to the plan's alignment (the candidate's, yp_candidate.h), so every offset is
 * aligned to it.
 *
 * Planner and executor share this code: the executor allocates exactly `size` bytes and binds
 * tensor t at base + offsets[t]. Ownership: offsets is malloc'd; free with yp_arena_free. */
#ifndef YP_ARENA_H
#define YP_ARENA_H

#include "yp_liveness.h"

typedef struct {
    int64_t *offsets;     /* per tensor */
    int64_t align;        /* every offset and rounded size is a multiple of it */
    int64_t size;         /* arena bytes */
    int64_t lower_bound;  /* peak live bytes (aligned): no arena can be smaller */
    int64_t persistent;   /* bytes of the whole-step region at the bottom */
    const char *order;    /* name of the order that won */
} yp_arena;

/* Assigns offsets aligned to align (a power of two). lower_bound is the liveness peak of s at the
 * same alignment. 0, or -1 with err set. */
int yp_arena_plan(const yp_schedule *s, int64_t align, int64_t lower_bound, yp_arena *out, yp_err *err);

/* Proves the assignment valid: every tensor inside the arena, aligned to a->align, and no two tensors that
 * are live at a common step share a byte. 0, or -1 with err naming the first conflict. */
int yp_arena_check(const yp_schedule *s, const yp_arena *a, yp_err *err);

void yp_arena_free(yp_arena *a);

#endif
