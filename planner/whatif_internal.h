/* whatif_internal.h - what the what-if's files (whatif.c: single remedies, whatif_combo.c: the
 * cheapest combination and the largest batch, whatif_hw.c: other cards and GPUs) share. */
#ifndef YP_WHATIF_INTERNAL_H
#define YP_WHATIF_INTERNAL_H

#include "yp_whatif.h"

/* The largest batch in 1..cap of c's configuration whose real plan fits (the family's bound, then
 * down until the aligned arena fits too), its plan in *out. The batch, 0 when not even batch 1
 * fits (*out untouched), or -1 with err set. */
int64_t yp_whatif_fit_batch(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, int64_t reserve, int64_t cap,
                            yp_plan *out, yp_err *err);

/* Change in time per image against base: +0.04 = 4 % slower. */
double yp_whatif_time_cost(const yp_plan *base, double images_per_s);

/* The last point of g's checkpoint front (every checkpointable layer), 0 when the policy has none. */
int yp_whatif_ckpt_all(const yp_graph *g, const yp_candidate *c, uint64_t *layers, yp_err *err);

/* When no remedy fits alone: the cheapest combination that fits. 0, or -1 with err set. */
int yp_whatif_combo(const yp_whatif_opts *o, const yp_candidate *c, yp_whatif *w, yp_err *err);

/* When base does not fit: the smallest table cards that do, and base's batch over 2, 4, 8 GPUs.
 * 0, or -1 with err set. */
int yp_whatif_hardware(const yp_whatif_opts *o, yp_whatif *w, yp_err *err);

#endif
