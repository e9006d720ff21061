/* yp_family.h - one schedule structure, every size: the linear model the search runs on.
 *
 * For a fixed (model, checkpoint set, policy, freeze, optimizer, EMA) the training step has the
 * same steps and tensors at every batch, image size, label count and precision; only the bytes
 * change, and each tensor's bytes are exactly unit x {1, q, b*q, labels} (yp_scale; q = h*w /
 * stride^2), times 1/2 for activation-typed tensors under AMP. So one schedule built at the unit
 * size (batch 1, one stride-square image, one label) gives the live bytes and the cost of every
 * step at any size by a dot product. Steps whose live-byte coefficients are all dominated by
 * another step's can never hold the peak and are dropped, which leaves a handful.
 *
 * The search (search.c) finds the largest batch in closed form from these coefficients, ranks
 * candidates by the same cost model as yp_cost_schedule, and then builds the real plan of each
 * reported row (real schedule, aligned arena), which is the contract. */
#ifndef YP_FAMILY_H
#define YP_FAMILY_H

#include "yp_candidate.h"
#include "yp_cost.h"

/* A quantity at (b, q, labels): sum over scales of fixed[s] + act[s] * act_factor, each times
 * {1, q, b*q, labels}; act_factor is 1 at fp32 and 1/2 under AMP. */
typedef struct {
    double fixed[YP_SCALE_COUNT];
    double act[YP_SCALE_COUNT];
} yp_lin;

typedef struct {
    int op;
    int rate_op;          /* the op whose FLOP rate it runs at (yp_cost_rate_op: -1 for a grouped conv) */
    yp_phase phase;
    yp_lin flops, bytes;  /* bytes: weights a conv multiplies count as act-typed (AMP reads the copy) */
    double amp_extra;     /* bytes moved only under AMP (the optimizer refreshing the weight copies) */
} yp_family_step;

/* Steps whose FLOPs and bytes both grow only with batch x pixels take the same time per image
 * pixel at any size, so their time is a slope per phase, summed once per precision. */
typedef struct {
    double slope_s[YP_PREC_COUNT][YP_PHASE_COUNT]; /* seconds per unit of batch x q */
    int launches[YP_PHASE_COUNT];
} yp_family_pure;

typedef struct {
    int n_live;
    yp_lin *live;            /* live bytes at the steps that can hold the peak (training) */
    int n_val;
    yp_lin *val_live;        /* validation pass (2x batch) live bytes, whole-step tensors excluded */
    int n_steps;
    yp_family_step *steps;   /* the training steps that are not pure, for the cost model */
    yp_family_pure pure;     /* the others, aggregated (needs the GPU: see yp_family_build) */
    yp_gpu gpu;              /* the card the pure slopes were computed for */
    double persistent_fixed; /* training whole-step bytes at fp32 */
    double lowp_bytes;       /* low-precision weight copies added under AMP */
    int stride;              /* yp_graph_max_stride of the graph: the unit size's side */
    double saved_unit[2];    /* saved-for-backward bytes per image per q: [0] fixed dtype, [1] act */
    double saved_const;      /* BN statistics */
} yp_family;

/* Builds the family of candidate c's structure (its size, batch, precision are ignored) for g,
 * with step costs on gpu. 0, or -1 with err set. */
int yp_family_build(const yp_graph *g, const yp_candidate *c, const yp_gpu *gpu, yp_family *out, yp_err *err);
void yp_family_free(yp_family *f);

/* Evaluates a coefficient vector. */
double yp_lin_eval(const yp_lin *l, double b, double q, double labels, double act_factor);

/* Peak bytes (unaligned) of training and of validation at batch b for candidate c's size. */
double yp_family_peak(const yp_family *f, const yp_graph *g, const yp_candidate *c, int64_t b);

/* Largest batch in [1, max_batch] whose peak fits in `budget` bytes, 0 if none. */
int64_t yp_family_max_batch(const yp_family *f, const yp_graph *g, const yp_candidate *c, double budget,
                            int64_t max_batch);

/* Predicted timing of c (its batch) on the family's GPU: yp_cost_schedule of the real schedule,
 * by scaling. */
void yp_family_timing(const yp_family *f, const yp_graph *g, const yp_candidate *c, yp_timing *out);

#endif
