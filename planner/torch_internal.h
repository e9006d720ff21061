/* torch_internal.h - helpers the PyTorch replays share (torch_model.c, torch_infer.c,
 * torch_autobatch.c, torch_train.c); not a public interface. */
#ifndef YP_TORCH_INTERNAL_H
#define YP_TORCH_INTERNAL_H

#include "yp_torch_replay.h"

/* A model's parameters and buffers on the device: one block per WEIGHT tensor of the schedule
 * (h[t]) in module order, and one for each BN's num_batches_tracked (h[n_tensors + t] of its
 * running_var). */
typedef struct {
    int *h, n;
} ytr_model;

/* Allocates a model (fp32, or fp16 as model.half() leaves it). 0, 1 out of capacity, -1 err. */
int ytr_model_alloc(const yp_schedule *s, yp_torch_alloc *a, int half, ytr_model *m, yp_err *err);
/* module._apply(half or float): each floating tensor re-made, the old one freed after it. */
int ytr_model_convert(const yp_schedule *s, yp_torch_alloc *a, int to_half, ytr_model *m, yp_err *err);
/* Frees the model's blocks (and its arrays). */
int ytr_model_drop(ytr_model *m, yp_torch_alloc *a, yp_err *err);

/* check_amp's two batch-1 inferences of bus.jpg at AutoShape's size 640 (640x480 rounded to the
 * largest stride; fp32, then under autocast), whatever --img is. */
int ytr_check_amp(const yp_graph *g, yp_torch_alloc *a, yp_err *err);

/* A training schedule of the pytorch policy at batch b, h x w, activations act, no EMA. */
yp_schedule *ytr_schedule(const yp_graph *g, int64_t b, int64_t h, int64_t w, yp_dtype act, int freeze,
                          yp_err *err);

/* Frees *slot (the null handle is a no-op) and sets it to -1. */
int ytr_release(yp_torch_alloc *a, int *slot, yp_err *err);

/* ---- the PyTorch model's op table (torch_ops.c) ----
 * What eager PyTorch does with an op beyond its steps' tensors, which the replays and the speed
 * model ask: one row per yp_op, as the IR (graph/ops.c) and the executor (executor/exec_ops.c) each
 * have their own. */
typedef struct {
    yp_op op;
    int cudnn_conv;      /* runs cuDNN convolutions (nn.Conv2d, Detect's per-level ones): cudnn.benchmark's
                          * search, the weight-gradient workspace, AMP's NCHW <-> NHWC passes and the fp32
                          * cast of its weight gradients */
    int detect;          /* YOLOv5's Detect: its forward runs level by level (the conv, then its permuted
                          * contiguous copy), and its outputs, one a level, are ComputeLoss's input */
    int two_pass_train;  /* its training kernels read its activations twice (BatchNorm: the statistics,
                          * then the normalisation; in backward the reduction, then the elementwise pass) */
    int counts_batches;  /* its training forward adds one to its num_batches_tracked (BatchNorm) */
    int folds_into_conv; /* a fused model (Model.fuse(), validation) runs no step of it (BatchNorm) */
} ytr_op_row;

/* The row of op (a step's: -1 for the loss and the optimizer, whose row is all zeros). */
const ytr_op_row *ytr_op_row_get(int op);

#endif
