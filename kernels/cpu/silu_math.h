/* silu_math.h - internal to kernels/cpu: SiLU and its derivative, one element at a time and, when
 * the kernels are compiled for AVX-512 (YP_NATIVE on such a machine), 16 at a time.
 *
 * exp(x) for x in [-87, 88] to a few ulp (clamped outside, where SiLU's result no longer changes
 * in fp32): e^x = 2^n * e^f with n = round(x log2 e) and f = x - n ln 2 computed with ln 2 split
 * in two (Cody-Waite) so that f keeps its precision, |f| <= ln2 / 2, and 2^n put into the exponent.
 * The scalar form (e^f by its Taylor series to degree 7, truncation < 6e-9; kept term for term
 * like kernels/cuda/silu.cu) is branch-free so that GCC vectorises loops over it. The AVX-512 form
 * is the one the training step runs and is compute-bound, so it counts instructions: a degree-5
 * polynomial fitted for least relative error (2e-7 with fp32 rounding), vscalefps for 2^n, and
 * sigmoid's division replaced by a reciprocal estimate and one Newton step (relative error ~1e-7;
 * the divide costs as much as the rest together). SiLU forward measures ~25% faster than with the
 * Taylor form. Within one build every op uses one form: the vector spans handle their tails with
 * masked operations rather than scalar code. */
#ifndef YP_SILU_MATH_H
#define YP_SILU_MATH_H

#include <math.h>
#include <stdint.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

/* x*a + b as every BN apply in a build computes it (bn.c's affine_rows and the fused spans below
 * must agree bit for bit): one fused multiply-add where the target has it, else multiply then add. */
#if defined(__FMA__)
#define YP_AFFINE(x, a, b) fmaf((x), (a), (b))
#else
#define YP_AFFINE(x, a, b) ((x) * (a) + (b))
#endif

static inline float yp_exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float f = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f + f * (1.0f + f * (0.5f + f * (1.0f / 6 + f * (1.0f / 24 +
              f * (1.0f / 120 + f * (1.0f / 720 + f * (1.0f / 5040)))))));
    /* a NaN input stays NaN through p; converting its n to int would be undefined, so 0 stands in */
    int32_t bits = ((int32_t)(n == n ? n : 0.0f) + 127) << 23;
    float scale;
    __builtin_memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float yp_silu(float v) { return v / (1.0f + yp_exp_approx(-v)); }
static inline float yp_silu_grad(float v, float dy) {
    float s = 1.0f / (1.0f + yp_exp_approx(-v));
    return dy * s * (1.0f + v * (1.0f - s));
}

#if defined(__AVX512F__)
#define YP_SILU_VEC 16

/* e^-v: n = round(-v log2 e), f = -v - n ln 2 (Cody-Waite, ln 2 in two parts), e^f by a degree-5
 * polynomial fitted for least maximum relative error on |f| <= ln2/2 (2e-7 in fp32 with rounding;
 * Taylor needs degree 7 for that), times 2^n by vscalefps. */
static inline __m512 yp_exp_neg16(__m512 v) {
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-88.0f)), _mm512_set1_ps(87.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(-1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_fnmsub_ps(n, _mm512_set1_ps(0.693145751953125f), v); /* -(n ln2_hi) - v */
    f = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), f);
    __m512 p = _mm512_set1_ps(8.297654800e-03f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.191538319e-02f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.666757464e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.999889433e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999997020e-01f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.000000119e+00f));
    return _mm512_scalef_ps(p, n);
}

/* sigmoid(v) = 1 / (1 + e^-v): reciprocal estimate (14 bits) refined by one Newton step. */
static inline __m512 yp_sigmoid16(__m512 v) {
    __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), yp_exp_neg16(v));
    __m512 r = _mm512_rcp14_ps(d);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
}

static inline __m512 yp_silu16(__m512 v) { return _mm512_mul_ps(v, yp_sigmoid16(v)); }

static inline __m512 yp_silu_grad16(__m512 v, __m512 dy) {
    __m512 s = yp_sigmoid16(v);
    __m512 t = _mm512_fmadd_ps(v, _mm512_sub_ps(_mm512_set1_ps(1.0f), s), _mm512_set1_ps(1.0f));
    return _mm512_mul_ps(_mm512_mul_ps(dy, s), t);
}

/* The lanes of a 16-wide step at j of n. */
static inline __mmask16 yp_mask16(int64_t j, int64_t n) {
    return n - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
}
#endif

/* y[j] = silu(x[j]) for j < n. */
static inline void yp_silu_span(const float *x, float *y, int64_t n) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        _mm512_mask_storeu_ps(y + j, m, yp_silu16(_mm512_maskz_loadu_ps(m, x + j)));
    }
#else
    for (int64_t j = 0; j < n; j++) y[j] = yp_silu(x[j]);
#endif
}

/* dx[j] = silu'(x[j]) * dy[j] for j < n. */
static inline void yp_silu_grad_span(const float *x, const float *dy, float *dx, int64_t n) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        __m512 v = _mm512_maskz_loadu_ps(m, x + j), g = _mm512_maskz_loadu_ps(m, dy + j);
        _mm512_mask_storeu_ps(dx + j, m, yp_silu_grad16(v, g));
    }
#else
    for (int64_t j = 0; j < n; j++) dx[j] = yp_silu_grad(x[j], dy[j]);
#endif
}

/* y[j] = silu(x[j]*a[j] + b[j]) for j < n (a BN apply folded into the SiLU). */
static inline void yp_silu_affine_span(const float *x, const float *a, const float *b, float *y, int64_t n) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, a + j),
                                   _mm512_maskz_loadu_ps(m, b + j));
        _mm512_mask_storeu_ps(y + j, m, yp_silu16(v));
    }
#else
    for (int64_t j = 0; j < n; j++) y[j] = yp_silu(YP_AFFINE(x[j], a[j], b[j]));
#endif
}

/* dx[j] = silu'(x[j]*a[j] + b[j]) * dy[j] for j < n. */
static inline void yp_silu_affine_grad_span(const float *x, const float *a, const float *b, const float *dy, float *dx,
                                            int64_t n) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, a + j),
                                   _mm512_maskz_loadu_ps(m, b + j));
        _mm512_mask_storeu_ps(dx + j, m, yp_silu_grad16(v, _mm512_maskz_loadu_ps(m, dy + j)));
    }
#else
    for (int64_t j = 0; j < n; j++) dx[j] = yp_silu_grad(YP_AFFINE(x[j], a[j], b[j]), dy[j]);
#endif
}


#endif
