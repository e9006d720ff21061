/* yp_cudnn_scratch.h - the CUDA backend's conv workspace rule, in one place: header-only plain C
 * (also valid C++), so that the cuDNN convolutions (kernels/cuda/conv.cu) choose their algorithms
 * with it and the planner's "cuda" conv scratch model (executor/scratch_model.c) grants it without
 * a GPU. Needs no CUDA headers.
 *
 * The rule. For a conv d (fp32, NHWC) the workspace cap is
 *     cap(d) = max(16 MiB, bytes of d's input + output)     (fp32: 4 bytes an element)
 * conv.cu takes, per conv shape and stage, the first of cuDNN's heuristics' plain-fp32 algorithms
 * whose workspace is at most cap(d) (the implicit-GEMM family, whose workspace is small, always
 * is), so no conv asks for more than cap(d) on any card, except when cuDNN offers none within it:
 * then conv.cu takes the one with the smallest workspace, and the executor refuses at init a plan
 * that granted less (naming the conv and the figure).
 *
 * The bound (yp_cudnn_scratch_bound), what a plan grants each conv without asking a device: in
 * floats, per_image = cap(d) / 4 rounded up (the "ws:" tensor) and fixed = the weights reordered
 * to KRSC past 1x1, c_out x (c_in / groups) x kh x kw (the "wt:" tensor), none for a 1x1 (the two
 * layouts are the same bytes). Grouped and depthwise convs (groups > 1: cuDNN's group count, the
 * KRSC reorder per output channel) follow the same rule: their filter is c_in / groups deep, and
 * cuDNN's grouped algorithms are chosen within the same cap. It is conservative: conv2d_scratch
 * on a device answers the chosen algorithm's workspace, which is at most the bound's per_image,
 * and the same fixed.
 *
 * Low precision (d->dtype F16 or BF16, AMP): cuDNN's half and bfloat16 convolutions want the
 * filter and its gradient in the data's type, while the schedule hands the conv fp32 gradients
 * (the masters') and, for a frozen layer, fp32 weights. So the filter and the gradient are staged
 * in the data's type, KRSC, in the fixed scratch: fixed = the weights' elements at 2 bytes, in
 * floats rounded up, for every conv at the backward stage (the gradient is computed there, then
 * added onto the fp32 dw) and at the forward stage unless the conv is a 1x1 whose weights already
 * are of the data's type (d->wdtype == d->dtype: the low-precision copy, read in place). The cap
 * keeps counting 4 bytes an element: conservative for 2-byte data, and the same figure as fp32. */
#ifndef YP_CUDNN_SCRATCH_H
#define YP_CUDNN_SCRATCH_H

#include <stdint.h>

#include "yp_ops.h"

#define YP_CUDNN_WORKSPACE_FLOOR ((int64_t)16 << 20) /* bytes: the cap's floor */

/* cap(d) in bytes (see above). */
static inline int64_t yp_cudnn_workspace_cap(const yp_conv_desc *d) {
    int64_t act = (d->in.n * d->in.h * d->in.w * d->in.c + d->out.n * d->out.h * d->out.w * d->out.c) * 4;
    return act > YP_CUDNN_WORKSPACE_FLOOR ? act : YP_CUDNN_WORKSPACE_FLOOR;
}

/* Floats of fixed scratch at `stage`: fp32, the KRSC weights (or their gradient) of a conv past
 * 1x1, none for 1x1; low precision, the staged filter and gradient (see above). */
static inline int64_t yp_cudnn_fixed_floats(const yp_conv_desc *d, yp_conv_stage stage) {
    const int64_t elems = d->out.c * (d->in.c / d->groups) * yp_conv_taps(d);
    if (d->dtype == YP_ELEM_F32) return yp_conv_taps(d) == 1 ? 0 : elems;
    if (stage == YP_CONV_FORWARD && yp_conv_taps(d) == 1 && d->wdtype == d->dtype) return 0;
    return (elems + 1) / 2;
}

/* The bound of conv d at `stage` (forward, or backward-data and backward-weights in turn, which
 * share the scratch): per_image = ceil(cap(d) / 4), fixed = yp_cudnn_fixed_floats(d, stage). */
static inline void yp_cudnn_scratch_bound(const yp_conv_desc *d, yp_conv_stage stage, int64_t *per_image,
                                          int64_t *fixed) {
    *per_image = (yp_cudnn_workspace_cap(d) + 3) / 4;
    *fixed = yp_cudnn_fixed_floats(d, stage);
}

#endif
