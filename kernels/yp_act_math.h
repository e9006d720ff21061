/* yp_act_math.h - the pointwise activations other than SiLU (yp_ops.h: relu, leaky_relu,
 * hardswish), forward and backward, one element at a time, with PyTorch 1.13's formulas: the CPU
 * kernels (kernels/cpu/act.c) and the CUDA kernels (kernels/cuda/act.cu) both loop over these,
 * so the two backends compute the same bits.
 * Backward takes beta as every gradient output does: yp_acc (yp_index_math.h), dx not read for
 * beta 0. Plain C11 and CUDA: `static inline`, and __host__ __device__ under nvcc. */
#ifndef YP_ACT_MATH_H
#define YP_ACT_MATH_H

#include "yp_index_math.h"

/* ReLU: max(x, 0), NaN kept (PyTorch's clamp_min propagates it). */
static inline YP_INDEX_HD float yp_relu(float x) { return x > 0.0f || x != x ? x : 0.0f; }
/* Its gradient from the output y, as autograd's threshold_backward(dy, result, 0): dy where y > 0. */
static inline YP_INDEX_HD float yp_relu_grad(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

/* LeakyReLU: x for x > 0, else slope * x; the gradient from the input: dy or slope * dy. */
static inline YP_INDEX_HD float yp_leaky(float x, float slope) { return x > 0.0f ? x : x * slope; }
static inline YP_INDEX_HD float yp_leaky_grad(float x, float dy, float slope) { return x > 0.0f ? dy : dy * slope; }

/* Hardswish: x * min(max(x + 3, 0), 6) / 6; its gradient from the input: 0 below -3, dy from 3 on,
 * dy * (x / 3 + 0.5) in [-3, 3). At x = 3 this is PyTorch's vectorised hardswish_backward, which
 * every full vector of a tensor runs (its scalar tail loop gives 1.5 dy there instead). */
static inline YP_INDEX_HD float yp_hardswish(float x) {
    float r = x + 3.0f;
    r = r < 0.0f ? 0.0f : r;
    r = r > 6.0f ? 6.0f : r;
    return x * r / 6.0f;
}
static inline YP_INDEX_HD float yp_hardswish_grad(float x, float dy) {
    return x < -3.0f ? 0.0f : x < 3.0f ? dy * (x / 3.0f + 0.5f) : dy;
}

#endif
