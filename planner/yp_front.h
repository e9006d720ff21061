/* yp_front.h - the Pareto front of checkpoint sets (docs/architecture.md §6): activation bytes saved per
 * image against recompute FLOPs per image, over the top-level layers.
 *
 * Under the yoloplan saving policy, checkpointing layer L drops the outputs of L's inner convs
 * (all but its boundary conv) and recomputes those convs once in L's backward. Nothing else
 * changes, so each layer contributes a fixed (bytes saved, FLOPs added) pair independent of the
 * other choices, and the front is the Pareto front of subset sums: a DP over the layer order
 * that merges "without L" and "with L" and prunes dominated points. The skip connections
 * (4->16, 6->12, 10->22, 14->19) stay live because every layer keeps its boundary conv, whose
 * output rebuilds the layer's output cheaply. yp_front_brute proves the DP exact on small graphs
 * by building the real schedule of every subset.
 *
 * Ownership: points are malloc'd; free with yp_front_free. */
#ifndef YP_FRONT_H
#define YP_FRONT_H

#include "yp_schedule.h"

typedef struct {
    uint64_t layers;          /* bit L set: layer L checkpointed */
    int64_t saved_bytes;      /* bytes saved for backward per image (fp32, batch 1) */
    int64_t recompute_flops;  /* FLOPs recomputed in backward per image */
} yp_front_point;

typedef struct {
    int n;
    yp_front_point *p;        /* sorted by saved_bytes descending (point 0 = no checkpoint) */
} yp_front;

/* The front for images of h x w, by DP over per-layer contributions. 0, or -1 with err set. */
int yp_front_compute(const yp_graph *g, int64_t h, int64_t w, yp_front *out, yp_err *err);

/* The same front by building the schedule of every subset of checkpointable layers (at most
 * max_layers of them, else an error). For tests. */
int yp_front_brute(const yp_graph *g, int64_t h, int64_t w, int max_layers, yp_front *out, yp_err *err);

/* Renders a checkpoint set as "none" or "2,4,6". */
const char *yp_front_layers_str(uint64_t layers, char *buf, size_t n); /* returns buf */

/* Parses "none", "" or a comma list of layer indices into a set; every index must be a layer of
 * g. 0, or -1 with err set. */
int yp_front_parse_layers(const yp_graph *g, const char *s, uint64_t *out, yp_err *err);

void yp_front_free(yp_front *f);

#endif
