/* test_cuda_ops.c - the CUDA backend's data-movement, BatchNorm and optimizer ops against the CPU
 * backend, forward and backward, fp32, on deterministic random data of odd sizes (channel counts
 * that are no multiple of any block size, beta 0 and 1 where the contract has one, NaN-filled
 * outputs where beta 0 must not read them), plus argument errors and the element-type refusals
 * (the F16/BF16 runs of the data-movement ops are tests/kernels/test_cuda_lowp.c's).
 * Without a usable GPU (or a build without CUDA) it prints "SKIP: <reason>" and exits 77.
 *
 * Tolerances, |cuda - cpu| <= rtol*|cpu| + atol:
 *   data movement (add, axpy, concat, upsample, maxpool, space_to_depth, depth_to_space): rtol 1e-6,
 *     atol 0; the same values are moved and the same sums formed in the same order, so only an
 *     fma contraction of beta*dx + dy (exact for beta 0 and 1) could make them differ;
 *   optimizer (same formulas from kernels/yp_optim_math.h; nvcc may contract into fmas):
 *     rtol 1e-5, atol 1e-6 x max|cpu| (where b*m + g cancels, an fma changes the result by up to
 *     half an ulp of the larger term, ~1e-8 here);
 *   sum_squares and sum_squares_multi (both in double, different summation order): rtol 1e-10;
 *   BN statistics, outputs and gradients (double sums in a different order; the CPU's SiLU uses a
 *     polynomial exp, the GPU expf, both a few ulp): rtol 1e-4 and atol 1e-4 x max|cpu| of that
 *     output (a value that cancels to ~0 has no meaningful relative error); the statistics and
 *     running stats with atol 1e-6 x max|cpu|. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"
#include "yp_test_move_cases.h"
#include "yp_test_cuda.h"

static yp_backend *gpu, *cpu;

/* ---- helpers ---- */

/* A tensor held twice: h on the host (what the CPU backend runs on) and d on the device, with the
 * same contents when made. */
typedef struct {
    float *h, *d;
    int64_t n;
} buf;

static int buf_upload(buf *b) {
    if (b->n == 0)
        return 0;
    int rc = gpu->mem_copy(gpu, b->d, b->h, (size_t)b->n * sizeof(float), YP_COPY_HOST_TO_DEVICE);
    if (rc)
        fprintf(stderr, "  upload: %s\n", gpu->last_error(gpu));
    return rc;
}

/* n floats uniform in [lo, hi) on both sides; `quant` > 0 rounds them down to multiples of it
 * (ties for max pooling). */
static buf buf_rand(int64_t n, uint64_t seed, float lo, float hi, float quant) {
    buf b = {malloc((size_t)(n > 0 ? n : 1) * sizeof(float)), gpu->mem_alloc(gpu, (size_t)n * sizeof(float)), n};
    CHECK(b.h && b.d);
    if (!b.h || !b.d)
        return b;
    uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        float v = yp_test_uniform(&st, lo, hi);
        b.h[i] = quant > 0 ? floorf(v / quant) * quant : v;
    }
    CHECK(buf_upload(&b) == 0);
    return b;
}

/* n floats of NaN on both sides (an output that beta 0 must overwrite without reading). */
static buf buf_nan(int64_t n) {
    buf b = {malloc((size_t)(n > 0 ? n : 1) * sizeof(float)), gpu->mem_alloc(gpu, (size_t)n * sizeof(float)), n};
    CHECK(b.h && b.d);
    if (!b.h || !b.d)
        return b;
    memset(b.h, 0xff, (size_t)n * sizeof(float));
    CHECK(gpu->mem_set(gpu, b.d, 0xff, (size_t)n * sizeof(float)) == 0);
    return b;
}

/* An output initialised for `beta`: NaN for 0, random otherwise. */
static buf buf_out(int64_t n, float beta, uint64_t seed) {
    return beta == 0.0f ? buf_nan(n) : buf_rand(n, seed, -1.0f, 1.0f, 0.0f);
}

static void buf_free(buf *b) {
    free(b->h);
    gpu->mem_free(gpu, b->d);
    b->h = b->d = NULL;
}

/* Compares the device copy of b with its host copy (the CPU result): the number of elements with
 * |cuda - cpu| > rtol*|cpu| + atol_rel*max|cpu|, the first few printed. NaN on either side fails. */
static int64_t compare(const char *what, const buf *b, double rtol, double atol_rel) {
    float *got = malloc((size_t)(b->n > 0 ? b->n : 1) * sizeof(float));
    CHECK(got != NULL);
    if (!got)
        return -1;
    if (b->n && gpu->mem_copy(gpu, got, b->d, (size_t)b->n * sizeof(float), YP_COPY_DEVICE_TO_HOST)) {
        fprintf(stderr, "  %s: download: %s\n", what, gpu->last_error(gpu));
        free(got);
        return -1;
    }
    double amax = 0;
    for (int64_t i = 0; i < b->n; i++)
        if (fabs(b->h[i]) > amax)
            amax = fabs(b->h[i]);
    const double atol = atol_rel * amax;
    int64_t bad = 0;
    for (int64_t i = 0; i < b->n; i++) {
        double want = b->h[i], d = fabs((double)got[i] - want);
        if (!(d <= rtol * fabs(want) + atol) && bad++ < 5)
            fprintf(stderr, "  %s [%lld]: cuda %.9g cpu %.9g\n", what, (long long)i, got[i], want);
    }
    if (bad)
        fprintf(stderr, "  %s: %lld of %lld outside rtol %g atol %g\n", what, (long long)bad, (long long)b->n,
                rtol, atol);
    free(got);
    return bad;
}

