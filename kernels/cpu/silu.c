/* silu.c - SiLU (x * sigmoid(x)) forward and backward on the CPU, fp32.
 * The formulas match kernels/cuda/silu.cu term for term. exp is computed inline (below) rather
 * than by libm's expf, so the loops vectorise: with expf they ran at ~2 GB/s, the slowest op. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "yp_cpu.h"

/* Returns 0, or -1 (reason recorded) for a negative count or a NULL buffer with a positive count. */
static int check_args(const char *op, int64_t n, const void *a, const void *b, const void *c) {
    if (n < 0)
        return yp_cpu_fail("%s: negative element count %lld", op, (long long)n);
    if (n > 0 && (!a || !b || !c))
        return yp_cpu_fail("%s: NULL buffer with %lld elements", op, (long long)n);
    return 0;
}

/* exp(x) for x in [-87, 88] to a few ulp (clamped outside, where SiLU's result no longer changes
 * in fp32): e^x = 2^n * e^f with n = round(x log2 e) and f = x - n ln 2 computed with ln 2 split
 * in two (Cody-Waite) so that f keeps its precision, |f| <= ln2 / 2, e^f by its Taylor series to
 * degree 7 (truncation < 6e-9), 2^n by building the exponent bits. Branch-free (selects and the
 * 1.5 * 2^23 rounding trick) so that GCC vectorises the callers' loops. */
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float f = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f + f * (1.0f + f * (0.5f + f * (1.0f / 6 + f * (1.0f / 24 +
              f * (1.0f / 120 + f * (1.0f / 720 + f * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* y = x / (1 + exp(-x)). For x below -87 the clamped exp gives y = x * 1.6e-38, i.e. 0 to fp32
 * precision, which is the limit; no NaN for finite x. In place (x == y) is fine: each element is read before written. */
int yp_cpu_silu_forward(const float *x, float *y, int64_t n) {
    if (check_args("silu_forward", n, x, y, y))
        return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = v / (1.0f + exp_approx(-v));
    }
    return 0;
}

/* d/dx [x s(x)] = s + x s (1 - s) = s (1 + x (1 - s)), s = sigmoid(x). dx may alias dy. */
int yp_cpu_silu_backward(const float *x, const float *dy, float *dx, int64_t n) {
    if (check_args("silu_backward", n, x, dy, dx))
        return -1;
#pragma omp parallel for simd schedule(static) if (n >= YP_PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        float s = 1.0f / (1.0f + exp_approx(-v));
        dx[i] = dy[i] * s * (1.0f + v * (1.0f - s));
    }
    return 0;
}
