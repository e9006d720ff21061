/* yp_bn_math.h - BatchNorm's per-channel formulas (yp_ops.h's BN entries), shared by the CPU
 * backend (kernels/cpu/bn.c) and the CUDA backend (kernels/cuda/bn.cu) so that both turn the
 * per-channel sums into the same statistics, folds and gradient coefficients, and the CPU tests
 * cover them. The sums themselves (over the n*h*w rows of a channel, in double) are each
 * backend's own: they differ only in summation order. Plain C11 and CUDA: `static inline`, and
 * __host__ __device__ under nvcc. */
#ifndef YP_BN_MATH_H
#define YP_BN_MATH_H

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define YP_BN_HD __host__ __device__
#else
#define YP_BN_HD
#endif

/* Training statistics of one channel from s1 = sum(x - k) and s2 = sum((x - k)^2) over its `rows`
 * values, k a shift (the first row's value: no cancellation in s2/N - (s1/N)^2 when |mean| is
 * large next to the spread): *mean and *invstd = 1/sqrt(biased var + eps) as saved (fp32), and
 * the running stats = (1 - momentum)*old + momentum*batch value in double, running_var with the
 * unbiased variance (PyTorch). rows >= 2. */
static inline YP_BN_HD void yp_bn_stats(double s1, double s2, float k, int64_t rows, float eps, float momentum,
                                        float *mean, float *invstd, float *running_mean, float *running_var) {
    const double inv_rows = 1.0 / (double)rows, unbias = (double)rows / (double)(rows - 1);
    const double mom = momentum;
    double dm = s1 * inv_rows, var = s2 * inv_rows - dm * dm;
    double m = (double)k + dm;
    if (var < 0.0)
        var = 0.0;
    double is = 1.0 / sqrt(var + (double)eps);
    *mean = (float)m;
    *invstd = (float)is;
    *running_mean = (float)((1.0 - mom) * *running_mean + mom * m);
    *running_var = (float)((1.0 - mom) * *running_var + mom * var * unbias);
}

/* The normalisation of one channel folded into y = x*a + b: a = gamma*invstd, b = beta - mean*a,
 * in double, rounded once. */
static inline YP_BN_HD void yp_bn_fold(float gamma, float beta_, double mean, double invstd, float *a, float *b) {
    double s = (double)gamma * invstd;
    *a = (float)s;
    *b = (float)(beta_ - mean * s);
}

/* BN backward of one channel from sdy = sum(dy) and sdyx = sum(dy*(x - mean)) over its `rows`
 * values: dx = k1*dy + k2*(x - mean) + k3 (yp_bn_dx) with k1 = gamma*invstd,
 * k2 = -k1*invstd^2*sdyx/N, k3 = -k1*sdy/N; and, where dgamma / dbeta are not NULL, the parameter
 * gradients sdyx*invstd and sdy written with beta_w (0 overwrites, else beta_w*old + new). */
static inline YP_BN_HD void yp_bn_backward_channel(float gamma, float invstd, double sdy, double sdyx, int64_t rows,
                                                   float beta_w, float *k1, float *k2, float *k3, float *dgamma,
                                                   float *dbeta) {
    const double inv_rows = 1.0 / (double)rows;
    double is = invstd, a = (double)gamma * is;
    double b = -a * is * is * sdyx * inv_rows;
    *k1 = (float)a;
    *k2 = (float)b;
    *k3 = (float)(-a * sdy * inv_rows);
    double dg = sdyx * is;
    if (dgamma)
        *dgamma = beta_w == 0.0f ? (float)dg : (float)(beta_w * *dgamma + dg);
    if (dbeta)
        *dbeta = beta_w == 0.0f ? (float)sdy : (float)(beta_w * *dbeta + sdy);
}

/* One element of BN backward's dx (x - mean rather than a folded constant: no cancellation when
 * |mean| is large next to the spread). */
static inline YP_BN_HD float yp_bn_dx(float k1, float k2, float k3, float dy, float x, float mean) {
    return k1 * dy + k2 * (x - mean) + k3;
}

#endif