/* The same for n doubles: device d against host want, atol_rel x max|want|. */
static int64_t compare_f64(const char *what, const double *d, const double *want, int64_t n, double rtol,
                           double atol_rel) {
    double *got = malloc((size_t)n * sizeof(double));
    CHECK(got != NULL);
    if (!got)
        return -1;
    if (gpu->mem_copy(gpu, got, d, (size_t)n * sizeof(double), YP_COPY_DEVICE_TO_HOST)) {
        fprintf(stderr, "  %s: download: %s\n", what, gpu->last_error(gpu));
        free(got);
        return -1;
    }
    double amax = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(want[i]) > amax)
            amax = fabs(want[i]);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]);
        if (!(e <= rtol * fabs(want[i]) + atol_rel * amax) && bad++ < 5)
            fprintf(stderr, "  %s [%lld]: cuda %.17g cpu %.17g\n", what, (long long)i, got[i], want[i]);
    }
    free(got);
    return bad;
}

/* Runs a GPU call and prints the backend's reason when it fails. */
#define GPU_OK(call)                                                           \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != 0)                                                          \
            fprintf(stderr, "  %s: %s\n", #call, gpu->last_error(gpu));       \
        CHECK(rc_ == 0);                                                       \
    } while (0)

static const float betas01[] = {0.0f, 1.0f};

/* ---- add, axpy ---- */

static void test_add_axpy(void) {
    const int64_t n = 1000003;
    buf a = buf_rand(n, 1, -3, 3, 0), b = buf_rand(n, 2, -3, 3, 0), y = buf_nan(n);
    REQUIRE(a.d && b.d && y.d);
    CHECK(cpu->ops->add_forward(cpu, YP_ELEM_F32, a.h, b.h, y.h, n) == 0);
    GPU_OK(gpu->ops->add_forward(gpu, YP_ELEM_F32, a.d, b.d, y.d, n));
    CHECK_EQ_I64(compare("add_forward", &y, 1e-6, 0), 0);
    for (int k = 0; k < 3; k++) {
        float beta = k < 2 ? betas01[k] : 0.5f;
        buf dx = buf_out(n, beta, 10 + (uint64_t)k);
        CHECK(cpu->ops->axpy_grad(cpu, YP_ELEM_F32, a.h, dx.h, beta, n) == 0);
        GPU_OK(gpu->ops->axpy_grad(gpu, YP_ELEM_F32, a.d, dx.d, beta, n));
        /* beta 0.5: beta*dx + dy may be one fma on the GPU, two roundings on the CPU */
        CHECK_EQ_I64(compare(beta == 0.0f ? "axpy_grad beta 0" : beta == 1.0f ? "axpy_grad beta 1" : "axpy_grad beta 0.5",
                             &dx, beta == 0.5f ? 1e-5 : 1e-6, beta == 0.5f ? 1e-7 : 0),
                     0);
        buf_free(&dx);
    }
    /* in place: dx == dy with beta 0 leaves it as it is */
    GPU_OK(gpu->ops->axpy_grad(gpu, YP_ELEM_F32, b.d, b.d, 0.0f, n));
    CHECK_EQ_I64(compare("axpy_grad in place", &b, 0, 0), 0);
    buf_free(&a), buf_free(&b), buf_free(&y);
}

/* ---- concat ---- */

static void test_concat(void) {
    enum { K = 3 };
    const int64_t cs[K] = {17, 64, 3};
    const yp_dims out = {2, 13, 11, 84};
    const int64_t rows = out.n * out.h * out.w;
    buf x[K], y = buf_nan(rows * out.c);
    for (int i = 0; i < K; i++)
        x[i] = buf_rand(rows * cs[i], 20 + (uint64_t)i, -2, 2, 0);
    REQUIRE(y.d && x[0].d && x[1].d && x[2].d);
    const float *xh[K] = {x[0].h, x[1].h, x[2].h}, *xd[K] = {x[0].d, x[1].d, x[2].d};
    CHECK(cpu->ops->concat_forward(cpu, YP_ELEM_F32, K, xh, cs, out, y.h) == 0);
    GPU_OK(gpu->ops->concat_forward(gpu, YP_ELEM_F32, K, xd, cs, out, y.d));
    CHECK_EQ_I64(compare("concat_forward", &y, 0, 0), 0);

    /* backward: betas 0, 1, 0 with all three wanted, then the middle one not wanted */
    const float bt[K] = {0.0f, 1.0f, 0.0f};
    for (int pass = 0; pass < 2; pass++) {
        buf dx[K];
        for (int i = 0; i < K; i++)
            dx[i] = buf_out(rows * cs[i], bt[i], 30 + (uint64_t)(i + 3 * pass));
        float *dh[K] = {dx[0].h, pass ? NULL : dx[1].h, dx[2].h};
        float *dd[K] = {dx[0].d, pass ? NULL : dx[1].d, dx[2].d};
        /* dy: the forward's output (any 84-channel tensor does) */
        CHECK(cpu->ops->concat_backward(cpu, YP_ELEM_F32, K, dh, cs, out, y.h, bt) == 0);
        GPU_OK(gpu->ops->concat_backward(gpu, YP_ELEM_F32, K, dd, cs, out, y.d, bt));
        for (int i = 0; i < K; i++) {
            char what[64];
            snprintf(what, sizeof what, "concat_backward pass %d input %d", pass, i);
            CHECK_EQ_I64(compare(what, &dx[i], 0, 0), 0); /* the unwanted one: untouched on both */
            buf_free(&dx[i]);
        }
    }
    for (int i = 0; i < K; i++)
        buf_free(&x[i]);
    buf_free(&y);
}

/* ---- upsample ---- */

static void test_upsample(void) {
    const yp_test_upsample_case cases[] = {YP_TEST_UPSAMPLE_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_dims in = cases[k].in;
        const int s = cases[k].s;
        const int64_t n_in = in.n * in.h * in.w * in.c, n_out = n_in * s * s;
        buf x = buf_rand(n_in, 40 + k, -2, 2, 0), y = buf_nan(n_out), dy = buf_rand(n_out, 50 + k, -1, 1, 0);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->upsample_forward(cpu, YP_ELEM_F32, in, s, x.h, y.h) == 0);
        GPU_OK(gpu->ops->upsample_forward(gpu, YP_ELEM_F32, in, s, x.d, y.d));
        CHECK_EQ_I64(compare("upsample_forward", &y, 0, 0), 0);
        for (int b = 0; b < 2; b++) {
            buf dx = buf_out(n_in, betas01[b], 60 + k);
            CHECK(cpu->ops->upsample_backward(cpu, YP_ELEM_F32, in, s, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->upsample_backward(gpu, YP_ELEM_F32, in, s, dy.d, dx.d, betas01[b]));
            CHECK_EQ_I64(compare(b ? "upsample_backward beta 1" : "upsample_backward beta 0", &dx, 1e-6, 0), 0);
            buf_free(&dx);
        }
        buf_free(&x), buf_free(&y), buf_free(&dy);
    }
}

