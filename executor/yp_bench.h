/* yp_bench.h - the training-step benchmark loop: `warmup` untimed and then `steps` timed training
 * steps of an executor on random images and targets (one micro-batch and one optimizer update
 * each), as `yoloplan bench-step` runs them.
 *
 * The batch: images uniform in [0, 1] at the plan's input shape, filled on the OpenMP threads
 * with a counter-based generator (the same images for any thread count), and boxes_per_image
 * boxes per image (capped at what the plan's target buffer holds), one seeded stream for both.
 * Timing covers each step's batch generation, micro-step and update. */
#ifndef YP_BENCH_H
#define YP_BENCH_H

#include "yp_executor.h"

typedef struct {
    long steps;          /* timed steps, >= 1 */
    long warmup;         /* untimed steps before them, >= 0 */
    int profile;         /* count wall time per kind of step over the timed steps (yp_exec_profile) */
    uint64_t seed;       /* of the random batches */
    int boxes_per_image; /* random labels per image */
} yp_bench_cfg;

#define YP_BENCH_CURVE 64

typedef struct {
    double ms_per_step;  /* wall time of the timed steps over their number */
    double ms_median, ms_min; /* of the timed steps one by one */
    double last_loss[4]; /* lbox, lobj, lcls, total of the last step */
    double curve[YP_BENCH_CURVE]; /* the total loss of each step, warm-up included (the first
                                   * YP_BENCH_CURVE): the same seed gives every backend the same
                                   * batches and initial weights, so curves compare across them */
    int n_curve;
    int64_t batch, h, w; /* the plan's input batch and image size */
    int64_t boxes;       /* labels per batch */
} yp_bench_result;

/* 20 steps after 2 of warm-up, no profile, seed 1, 8 boxes per image. */
yp_bench_cfg yp_bench_cfg_default(void);

/* Runs the loop on x (initialised by yp_exec_init). With cfg->profile, x's profile tables hold
 * the timed steps on return (yp_exec_profile). 0, or -1 with err set. */
int yp_bench_run(yp_exec *x, const yp_bench_cfg *cfg, yp_bench_result *r, yp_err *err);

#endif
