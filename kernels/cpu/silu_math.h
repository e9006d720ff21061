/* silu_math.h - internal to kernels/cpu: SiLU and its derivative, one element at a time and, when
 * the kernels are compiled for AVX-512 (YP_NATIVE on such a machine), 16 at a time.
 *
 * exp(x) for x in [-87, 88] to a few ulp (clamped outside, where SiLU's result no longer changes
 * in fp32): e^x = 2^n * e^f with n = round(x log2 e) and f = x - n ln 2 computed with ln 2 split
 * in two (Cody-Waite) so that f keeps its precision, |f| <= ln2 / 2, e^f by its Taylor series to
 * degree 7 (truncation < 6e-9), 2^n by building the exponent bits. The scalar form is branch-free
 * so that GCC vectorises loops over it; the AVX-512 form does the same steps and replaces the
 * divisions of sigmoid by a reciprocal estimate and one Newton step (relative error ~1e-7, the
 * divide costs as much as the rest together). Both forms are used side by side (vector body,
 * scalar tail is never mixed within one op: tails use masked vector operations). */
#ifndef YP_SILU_MATH_H
#define YP_SILU_MATH_H

#include <stdint.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

static inline float yp_exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float f = (x - n * 0.693145751953125f) - n * 1.428606765330187e-06f;
    float p = 1.0f + f * (1.0f + f * (0.5f + f * (1.0f / 6 + f * (1.0f / 24 +
              f * (1.0f / 120 + f * (1.0f / 720 + f * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)n + 127) << 23;
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

static inline __m512 yp_exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 n = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), magic), magic);
    __m512 f = _mm512_sub_ps(_mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(0.693145751953125f))),
                             _mm512_mul_ps(n, _mm512_set1_ps(1.428606765330187e-06f)));
    __m512 p = _mm512_set1_ps(1.0f / 5040);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

/* sigmoid(v) = 1 / (1 + e^-v): reciprocal estimate (14 bits) refined by one Newton step. */
static inline __m512 yp_sigmoid16(__m512 v) {
    __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), yp_exp16(_mm512_sub_ps(_mm512_setzero_ps(), v)));
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
        __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, a + j)),
                                 _mm512_maskz_loadu_ps(m, b + j));
        _mm512_mask_storeu_ps(y + j, m, yp_silu16(v));
    }
#else
    for (int64_t j = 0; j < n; j++) y[j] = yp_silu(x[j] * a[j] + b[j]);
#endif
}

/* dx[j] = silu'(x[j]*a[j] + b[j]) * dy[j] for j < n. */
static inline void yp_silu_affine_grad_span(const float *x, const float *a, const float *b, const float *dy, float *dx,
                                            int64_t n) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), _mm512_maskz_loadu_ps(m, a + j)),
                                 _mm512_maskz_loadu_ps(m, b + j));
        _mm512_mask_storeu_ps(dx + j, m, yp_silu_grad16(v, _mm512_maskz_loadu_ps(m, dy + j)));
    }
#else
    for (int64_t j = 0; j < n; j++) dx[j] = yp_silu_grad(x[j] * a[j] + b[j], dy[j]);
#endif
}

/* The same over `rows` rows `stride` floats apart (n <= stride channels each), and BN backward's
 * sums of the result over those rows: s1[j] += sum(dx), s2[j] += sum(dx*(x - mean[j])), each
 * summed over the rows in double first and then added (yp_bn_block_sums sums the same way). */
static inline void yp_silu_affine_grad_rows(const float *x, const float *a, const float *b, const float *dy, float *dx,
                                            int64_t rows, int64_t stride, int64_t n, const float *mean, double *s1,
                                            double *s2) {
#if defined(YP_SILU_VEC)
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = yp_mask16(j, n);
        __mmask8 lo = (__mmask8)(m & 0xFF), hi = (__mmask8)(m >> 8);
        __m512 av = _mm512_maskz_loadu_ps(m, a + j), bv = _mm512_maskz_loadu_ps(m, b + j);
        __m512 mv = _mm512_maskz_loadu_ps(m, mean + j);
        __m512d t0 = _mm512_setzero_pd(), t1 = t0, u0 = t0, u1 = t0;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t o = r * stride + j;
            __m512 xv = _mm512_maskz_loadu_ps(m, x + o);
            __m512 g = yp_silu_grad16(_mm512_add_ps(_mm512_mul_ps(xv, av), bv), _mm512_maskz_loadu_ps(m, dy + o));
            _mm512_mask_storeu_ps(dx + o, m, g);
            __m512 xc = _mm512_sub_ps(xv, mv);
            __m512d g0 = _mm512_cvtps_pd(_mm512_castps512_ps256(g));
            __m512d g1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g), 1)));
            __m512d c0 = _mm512_cvtps_pd(_mm512_castps512_ps256(xc));
            __m512d c1 = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(xc), 1)));
            t0 = _mm512_add_pd(t0, g0), t1 = _mm512_add_pd(t1, g1);
            u0 = _mm512_add_pd(u0, _mm512_mul_pd(g0, c0)), u1 = _mm512_add_pd(u1, _mm512_mul_pd(g1, c1));
        }
        _mm512_mask_storeu_pd(s1 + j, lo, _mm512_add_pd(_mm512_maskz_loadu_pd(lo, s1 + j), t0));
        _mm512_mask_storeu_pd(s1 + j + 8, hi, _mm512_add_pd(_mm512_maskz_loadu_pd(hi, s1 + j + 8), t1));
        _mm512_mask_storeu_pd(s2 + j, lo, _mm512_add_pd(_mm512_maskz_loadu_pd(lo, s2 + j), u0));
        _mm512_mask_storeu_pd(s2 + j + 8, hi, _mm512_add_pd(_mm512_maskz_loadu_pd(hi, s2 + j + 8), u1));
    }
#else
    for (int64_t j = 0; j < n; j++) {
        double t = 0, u = 0;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t o = r * stride + j;
            float g = yp_silu_grad(x[o] * a[j] + b[j], dy[o]);
            dx[o] = g;
            t += g, u += (double)g * (double)(x[o] - mean[j]);
        }
        s1[j] += t, s2[j] += u;
    }
#endif
}

/* BN backward's sums on their own, summed exactly as yp_silu_affine_grad_rows does. */
static inline void yp_bn_block_sums(const float *x, const float *dy, int64_t rows, int64_t stride, int64_t n,
                                    const float *mean, double *s1, double *s2) {
    for (int64_t j = 0; j < n; j++) {
        double t = 0, u = 0;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t o = r * stride + j;
            t += dy[o], u += (double)dy[o] * (double)(x[o] - mean[j]);
        }
        s1[j] += t, s2[j] += u;
    }
}

#endif
