/* yp_test_cuda.h - what the CUDA tests (test_cuda_silu, test_cuda_ops, test_cuda_conv) share: the
 * deterministic random floats they compare the two backends on, and opening both backends with
 * the skip convention (no usable GPU: "SKIP: <reason>", exit 77, which ctest reports as skipped).
 * Defines: yp_test_uniform, yp_test_cuda_open, and the typed buffers of the fp16/bf16 cases:
 * yp_test_tbuf (a tensor of an element type, host fp32 reference values and the device copy),
 * yp_test_tbuf_rand / _nan / _upload / _check / _free, yp_test_elem_eps. */
#ifndef YP_TEST_CUDA_H
#define YP_TEST_CUDA_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_elem_math.h"

/* Deterministic uniform floats in [lo, hi) (xorshift64*). */
static inline float yp_test_uniform(uint64_t *state, float lo, float hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 2685821657736338717ull;
    return lo + (hi - lo) * (float)((double)(r >> 40) / 16777216.0);
}

/* Opens the CUDA backend on device 0 and the CPU backend (cpu_threads; 0: its default), printing
 * the build. 0 with both set; 77 after "SKIP: <reason>" without a usable GPU; 1 when the CPU
 * backend cannot start. main returns it when it is not 0. */
static inline int yp_test_cuda_open(yp_backend **gpu, yp_backend **cpu, int cpu_threads) {
    char why[512] = "";
    *gpu = yp_backend_cuda_new(0, why, sizeof why), *cpu = NULL;
    printf("build: %s\n", yp_kernels_build_info());
    if (!*gpu) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    const yp_cpu_config cfg = {cpu_threads};
    *cpu = yp_backend_cpu_new(cpu_threads > 0 ? &cfg : NULL, why, sizeof why);
    if (!*cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        yp_backend_free(*gpu);
        return 1;
    }
    return 0;
}

/* ---- typed buffers: the fp16/bf16 cases ----
 * A tensor of element type t held twice: h, n fp32 values on the host, each exactly
 * representable in t (what the CPU backend's fp32 reference runs on), and d, its device copy
 * stored as t. The reference's own output is rounded to t before comparing, so the tolerance
 * covers only what the device's fp32 arithmetic and its rounding points add. */
typedef struct {
    yp_backend *gpu;
    yp_elem t;
    float *h;
    void *d;
    int64_t n;
} yp_test_tbuf;

/* The unit roundoff of t: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16). */
static inline double yp_test_elem_eps(yp_elem t) {
    return t == YP_ELEM_F16 ? 1.0 / 2048 : t == YP_ELEM_BF16 ? 1.0 / 256 : 1.0 / 16777216;
}

/* Uploads b->h to b->d as type b->t: 0, or -1 with the reason printed. */
static inline int yp_test_tbuf_upload(yp_test_tbuf *b) {
    if (b->n == 0) return 0;
    size_t es = yp_elem_size(b->t);
    void *raw = malloc((size_t)b->n * es);
    if (!raw) return -1;
    for (int64_t i = 0; i < b->n; i++) yp_elem_put(b->t, raw, i, b->h[i]);
    int rc = b->gpu->mem_copy(b->gpu, b->d, raw, (size_t)b->n * es, YP_COPY_HOST_TO_DEVICE);
    if (rc) fprintf(stderr, "  upload: %s\n", b->gpu->last_error(b->gpu));
    free(raw);
    return rc;
}

static inline yp_test_tbuf yp_test_tbuf_alloc(yp_backend *gpu, yp_elem t, int64_t n) {
    yp_test_tbuf b = {gpu, t, malloc((size_t)(n > 0 ? n : 1) * sizeof(float)),
                      gpu->mem_alloc(gpu, (size_t)(n > 0 ? n : 1) * yp_elem_size(t)), n};
    if (!b.h || !b.d) fprintf(stderr, "  tbuf of %lld: out of memory\n", (long long)n);
    return b;
}

/* n values uniform in [lo, hi), rounded to t, on both sides (seeded). */
static inline yp_test_tbuf yp_test_tbuf_rand(yp_backend *gpu, yp_elem t, int64_t n, uint64_t seed, float lo, float hi) {
    yp_test_tbuf b = yp_test_tbuf_alloc(gpu, t, n);
    if (!b.h || !b.d) return b;
    uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) b.h[i] = yp_elem_round(t, yp_test_uniform(&st, lo, hi));
    yp_test_tbuf_upload(&b);
    return b;
}

/* n NaNs on both sides: an output that beta 0 must overwrite without reading. */
static inline yp_test_tbuf yp_test_tbuf_nan(yp_backend *gpu, yp_elem t, int64_t n) {
    yp_test_tbuf b = yp_test_tbuf_alloc(gpu, t, n);
    if (!b.h || !b.d) return b;
    for (int64_t i = 0; i < n; i++) b.h[i] = NAN;
    yp_test_tbuf_upload(&b);
    return b;
}

/* Compares the device copy of b (type b->t) with want[0..n) (the CPU's fp32 result, NULL: b->h),
 * each rounded to b->t first: the count of elements with |cuda - cpu| > rtol*|cpu| +
 * atol_rel*max|cpu|, the first few printed; NaN on either side counts. -1 when the download fails. */
static inline int64_t yp_test_tbuf_check(const char *what, const yp_test_tbuf *b, const float *want, double rtol,
                                         double atol_rel) {
    if (!want) want = b->h;
    size_t es = yp_elem_size(b->t);
    void *raw = malloc((size_t)(b->n > 0 ? b->n : 1) * es);
    if (!raw) return -1;
    if (b->n && b->gpu->mem_copy(b->gpu, raw, b->d, (size_t)b->n * es, YP_COPY_DEVICE_TO_HOST)) {
        fprintf(stderr, "  %s: download: %s\n", what, b->gpu->last_error(b->gpu));
        free(raw);
        return -1;
    }
    double amax = 0;
    for (int64_t i = 0; i < b->n; i++)
        if (fabs(want[i]) > amax) amax = fabs(want[i]);
    int64_t bad = 0;
    for (int64_t i = 0; i < b->n; i++) {
        double w = yp_elem_round(b->t, want[i]), g = yp_elem_get(b->t, raw, i), e = fabs(g - w);
        if (!(e <= rtol * fabs(w) + atol_rel * amax) && bad++ < 5)
            fprintf(stderr, "  %s %s [%lld]: cuda %.9g cpu %.9g\n", what, yp_elem_name(b->t), (long long)i, g, w);
    }
    if (bad)
        fprintf(stderr, "  %s %s: %lld of %lld outside rtol %g atol %g x max\n", what, yp_elem_name(b->t),
                (long long)bad, (long long)b->n, rtol, atol_rel);
    free(raw);
    return bad;
}

static inline void yp_test_tbuf_free(yp_test_tbuf *b) {
    free(b->h);
    if (b->d) b->gpu->mem_free(b->gpu, b->d);
    b->h = NULL, b->d = NULL;
}

#endif