/* ---- max pooling ---- */

static yp_pool_desc pool_desc(yp_dims in, int k, int s, int p) {
    yp_pool_desc d = {in, in, k, s, p, YP_ELEM_F32};
    d.out.h = (in.h + 2 * p - k) / s + 1;
    d.out.w = (in.w + 2 * p - k) / s + 1;
    return d;
}

static void test_maxpool(void) {
    /* SPPF's k5 s1 p2, a floor-mode k2 s2 on odd extents, a k3 s2 p1 */
    const yp_pool_desc cases[] = {pool_desc((yp_dims){2, 13, 11, 67}, 5, 1, 2),
                                  pool_desc((yp_dims){2, 15, 17, 33}, 2, 2, 0),
                                  pool_desc((yp_dims){1, 9, 10, 19}, 3, 2, 1)};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_pool_desc *d = &cases[k];
        const int64_t n_in = d->in.n * d->in.h * d->in.w * d->in.c, n_out = d->out.n * d->out.h * d->out.w * d->out.c;
        /* values on a coarse grid so that windows hold ties: the first maximum must win on both */
        buf x = buf_rand(n_in, 70 + k, -4, 4, 1.0f), y = buf_nan(n_out), dy = buf_rand(n_out, 80 + k, -1, 1, 0);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->maxpool_forward(cpu, d, x.h, y.h) == 0);
        GPU_OK(gpu->ops->maxpool_forward(gpu, d, x.d, y.d));
        CHECK_EQ_I64(compare("maxpool_forward", &y, 0, 0), 0);
        for (int b = 0; b < 2; b++) {
            buf dx = buf_out(n_in, betas01[b], 90 + k);
            CHECK(cpu->ops->maxpool_backward(cpu, d, x.h, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->maxpool_backward(gpu, d, x.d, dy.d, dx.d, betas01[b]));
            CHECK_EQ_I64(compare(b ? "maxpool_backward beta 1" : "maxpool_backward beta 0", &dx, 1e-6, 0), 0);
            buf_free(&dx);
        }
        buf_free(&x), buf_free(&y), buf_free(&dy);
    }
}

/* ---- space_to_depth and depth_to_space (Focus, Contract, Expand) ---- */

/* Both directions, both betas, in Focus's order and in Contract's at gains 2 and 3: a
 * permutation, exact. */
