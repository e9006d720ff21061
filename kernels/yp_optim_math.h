/* yp_optim_math.h - the optimizer's per-element update formulas (yp_ops.h's sgd_step, adam_step,
 * ema_update, sgd_ema_step), shared by the CPU backend (kernels/cpu/optim.c) and the CUDA backend
 * (kernels/cuda/optim.cu) so that both run the same expressions in the same order and the CPU
 * tests cover them. Plain C11 and CUDA: `static inline`, and __host__ __device__ under nvcc.
 * yp_adam_coefs (the per-call constants, pow in double) runs on the host only. */
#ifndef YP_OPTIM_MATH_H
#define YP_OPTIM_MATH_H

#include <math.h>
#include <stdint.h>

#include "yp_ops.h"

#if defined(__CUDACC__)
#define YP_OPTIM_HD __host__ __device__
#else
#define YP_OPTIM_HD
#endif

/* torch.optim.SGD(nesterov=True, dampening=0) on one element: d = grad*scale + wd*w;
 * m = momentum*m + d (a zero buffer gives PyTorch's first-step buf = d); returns the new weight
 * w - lr*(d + momentum*m). */
static inline YP_OPTIM_HD float yp_sgd_elem(float w, float grad, float *m, float lr, float momentum, float wd,
                                            float scale) {
    float g = grad * scale + wd * w;
    float b = momentum * *m + g;
    *m = b;
    return w - lr * (g + momentum * b);
}

/* The EMA of one element: d*ema + (1 - d)*w, with one_minus = 1 - d computed once by the caller. */
static inline YP_OPTIM_HD float yp_ema_elem(float ema, float w, float d, float one_minus) {
    return d * ema + one_minus * w;
}

/* Adam's constants for one call (torch.optim.Adam / AdamW, amsgrad off). */
typedef struct {
    float b1, b2, eps, scale;
    float step_size; /* lr / (1 - b1^t) */
    float bc2_sqrt;  /* sqrt(1 - b2^t) */
    float decay;     /* AdamW: 1 - lr*wd applied to w first; Adam: 1 */
    float wd_grad;   /* Adam: wd, added to the gradient as wd*w; AdamW: 0 */
} yp_adam_coef;

/* From the hyperparameters at step h->step (>= 1, checked by the caller); host only. */
static inline yp_adam_coef yp_adam_coefs(const yp_optim_hyp *h) {
    yp_adam_coef k;
    const int64_t t = h->step;
    k.b1 = h->momentum;
    k.b2 = h->beta2;
    k.eps = h->eps;
    k.scale = h->grad_scale;
    k.step_size = (float)(h->lr / (1.0 - pow(h->momentum, (double)t)));
    k.bc2_sqrt = (float)sqrt(1.0 - pow(h->beta2, (double)t));
    k.decay = h->decoupled ? 1.0f - h->lr * h->weight_decay : 1.0f;
    k.wd_grad = h->decoupled ? 0.0f : h->weight_decay;
    return k;
}

/* One Adam element: p = w*decay, g = grad*scale + wd_grad*p, m = b1*m + (1-b1)*g,
 * v = b2*v + (1-b2)*g^2; returns p - step_size*m / (sqrt(v)/bc2_sqrt + eps). */
static inline YP_OPTIM_HD float yp_adam_elem(float w, float grad, float *m, float *v, yp_adam_coef k) {
    float p = w * k.decay;
    float g = grad * k.scale + k.wd_grad * p;
    float mi = k.b1 * *m + (1.0f - k.b1) * g;
    float vi = k.b2 * *v + (1.0f - k.b2) * g * g;
    *m = mi;
    *v = vi;
    return p - k.step_size * mi / (sqrtf(vi) / k.bc2_sqrt + k.eps);
}

#endif
