/* yp_cost.h - the step-time model (docs/architecture.md §7): a roofline per step of the schedule.
 *
 * A step takes max(FLOPs / (rate x compute efficiency), bytes / (bandwidth x memory efficiency))
 * plus a launch overhead. Convolutions (conv2d, detect: the ops whose op-table row has
 * matrix_math) run at the tensor-core rate of their precision: FP16 or BF16 under AMP, TF32 in fp32
 * on cards that have it (cuDNN's default for convolutions, as in PyTorch), else the FP32 rate.
 * Every other op is elementwise and bandwidth-bound in practice. Launches per step come from the
 * row too. Grouped convs (groups > 1: DWConv, GhostConv's 5x5 depthwise cv2, GhostBottleneck's
 * 3x3 depthwise) are the exception among the convs (yp_cost_rate_op): cuDNN runs them as direct
 * grouped / depthwise kernels on the CUDA cores, not as implicit GEMM on the tensor cores, so
 * their FLOPs take the elementwise rate (FP32 peak x YP_ELTWISE_EFFICIENCY); with 2 k^2 c_in/groups
 * FLOPs per output element (50 for a 5x5 depthwise) they sit near the ridge, bandwidth-bound on
 * most cards, where a dense conv is compute-bound. Bytes are the tensors a step reads plus those it writes.
 * Figures are estimates for ranking candidates on one card; bench/ compares them with
 * measurements where a GPU is available. */
#ifndef YP_COST_H
#define YP_COST_H

#include "yp_candidate.h"
#include "yp_gpu.h"

#define YP_NOMINAL_BATCH 64
#define YP_CONV_EFFICIENCY 0.50   /* fraction of peak tensor/FP32 rate a cuDNN conv reaches */
#define YP_ELTWISE_EFFICIENCY 0.25
#define YP_BW_EFFICIENCY 0.70     /* fraction of peak bandwidth a streaming kernel reaches */
#define YP_LAUNCH_S 5e-6          /* per kernel launch */

typedef struct {
    double forward_ms, loss_ms, recompute_ms, backward_ms, optimizer_ms;
    double micro_ms;      /* one micro-batch: forward + loss + recompute + backward */
    double update_ms;     /* accumulate micro-batches + one optimizer step and EMA update */
    double images_per_s;  /* at the nominal batch of 64 */
    int accumulate;
} yp_timing;

/* YOLOv5: accumulate = max(round(64 / batch), 1). */
int yp_accumulate(int64_t batch);

/* The op whose FLOP rate a step of `op` (a yp_op or -1) on graph node `node` (or -1) runs at: op
 * itself, except a conv_like op whose convs have groups > 1 (conv2d's), which runs at the
 * elementwise rate (-1; see above). */
int yp_cost_rate_op(const yp_graph *g, int op, int node);

/* The roofline, the one formula of the cost model: seconds to compute `flops` and move `bytes` at
 * the rate of `rate_op` (yp_cost_rate_op), max(flops * spf, bytes * spb). */
double yp_cost_roofline_s(const yp_gpu *gpu, yp_precision p, int rate_op, double flops, double bytes);

/* Seconds of one step of `op`: its roofline at the rate of rate_op (yp_cost_rate_op) plus op's
 * kernel launches (launches * YP_LAUNCH_S). The real schedule's timing (yp_cost_schedule) and the
 * search's per-family timing (yp_family_timing) both use it. */
double yp_cost_step_s(const yp_gpu *gpu, yp_precision p, int op, int rate_op, yp_phase phase, double flops,
                      double bytes);

/* Does the op (a yp_op or -1) run at the tensor-core rate? Its op-table row says (matrix_math). */
int yp_cost_matrix_math(int op);

/* The parts of the roofline: seconds per FLOP for this op and precision, seconds per byte, and the
 * kernel launches of a step (the op's row: fwd_launches, or bwd_launches in backward; 1 without an op). */
double yp_cost_s_per_flop(const yp_gpu *gpu, yp_precision p, int op);
double yp_cost_s_per_byte(const yp_gpu *gpu);
int yp_cost_launches(int op, yp_phase phase);

/* Adds one step's time to t (by phase). */
void yp_timing_add(yp_timing *t, yp_phase phase, double seconds);

/* Fills accumulate, micro_ms, update_ms and images_per_s from the per-phase times. */
void yp_timing_finish(yp_timing *t, int64_t batch);

/* The timing of a concrete schedule. */
void yp_cost_schedule(const yp_schedule *s, const yp_gpu *gpu, yp_precision p, yp_timing *out);

#endif