static void test_space_to_depth(void) {
    const yp_s2d_desc cases[] = {YP_TEST_S2D_CASES, {{1, 6, 10, 32}, 2, YP_S2D_COL_MAJOR}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_s2d_desc *d = &cases[k];
        const int64_t n = d->fine.n * d->fine.h * d->fine.w * d->fine.c;
        buf x = buf_rand(n, 100 + k, -2, 2, 0), y = buf_nan(n), dy = buf_rand(n, 110 + k, -1, 1, 0);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->space_to_depth(cpu, YP_ELEM_F32, d, x.h, y.h, 0.0f) == 0);
        GPU_OK(gpu->ops->space_to_depth(gpu, YP_ELEM_F32, d, x.d, y.d, 0.0f));
        CHECK_EQ_I64(compare("space_to_depth beta 0", &y, 0, 0), 0);
        for (int b = 0; b < 2; b++) {
            buf f = buf_out(n, betas01[b], 120 + k), c = buf_out(n, betas01[b], 125 + k);
            CHECK(cpu->ops->depth_to_space(cpu, YP_ELEM_F32, d, dy.h, f.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->depth_to_space(gpu, YP_ELEM_F32, d, dy.d, f.d, betas01[b]));
            CHECK_EQ_I64(compare(b ? "depth_to_space beta 1" : "depth_to_space beta 0", &f, 1e-6, 0), 0);
            CHECK(cpu->ops->space_to_depth(cpu, YP_ELEM_F32, d, dy.h, c.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->space_to_depth(gpu, YP_ELEM_F32, d, dy.d, c.d, betas01[b]));
            CHECK_EQ_I64(compare(b ? "space_to_depth beta 1" : "space_to_depth beta 0 (dy)", &c, 1e-6, 0), 0);
            buf_free(&f), buf_free(&c);
        }
        buf_free(&x), buf_free(&y), buf_free(&dy);
    }
}

/* Zero padding: a copy, exact both ways. */
static void test_zero_pad(void) {
    const yp_pad_desc cases[] = {YP_TEST_PAD_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_pad_desc *d = &cases[k];
        const int64_t nx = d->in.n * d->in.h * d->in.w * d->in.c;
        const int64_t ny = d->in.n * (d->in.h + d->top + d->bottom) * (d->in.w + d->left + d->right) * d->in.c;
        buf x = buf_rand(nx, 130 + k, -2, 2, 0), y = buf_nan(ny), dy = buf_rand(ny, 140 + k, -1, 1, 0);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->zero_pad_forward(cpu, d, x.h, y.h) == 0);
        GPU_OK(gpu->ops->zero_pad_forward(gpu, d, x.d, y.d));
        CHECK_EQ_I64(compare("zero_pad_forward", &y, 0, 0), 0);
        for (int b = 0; b < 2; b++) {
            buf dx = buf_out(nx, betas01[b], 150 + k);
            CHECK(cpu->ops->zero_pad_backward(cpu, d, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->zero_pad_backward(gpu, d, dy.d, dx.d, betas01[b]));
            CHECK_EQ_I64(compare(b ? "zero_pad_backward beta 1" : "zero_pad_backward beta 0", &dx, 0, 0), 0);
            buf_free(&dx);
        }
        buf_free(&x), buf_free(&y), buf_free(&dy);
    }
}

/* ReLU, LeakyReLU and Hardswish: the element functions of yp_act_math.h on both sides, so the
 * bits agree (x quantised to 1/8 over [-5, 5) hits 0 and +-3 exactly, the pieces' ends). */
static void test_activations(void) {
    const int64_t n = 70001; /* not a multiple of the block */
    buf x = buf_rand(n, 160, -5, 5, 0.125f), y = buf_nan(n), dy = buf_rand(n, 161, -1, 1, 0);
    REQUIRE(x.d && y.d && dy.d);
    CHECK(cpu->ops->relu_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->relu_forward(gpu, YP_ELEM_F32, x.d, y.d, n));
    CHECK_EQ_I64(compare("relu_forward", &y, 0, 0), 0);
    for (int b = 0; b < 2; b++) {
        buf dx = buf_out(n, betas01[b], 162);
        CHECK(cpu->ops->relu_backward(cpu, YP_ELEM_F32, y.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->relu_backward(gpu, YP_ELEM_F32, y.d, dy.d, dx.d, betas01[b], n));
        CHECK_EQ_I64(compare("relu_backward", &dx, 0, 0), 0);
        buf_free(&dx);
        dx = buf_out(n, betas01[b], 163);
        CHECK(cpu->ops->leaky_relu_backward(cpu, YP_ELEM_F32, 0.1f, x.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->leaky_relu_backward(gpu, YP_ELEM_F32, 0.1f, x.d, dy.d, dx.d, betas01[b], n));
        CHECK_EQ_I64(compare("leaky_relu_backward", &dx, 0, 0), 0);
        buf_free(&dx);
        dx = buf_out(n, betas01[b], 164);
        CHECK(cpu->ops->hardswish_backward(cpu, YP_ELEM_F32, x.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->hardswish_backward(gpu, YP_ELEM_F32, x.d, dy.d, dx.d, betas01[b], n));
        CHECK_EQ_I64(compare("hardswish_backward", &dx, 1e-6, 0), 0);
        buf_free(&dx);
    }
    CHECK(cpu->ops->leaky_relu_forward(cpu, YP_ELEM_F32, 0.1f, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->leaky_relu_forward(gpu, YP_ELEM_F32, 0.1f, x.d, y.d, n));
    CHECK_EQ_I64(compare("leaky_relu_forward", &y, 0, 0), 0);
    CHECK(cpu->ops->hardswish_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->hardswish_forward(gpu, YP_ELEM_F32, x.d, y.d, n));
    CHECK_EQ_I64(compare("hardswish_forward", &y, 1e-6, 0), 0);
    CHECK(gpu->ops->relu_forward(gpu, YP_ELEM_COUNT, x.d, y.d, n) == -1); /* no element type */
    CHECK_STR_HAS(gpu->last_error(gpu), "relu_forward");
    buf_free(&x), buf_free(&y), buf_free(&dy);
}

/* ---- BatchNorm ---- */

#define BN_RTOL 1e-4
#define BN_ATOL 1e-4

/* One BN shape through every entry: x with per-channel offsets (|mean| up to 3 next to spreads
 * 0.5..2), YOLOv5's eps 1e-3 and momentum 0.03. */
static void bn_case(yp_dims dims, uint64_t seed) {
    const int64_t c = dims.c, rows = dims.n * dims.h * dims.w, n = rows * c;
    const yp_bn_desc d = {dims, 1e-3f, 0.03f, YP_ELEM_F32};
    buf x = buf_rand(n, seed, -1, 1, 0), gamma = buf_rand(c, seed + 1, 0.5f, 1.5f, 0),
        beta = buf_rand(c, seed + 2, -0.5f, 0.5f, 0), rm = buf_rand(c, seed + 3, -0.5f, 0.5f, 0),
        rv = buf_rand(c, seed + 4, 0.5f, 2.0f, 0), stats = buf_nan(2 * c), y = buf_nan(n),
        dy = buf_rand(n, seed + 5, -1, 1, 0);
    REQUIRE(x.d && gamma.d && beta.d && rm.d && rv.d && stats.d && y.d && dy.d);
    {
        uint64_t st = seed + 6;
        for (int64_t j = 0; j < c; j++) {
            float off = yp_test_uniform(&st, -3, 3), scale = yp_test_uniform(&st, 0.5f, 2.0f);
            for (int64_t r = 0; r < rows; r++)
                x.h[r * c + j] = off + scale * x.h[r * c + j];
        }
        CHECK(buf_upload(&x) == 0);
    }

    /* training forward: statistics, running update, output */
    CHECK(cpu->ops->bn_forward_train(cpu, &d, x.h, gamma.h, beta.h, y.h, stats.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_train(gpu, &d, x.d, gamma.d, beta.d, y.d, stats.d, rm.d, rv.d));
    CHECK_EQ_I64(compare("bn_forward_train stats", &stats, BN_RTOL, 1e-6), 0);
    CHECK_EQ_I64(compare("bn_forward_train running_mean", &rm, BN_RTOL, 1e-6), 0);
    CHECK_EQ_I64(compare("bn_forward_train running_var", &rv, BN_RTOL, 1e-6), 0);
    CHECK_EQ_I64(compare("bn_forward_train y", &y, BN_RTOL, BN_ATOL), 0);
    /* the rest runs from the CPU's statistics on both, so that each op is compared alone */
    CHECK(buf_upload(&stats) == 0);

    /* statistics only (y NULL): the same stats again (running stats updated a second time) */
    buf stats2 = buf_nan(2 * c);
    CHECK(cpu->ops->bn_forward_train(cpu, &d, x.h, gamma.h, beta.h, NULL, stats2.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_train(gpu, &d, x.d, gamma.d, beta.d, NULL, stats2.d, rm.d, rv.d));
    CHECK_EQ_I64(compare("bn_forward_train (no y) stats", &stats2, BN_RTOL, 1e-6), 0);
    CHECK_EQ_I64(compare("bn_forward_train (no y) running_var", &rv, BN_RTOL, 1e-6), 0);
    buf_free(&stats2);
    CHECK(buf_upload(&rm) == 0 && buf_upload(&rv) == 0);

    /* eval, apply, fused apply */
    buf y2 = buf_nan(n);
    CHECK(cpu->ops->bn_forward_eval(cpu, &d, x.h, gamma.h, beta.h, y2.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_eval(gpu, &d, x.d, gamma.d, beta.d, y2.d, rm.d, rv.d));
    CHECK_EQ_I64(compare("bn_forward_eval", &y2, BN_RTOL, BN_ATOL), 0);
    CHECK(cpu->ops->bn_apply(cpu, &d, x.h, gamma.h, beta.h, stats.h, y2.h) == 0);
    GPU_OK(gpu->ops->bn_apply(gpu, &d, x.d, gamma.d, beta.d, stats.d, y2.d));
    CHECK_EQ_I64(compare("bn_apply", &y2, BN_RTOL, BN_ATOL), 0);
    CHECK(cpu->ops->bn_silu_apply(cpu, &d, x.h, gamma.h, beta.h, stats.h, y2.h) == 0);
    GPU_OK(gpu->ops->bn_silu_apply(gpu, &d, x.d, gamma.d, beta.d, stats.d, y2.d));
    CHECK_EQ_I64(compare("bn_silu_apply", &y2, BN_RTOL, BN_ATOL), 0);

    /* fused SiLU backward, without and with the sums */
    buf g = buf_nan(n);
    CHECK(cpu->ops->bn_silu_backward(cpu, &d, x.h, gamma.h, beta.h, stats.h, dy.h, g.h, NULL) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, &d, x.d, gamma.d, beta.d, stats.d, dy.d, g.d, NULL));
    CHECK_EQ_I64(compare("bn_silu_backward", &g, BN_RTOL, BN_ATOL), 0);
    double *sums_h = malloc((size_t)(2 * c) * sizeof(double));
    double *sums_d = gpu->mem_alloc(gpu, (size_t)(2 * c) * sizeof(double));
    REQUIRE(sums_h && sums_d);
    CHECK(cpu->ops->bn_silu_backward(cpu, &d, x.h, gamma.h, beta.h, stats.h, dy.h, g.h, sums_h) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, &d, x.d, gamma.d, beta.d, stats.d, dy.d, g.d, sums_d));
    CHECK_EQ_I64(compare("bn_silu_backward (sums) dx", &g, BN_RTOL, BN_ATOL), 0);
    CHECK_EQ_I64(compare_f64("bn_silu_backward sum(dx)", sums_d, sums_h, c, BN_RTOL, BN_ATOL), 0);
    CHECK_EQ_I64(compare_f64("bn_silu_backward sum(dx*(x-mean))", sums_d + c, sums_h + c, c, BN_RTOL, BN_ATOL), 0);
    /* both sides continue from the CPU's dx and sums */
    CHECK(buf_upload(&g) == 0);
    CHECK(gpu->mem_copy(gpu, sums_d, sums_h, (size_t)(2 * c) * sizeof(double), YP_COPY_HOST_TO_DEVICE) == 0);

    /* BN backward: (a) own sums, beta 0 for dx and the parameters; (b) the fused sums, beta 1,
     * dgamma not wanted; (c) own sums, beta 1 */
    for (int k = 0; k < 3; k++) {
        const yp_betas bt = {k == 0 ? 0.0f : 1.0f, k == 0 ? 0.0f : 1.0f};
        const double *sh = k == 1 ? sums_h : NULL, *sd = k == 1 ? sums_d : NULL;
        buf dx = buf_out(n, bt.dx, seed + 10 + (uint64_t)k), dg = buf_out(c, bt.w, seed + 20 + (uint64_t)k),
            db = buf_out(c, bt.w, seed + 30 + (uint64_t)k);
        float *dgh = k == 1 ? NULL : dg.h, *dgd = k == 1 ? NULL : dg.d;
        CHECK(cpu->ops->bn_backward(cpu, &d, x.h, stats.h, gamma.h, g.h, sh, dx.h, dgh, db.h, bt) == 0);
        GPU_OK(gpu->ops->bn_backward(gpu, &d, x.d, stats.d, gamma.d, g.d, sd, dx.d, dgd, db.d, bt));
        char what[64];
        snprintf(what, sizeof what, "bn_backward case %d dx", k);
        CHECK_EQ_I64(compare(what, &dx, BN_RTOL, BN_ATOL), 0);
        snprintf(what, sizeof what, "bn_backward case %d dgamma", k);
        CHECK_EQ_I64(compare(what, &dg, BN_RTOL, BN_ATOL), 0); /* case 1: untouched NaN-free randoms */
        snprintf(what, sizeof what, "bn_backward case %d dbeta", k);
        CHECK_EQ_I64(compare(what, &db, BN_RTOL, BN_ATOL), 0);
        buf_free(&dx), buf_free(&dg), buf_free(&db);
    }

    /* in place: bn_silu_backward with dx == dy */
    CHECK(cpu->ops->bn_silu_backward(cpu, &d, x.h, gamma.h, beta.h, stats.h, dy.h, dy.h, NULL) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, &d, x.d, gamma.d, beta.d, stats.d, dy.d, dy.d, NULL));
    CHECK_EQ_I64(compare("bn_silu_backward in place", &dy, BN_RTOL, BN_ATOL), 0);

    free(sums_h);
    gpu->mem_free(gpu, sums_d);
    buf_free(&x), buf_free(&gamma), buf_free(&beta), buf_free(&rm), buf_free(&rv), buf_free(&stats);
    buf_free(&y), buf_free(&y2), buf_free(&dy), buf_free(&g);
}

static void test_bn(void) {
    bn_case((yp_dims){2, 19, 23, 67}, 200); /* 874 rows, 67 channels */
    bn_case((yp_dims){4, 10, 10, 300}, 300); /* past the CPU's 256-channel blocks */
    bn_case((yp_dims){8, 40, 40, 16}, 400); /* 12800 rows, few channels */
}

/* ---- optimizer ---- */

#define OPT_RTOL 1e-5
#define OPT_ATOL 1e-6

static void test_optim(void) {
    const int64_t n = 100003;
    yp_optim_hyp h = {.lr = 0.01f, .momentum = 0.937f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 5e-4f,
                      .decoupled = 0, .step = 1, .grad_scale = 0.25f, .ema_decay = 0.9999f};
    buf w = buf_rand(n, 500, -1, 1, 0), grad = buf_rand(n, 501, -2, 2, 0), m = buf_rand(n, 502, -0.1f, 0.1f, 0),
        v = buf_rand(n, 503, 0, 0.01f, 0), ema = buf_rand(n, 504, -1, 1, 0);
    REQUIRE(w.d && grad.d && m.d && v.d && ema.d);

    CHECK(cpu->ops->sgd_step(cpu, YP_ELEM_F32, w.h, grad.h, m.h, n, &h) == 0);
    GPU_OK(gpu->ops->sgd_step(gpu, YP_ELEM_F32, w.d, grad.d, m.d, n, &h));
    CHECK_EQ_I64(compare("sgd_step w", &w, OPT_RTOL, OPT_ATOL), 0);
    CHECK_EQ_I64(compare("sgd_step m", &m, OPT_RTOL, OPT_ATOL), 0);
    CHECK(buf_upload(&w) == 0 && buf_upload(&m) == 0); /* each op from the same inputs */

    /* Adam at step 1 and 5, then AdamW */
    const struct {
        int decoupled;
        int64_t step;
    } adam[] = {{0, 1}, {0, 5}, {1, 5}};
    for (size_t k = 0; k < sizeof adam / sizeof adam[0]; k++) {
        h.decoupled = adam[k].decoupled, h.step = adam[k].step;
        CHECK(cpu->ops->adam_step(cpu, YP_ELEM_F32, w.h, grad.h, m.h, v.h, n, &h) == 0);
        GPU_OK(gpu->ops->adam_step(gpu, YP_ELEM_F32, w.d, grad.d, m.d, v.d, n, &h));
        char what[64];
        snprintf(what, sizeof what, "adam_step %s step %lld w", h.decoupled ? "AdamW" : "Adam", (long long)h.step);
        CHECK_EQ_I64(compare(what, &w, OPT_RTOL, OPT_ATOL), 0);
        CHECK_EQ_I64(compare("adam_step m", &m, OPT_RTOL, OPT_ATOL), 0);
        CHECK_EQ_I64(compare("adam_step v", &v, OPT_RTOL, OPT_ATOL), 0);
        CHECK(buf_upload(&w) == 0 && buf_upload(&m) == 0 && buf_upload(&v) == 0);
    }
    h.decoupled = 0, h.step = 1;

    CHECK(cpu->ops->ema_update(cpu, YP_ELEM_F32, ema.h, w.h, n, 0.9999f) == 0);
    GPU_OK(gpu->ops->ema_update(gpu, YP_ELEM_F32, ema.d, w.d, n, 0.9999f));
    CHECK_EQ_I64(compare("ema_update", &ema, OPT_RTOL, OPT_ATOL), 0);
    CHECK(buf_upload(&ema) == 0);

    /* the fused step, with the EMA and without; the gradient comes back zeroed */
    for (int with_ema = 1; with_ema >= 0; with_ema--) {
        CHECK(cpu->ops->sgd_ema_step(cpu, YP_ELEM_F32, w.h, grad.h, m.h, with_ema ? ema.h : NULL, n, &h) == 0);
        GPU_OK(gpu->ops->sgd_ema_step(gpu, YP_ELEM_F32, w.d, grad.d, m.d, with_ema ? ema.d : NULL, n, &h));
        CHECK_EQ_I64(compare("sgd_ema_step w", &w, OPT_RTOL, OPT_ATOL), 0);
        CHECK_EQ_I64(compare("sgd_ema_step m", &m, OPT_RTOL, OPT_ATOL), 0);
        CHECK_EQ_I64(compare("sgd_ema_step ema", &ema, OPT_RTOL, OPT_ATOL), 0);
        CHECK_EQ_I64(compare("sgd_ema_step grad", &grad, 0, 0), 0);
        buf_free(&grad);
        grad = buf_rand(n, 510 + (uint64_t)with_ema, -2, 2, 0);
        CHECK(buf_upload(&w) == 0 && buf_upload(&m) == 0 && buf_upload(&ema) == 0);
    }
    buf_free(&w), buf_free(&grad), buf_free(&m), buf_free(&v), buf_free(&ema);
}

/* optim_multi: 40 tensors of odd sizes (more than one launch's worth), EMA on every other one,
 * two parameter groups' lr and decay, for SGD, Adam and AdamW: CUDA's entry against the CPU's,
 * the gradients zeroed. */
static void test_optim_multi(void) {
    enum { K = 40 };
    buf w[K], g[K], m[K], v[K], e[K];
    yp_optim_tensor hc[K], dc[K];
    for (int j = 0; j < K; j++) {
        int64_t n = 1 + (int64_t)j * 997 % 5003;
        w[j] = buf_rand(n, 600 + (uint64_t)j, -1, 1, 0), g[j] = buf_rand(n, 700 + (uint64_t)j, -2, 2, 0);
        m[j] = buf_rand(n, 800 + (uint64_t)j, -0.1f, 0.1f, 0), v[j] = buf_rand(n, 900 + (uint64_t)j, 0, 0.01f, 0);
        e[j] = buf_rand(n, 1000 + (uint64_t)j, -1, 1, 0);
        REQUIRE(w[j].d && g[j].d && m[j].d && v[j].d && e[j].d);
        float lr = j % 3 ? 0.01f : 0.1f, wd = j % 3 ? 5e-4f : 0.0f;
        hc[j] = (yp_optim_tensor){w[j].h, g[j].h, m[j].h, v[j].h, j % 2 ? e[j].h : NULL, n, lr, wd};
        dc[j] = (yp_optim_tensor){w[j].d, g[j].d, m[j].d, v[j].d, j % 2 ? e[j].d : NULL, n, lr, wd};
    }
    yp_optim_hyp h = {.momentum = 0.937f, .beta2 = 0.999f, .eps = 1e-8f, .step = 3, .grad_scale = 0.5f,
                      .ema_decay = 0.999f};
    for (int kind = 0; kind < 3; kind++) { /* SGD, Adam, AdamW */
        h.decoupled = kind == 2;
        CHECK(cpu->ops->optim_multi(cpu, YP_ELEM_F32, kind > 0, K, hc, &h) == 0);
        GPU_OK(gpu->ops->optim_multi(gpu, YP_ELEM_F32, kind > 0, K, dc, &h));
        int64_t bad = 0;
        for (int j = 0; j < K; j++) {
            bad += compare("optim_multi w", &w[j], OPT_RTOL, OPT_ATOL) + compare("optim_multi m", &m[j], OPT_RTOL, OPT_ATOL);
            bad += compare("optim_multi v", &v[j], OPT_RTOL, OPT_ATOL) + compare("optim_multi ema", &e[j], OPT_RTOL, OPT_ATOL);
            bad += compare("optim_multi grad", &g[j], 0, 0);
            buf_free(&g[j]);
            g[j] = buf_rand(w[j].n, 1100 + (uint64_t)(j + 50 * kind), -2, 2, 0);
            hc[j].grad = g[j].h, dc[j].grad = g[j].d;
            CHECK(buf_upload(&w[j]) == 0 && buf_upload(&m[j]) == 0 && buf_upload(&v[j]) == 0 && buf_upload(&e[j]) == 0);
        }
        CHECK_EQ_I64(bad, 0);
    }
    for (int j = 0; j < K; j++) buf_free(&w[j]), buf_free(&g[j]), buf_free(&m[j]), buf_free(&v[j]), buf_free(&e[j]);
}

static void test_sum_squares(void) {
    const int64_t sizes[] = {0, 1, 255, 1000003, 3 * 1000003 + 1};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int64_t n = sizes[k];
        buf x = buf_rand(n, 600 + k, -3, 3, 0);
        REQUIRE(x.h && (x.d || n == 0));
        double want = -1, got = -1;
        CHECK(cpu->ops->sum_squares(cpu, YP_ELEM_F32, x.h, n, &want) == 0);
        GPU_OK(gpu->ops->sum_squares(gpu, YP_ELEM_F32, x.d, n, &got));
        if (!(fabs(got - want) <= 1e-10 * fabs(want)))
            fprintf(stderr, "  sum_squares n %lld: cuda %.17g cpu %.17g\n", (long long)n, got, want);
        CHECK(fabs(got - want) <= 1e-10 * fabs(want));
        buf_free(&x);
    }
}

/* sum_squares_multi against the CPU's: a few tensors of mixed sizes (one empty), then more tensors
 * than the device keeps slots for (4096), so the chunks fold onto one result. */
static void test_sum_squares_multi(void) {
    enum { K = 4100 };
    buf x = buf_rand(3 * 1000003 + 1, 620, -3, 3, 0);
    REQUIRE(x.h && x.d);
    static const float *hs[K], *ds[K];
    static int64_t ns[K];
    const int64_t some[5] = {1000003, 0, 255, 1, 3 * 1000003 + 1};
    for (int j = 0; j < 5; j++) hs[j] = x.h, ds[j] = x.d, ns[j] = some[j];
    double want = -1, got = -1;
    CHECK(cpu->ops->sum_squares_multi(cpu, YP_ELEM_F32, 5, hs, ns, &want) == 0);
    GPU_OK(gpu->ops->sum_squares_multi(gpu, YP_ELEM_F32, 5, ds, ns, &got));
    CHECK(fabs(got - want) <= 1e-10 * fabs(want));
    for (int j = 0; j < K; j++) hs[j] = x.h + 3 * j, ds[j] = x.d + 3 * j, ns[j] = 3 + j % 5;
    CHECK(cpu->ops->sum_squares_multi(cpu, YP_ELEM_F32, K, hs, ns, &want) == 0);
    GPU_OK(gpu->ops->sum_squares_multi(gpu, YP_ELEM_F32, K, ds, ns, &got));
    if (!(fabs(got - want) <= 1e-10 * fabs(want)))
        fprintf(stderr, "  sum_squares_multi %d tensors: cuda %.17g cpu %.17g\n", K, got, want);
    CHECK(fabs(got - want) <= 1e-10 * fabs(want));
    GPU_OK(gpu->ops->sum_squares_multi(gpu, YP_ELEM_F32, 0, NULL, NULL, &got));
    CHECK(got == 0.0);
    buf_free(&x);
}

/* ---- argument errors ---- */

static void expect_fail(int rc, const char *a, const char *b) {
    CHECK(rc == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), a);
    if (b)
        CHECK_STR_HAS(gpu->last_error(gpu), b);
}

static void test_errors(void) {
    const yp_ops *o = gpu->ops;
    float *p = gpu->mem_alloc(gpu, 1024 * sizeof(float));
    REQUIRE(p != NULL);
    /* the data-movement ops run F32, F16 and BF16 (tests/kernels/test_cuda_lowp.c): a value that is no
     * element type is refused with the op named */
    const yp_elem bad = YP_ELEM_COUNT;
    const char *bad_why = "not f32, f16 or bf16";
    expect_fail(o->add_forward(gpu, bad, p, p, p, 4), "add_forward", bad_why);
    expect_fail(o->axpy_grad(gpu, bad, p, p, 0.0f, 4), "axpy_grad", bad_why);
    expect_fail(o->upsample_forward(gpu, bad, (yp_dims){1, 2, 2, 2}, 2, p, p), "upsample_forward", bad_why);
    const yp_s2d_desc sd = {{1, 2, 2, 2}, 2, YP_S2D_ROW_MAJOR};
    expect_fail(o->space_to_depth(gpu, bad, &sd, p, p + 64, 0.0f), "space_to_depth", bad_why);
    expect_fail(o->depth_to_space(gpu, bad, &sd, p, p + 64, 0.0f), "depth_to_space", bad_why);
    yp_pool_desc pd = pool_desc((yp_dims){1, 4, 4, 2}, 2, 2, 0);
    pd.dtype = bad;
    expect_fail(o->maxpool_forward(gpu, &pd, p, p), "maxpool_forward", bad_why);
    /* BN runs F32, F16 and BF16 (test_cuda_lowp_norm); a value that is none of them is refused */
    yp_bn_desc bd = {{1, 4, 4, 2}, 1e-3f, 0.03f, YP_ELEM_COUNT};
    expect_fail(o->bn_apply(gpu, &bd, p, p, p, p, p), "bn_apply", bad_why);
    /* the optimizer runs on the fp32 masters: F16/BF16 refused with the op and the type named */
    yp_optim_hyp h = {.lr = 0.01f, .momentum = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 0, .grad_scale = 1};
    expect_fail(o->sgd_step(gpu, YP_ELEM_F16, p, p, p, 4, &h), "sgd_step", "f16");
    double out = 0;
    expect_fail(o->sum_squares(gpu, YP_ELEM_BF16, p, 4, &out), "sum_squares", "bf16");

    /* counts, NULL buffers, shapes */
    CHECK(o->add_forward(gpu, YP_ELEM_F32, NULL, NULL, NULL, 0) == 0);
    expect_fail(o->add_forward(gpu, YP_ELEM_F32, p, p, p, -1), "negative", NULL);
    expect_fail(o->axpy_grad(gpu, YP_ELEM_F32, NULL, p, 1.0f, 4), "NULL", NULL);
    expect_fail(o->ema_update(gpu, YP_ELEM_F32, p, NULL, 4, 0.9f), "NULL", NULL);
    expect_fail(o->sgd_step(gpu, YP_ELEM_F32, p, p, p, 4, NULL), "NULL", NULL);
    expect_fail(o->adam_step(gpu, YP_ELEM_F32, p, p, p, p, 4, &h), "step 0", NULL);
    expect_fail(o->sum_squares(gpu, YP_ELEM_F32, p, 4, NULL), "NULL", NULL);
    expect_fail(o->sum_squares(gpu, YP_ELEM_F32, NULL, 4, &out), "NULL", NULL);
    const int64_t cs[2] = {2, 3};
    const float *xs[2] = {p, p};
    expect_fail(o->concat_forward(gpu, YP_ELEM_F32, 2, xs, cs, (yp_dims){1, 2, 2, 6}, p), "add up to 5", NULL);
    xs[1] = NULL;
    expect_fail(o->concat_forward(gpu, YP_ELEM_F32, 2, xs, cs, (yp_dims){1, 2, 2, 5}, p), "input 1 is NULL", NULL);
    const yp_s2d_desc odd = {{1, 3, 4, 2}, 2, YP_S2D_COL_MAJOR}, g3 = {{1, 6, 4, 2}, 3, YP_S2D_ROW_MAJOR};
    expect_fail(o->space_to_depth(gpu, YP_ELEM_F32, &odd, p, p + 64, 0.0f), "multiples of the gain 2", NULL);
    expect_fail(o->depth_to_space(gpu, YP_ELEM_F32, &g3, p, p + 64, 0.0f), "6x4", "multiples of the gain 3");
    expect_fail(o->space_to_depth(gpu, YP_ELEM_F32, &sd, p, p, 0.0f), "in place", NULL);
    expect_fail(o->depth_to_space(gpu, YP_ELEM_F32, NULL, p, p + 64, 0.0f), "NULL descriptor", NULL);
    expect_fail(o->upsample_forward(gpu, YP_ELEM_F32, (yp_dims){1, 2, 2, 2}, 0, p, p), "scale", NULL);
    pd = pool_desc((yp_dims){1, 4, 4, 2}, 2, 2, 0);
    pd.out.h = 3;
    expect_fail(o->maxpool_forward(gpu, &pd, p, p), "does not follow", NULL);
    expect_fail(o->maxpool_backward(gpu, NULL, p, p, p, 0.0f), "NULL descriptor", NULL);
    bd.dtype = YP_ELEM_F32;
    bd.dims = (yp_dims){1, 1, 1, 4};
    expect_fail(o->bn_forward_train(gpu, &bd, p, p, p, p, p, p, p), "more than 1 value", NULL);
    bd.dims = (yp_dims){1, 4, 4, 2};
    bd.eps = 0.0f;
    expect_fail(o->bn_forward_eval(gpu, &bd, p, p, p, p, p, p), "eps", NULL);
    bd.eps = 1e-3f;
    expect_fail(o->bn_backward(gpu, &bd, p, p, p, NULL, NULL, p, NULL, NULL, (yp_betas){0, 0}), "NULL", NULL);
    CHECK(gpu->sync(gpu) == 0); /* nothing above left the device in an error state */
    gpu->mem_free(gpu, p);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 0);
    if (rc) return rc;
    YP_RUN(test_add_axpy);
    YP_RUN(test_concat);
    YP_RUN(test_upsample);
    YP_RUN(test_maxpool);
    YP_RUN(test_space_to_depth);
    YP_RUN(test_zero_pad);
    YP_RUN(test_activations);
    YP_RUN(test_bn);
    YP_RUN(test_optim);
    YP_RUN(test_optim_multi);
    YP_RUN(test_sum_squares);
    YP_RUN(test_sum_squares_multi);
    YP_RUN(test_errors);
    CHECK(gpu->sync(gpu) == 0);
    yp_backend_free(cpu);
    yp_backend_free(gpu);
    return yp_test_summary();
}
