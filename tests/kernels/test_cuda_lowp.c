/* test_cuda_lowp.c - the CUDA backend's F16 and BF16 storage of the data-movement ops (add,
 * axpy_grad, concat, upsample, maxpool, space_to_depth, depth_to_space, zero_pad), the pointwise
 * activations (relu, leaky_relu, hardswish, silu) and attention, forward and backward, against the
 * CPU backend's fp32 result on the same inputs: every input is rounded to the type first (both
 * backends see the same values), the CPU's fp32 output is rounded to the type before comparing
 * (yp_test_tbuf_check), beta 0 over NaN-filled outputs and beta 1 over random ones, odd sizes
 * (channel counts that are no multiple of any block size). Plus a value that is no element type,
 * refused. Without a usable GPU (or a build without CUDA) it prints "SKIP: <reason>", exit 77.
 *
 * Tolerances, |cuda - round(cpu)| <= rtol*|round(cpu)| + atol, with u = yp_test_elem_eps(t) (the
 * unit roundoff: 2^-11 for f16, 2^-8 for bf16), so one ulp of t at a normal value w is at most
 * 2u|w|:
 *   data movement: exact (rtol 0, atol 0). The device loads the same values, forms the same fp32
 *     sums in the CPU's order (the gathers of yp_index_math.h; beta*dx + v is exact for beta 0
 *     and 1 even as an fma) and rounds once, when storing; the copies move the stored bits and a
 *     maximum is one of its inputs. So its result is the CPU's fp32 result rounded to t.
 *   relu: exact (a selection and beta 0 / 1 accumulation, as above).
 *   leaky_relu, hardswish, silu: rtol 4u (two ulps of t), atol 1e-6 x max|cpu|. Both sides
 *     compute the same fp32 formula on the same inputs, but the fp32 results may differ by a few
 *     fp32 ulps (SiLU: CUDA's expf against the CPU's polynomial exp; the others: an fma
 *     contraction of beta*dx + g, or of x*slope into it); two values that close round to t at
 *     most one ulp of t apart (2u|w|), doubled for margin. The atol covers silu' through zero
 *     (near x = -1.278, where the fp32 terms are O(1) and their difference ~1e-7 is no relative
 *     error) and f16's subnormal outputs.
 *   attention: the device rounds S, P, dP and dS to t between its kernels (attention.cu's rule),
 *     so each element's bound follows those roundings through the case's own values (the
 *     inputs, the CPU's P, and S = scale q.k, dP = dy.v, r = rowsum(P dP), dS = P (dP - r) in
 *     double), first order, no cancellation assumed in any sum; then times 2 for the
 *     second-order terms and both sides' fp32 arithmetic (relative L x 2^-24, 2.4e-5 at L = 400,
 *     well under u). With eta the absolute rounding floor (f16: 2^-25, half its subnormal
 *     spacing; bf16: 0):
 *       sig_ij = u|S_ij| + eta                                      (S rounded)
 *       pi_ij  = P_ij (sig_ij + sum_k P_ik sig_ik + u) + eta         (its softmax, P rounded)
 *       rho_i  = sum_j (pi_ij |dP_ij| + P_ij (u|dP_ij| + eta))        (the row dot r)
 *       tau_ij = pi_ij |dP_ij - r_i| + P_ij (u|dP_ij| + eta + rho_i) + u|dS_ij| + eta
 *                                                                    (dP rounded, dS rounded)
 *       y_i: sum_j pi_ij |v_j|;  dv_j: sum_i pi_ij |dy_i|;  dq_i: scale sum_j tau_ij |k_j|;
 *       dk_j: scale sum_i tau_ij |q_i| (per channel);  P: pi_ij less its own rounding.
 *     Each compared element adds the two roundings of the compared values: |cuda - round(cpu)|
 *     <= 2 (bound + u(|round(cpu)| + |cuda|) + 2 eta). A host emulation of the device's rounding
 *     points used at most 0.44 of these (P; the outputs 0.03-0.36), scores off by 5% exceed them
 *     2-20 times; each check prints the share it used. The backward runs with the forward's P
 *     and with P computed again, in a scratch of exactly the schedule's size (P kept:
 *     n*heads*L*L elements of t; else twice that) with a NaN guard after it that must
 *     stay untouched, and so must the one after P. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"
#include "yp_test_move_cases.h"
#include "yp_test_cuda.h"

static yp_backend *gpu, *cpu;
static yp_elem T; /* the element type of the running pass: F16, then BF16 */

static const float betas01[] = {0.0f, 1.0f};

/* ---- typed buffers of type T ---- */

typedef yp_test_tbuf tbuf;

static tbuf rnd(int64_t n, uint64_t seed, float lo, float hi) {
    tbuf b = yp_test_tbuf_rand(gpu, T, n, seed, lo, hi);
    CHECK(b.h && b.d);
    return b;
}

/* Values on a grid of q (ties for max pooling, the activations' kinks), exact in f16 and bf16. */
static tbuf rnd_grid(int64_t n, uint64_t seed, float lo, float hi, float q) {
    tbuf b = rnd(n, seed, lo, hi);
    if (!b.h || !b.d) return b;
    for (int64_t i = 0; i < n; i++) b.h[i] = floorf(b.h[i] / q) * q;
    CHECK(yp_test_tbuf_upload(&b) == 0);
    return b;
}

static tbuf nans(int64_t n) {
    tbuf b = yp_test_tbuf_nan(gpu, T, n);
    CHECK(b.h && b.d);
    return b;
}

/* An output initialised for `beta`: NaN for 0 (it must be overwritten unread), random for 1. */
static tbuf out_for(int64_t n, float beta, uint64_t seed) {
    return beta == 0.0f ? nans(n) : rnd(n, seed, -1.0f, 1.0f);
}

/* The device copy against the CPU's result in b->h, both rounded to T: 0 mismatches wanted. */
static void expect(const char *what, const tbuf *b, double rtol, double atol_rel) {
    CHECK_EQ_I64(yp_test_tbuf_check(what, b, NULL, rtol, atol_rel), 0);
}

static void expect_exact(const char *what, const tbuf *b) { expect(what, b, 0, 0); }

/* Elements [from, b->n) of the device copy are still NaN (a guard nothing may write). */
static void expect_guard(const char *what, const tbuf *b, int64_t from) {
    const size_t es = yp_elem_size(T), n = (size_t)(b->n - from);
    unsigned char *raw = malloc(n * es);
    REQUIRE(raw != NULL);
    CHECK(gpu->mem_copy(gpu, raw, (const unsigned char *)b->d + (size_t)from * es, n * es,
                        YP_COPY_DEVICE_TO_HOST) == 0);
    int64_t written = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(yp_elem_get(T, raw, (int64_t)i))) written++;
    if (written) fprintf(stderr, "  %s %s: %lld guard elements written\n", what, yp_elem_name(T), (long long)written);
    CHECK_EQ_I64(written, 0);
    free(raw);
}

static void tfree(tbuf *b) { yp_test_tbuf_free(b); }

/* Runs a GPU call and prints the backend's reason when it fails. */
#define GPU_OK(call)                                                                     \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != 0) fprintf(stderr, "  %s: %s\n", #call, gpu->last_error(gpu));       \
        CHECK(rc_ == 0);                                                                 \
    } while (0)

/* The activations' tolerance (see the header): two ulps of T, and an atol x max|cpu|. */
static double act_rtol(void) { return 4 * yp_test_elem_eps(T); }
#define ACT_ATOL 1e-6

/* ---- data movement ---- */

static void test_add_axpy(void) {
    const int64_t n = 100003;
    tbuf a = rnd(n, 1, -3, 3), b = rnd(n, 2, -3, 3), y = nans(n);
    REQUIRE(a.d && b.d && y.d);
    CHECK(cpu->ops->add_forward(cpu, YP_ELEM_F32, a.h, b.h, y.h, n) == 0);
    GPU_OK(gpu->ops->add_forward(gpu, T, a.d, b.d, y.d, n));
    expect_exact("add_forward", &y);
    for (int k = 0; k < 2; k++) {
        tbuf dx = out_for(n, betas01[k], 10 + (uint64_t)k);
        CHECK(cpu->ops->axpy_grad(cpu, YP_ELEM_F32, a.h, dx.h, betas01[k], n) == 0);
        GPU_OK(gpu->ops->axpy_grad(gpu, T, a.d, dx.d, betas01[k], n));
        expect_exact(k ? "axpy_grad beta 1" : "axpy_grad beta 0", &dx);
        tfree(&dx);
    }
    GPU_OK(gpu->ops->axpy_grad(gpu, T, b.d, b.d, 0.0f, n)); /* in place with beta 0: unchanged */
    expect_exact("axpy_grad in place", &b);
    tfree(&a), tfree(&b), tfree(&y);
}

static void test_concat(void) {
    enum { K = 3 };
    const int64_t cs[K] = {17, 64, 3};
    const yp_dims out = {2, 13, 11, 84};
    const int64_t rows = out.n * out.h * out.w;
    tbuf x[K], y = nans(rows * out.c);
    for (int i = 0; i < K; i++) x[i] = rnd(rows * cs[i], 20 + (uint64_t)i, -2, 2);
    REQUIRE(y.d && x[0].d && x[1].d && x[2].d);
    const float *xh[K] = {x[0].h, x[1].h, x[2].h}, *xd[K] = {x[0].d, x[1].d, x[2].d};
    CHECK(cpu->ops->concat_forward(cpu, YP_ELEM_F32, K, xh, cs, out, y.h) == 0);
    GPU_OK(gpu->ops->concat_forward(gpu, T, K, xd, cs, out, y.d));
    expect_exact("concat_forward", &y);
    const float bt[K] = {0.0f, 1.0f, 0.0f};
    for (int pass = 0; pass < 2; pass++) { /* all three wanted, then the middle one not */
        tbuf dx[K];
        for (int i = 0; i < K; i++) dx[i] = out_for(rows * cs[i], bt[i], 30 + (uint64_t)(i + 3 * pass));
        float *dh[K] = {dx[0].h, pass ? NULL : dx[1].h, dx[2].h};
        float *dd[K] = {dx[0].d, pass ? NULL : dx[1].d, dx[2].d};
        CHECK(cpu->ops->concat_backward(cpu, YP_ELEM_F32, K, dh, cs, out, y.h, bt) == 0);
        GPU_OK(gpu->ops->concat_backward(gpu, T, K, dd, cs, out, y.d, bt));
        for (int i = 0; i < K; i++) {
            char what[64];
            snprintf(what, sizeof what, "concat_backward pass %d input %d", pass, i);
            expect_exact(what, &dx[i]);
            tfree(&dx[i]);
        }
    }
    for (int i = 0; i < K; i++) tfree(&x[i]);
    tfree(&y);
}

static void test_upsample(void) {
    const yp_test_upsample_case cases[] = {YP_TEST_UPSAMPLE_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_dims in = cases[k].in;
        const int s = cases[k].s;
        const int64_t n_in = in.n * in.h * in.w * in.c, n_out = n_in * s * s;
        tbuf x = rnd(n_in, 40 + k, -2, 2), y = nans(n_out), dy = rnd(n_out, 50 + k, -1, 1);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->upsample_forward(cpu, YP_ELEM_F32, in, s, x.h, y.h) == 0);
        GPU_OK(gpu->ops->upsample_forward(gpu, T, in, s, x.d, y.d));
        expect_exact("upsample_forward", &y);
        for (int b = 0; b < 2; b++) {
            tbuf dx = out_for(n_in, betas01[b], 60 + k);
            CHECK(cpu->ops->upsample_backward(cpu, YP_ELEM_F32, in, s, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->upsample_backward(gpu, T, in, s, dy.d, dx.d, betas01[b]));
            expect_exact(b ? "upsample_backward beta 1" : "upsample_backward beta 0", &dx);
            tfree(&dx);
        }
        tfree(&x), tfree(&y), tfree(&dy);
    }
}

static yp_pool_desc pool_desc(yp_dims in, int k, int s, int p, yp_elem t) {
    yp_pool_desc d = {in, in, k, s, p, t};
    d.out.h = (in.h + 2 * p - k) / s + 1;
    d.out.w = (in.w + 2 * p - k) / s + 1;
    return d;
}

static void test_maxpool(void) {
    const yp_dims ins[] = {{2, 13, 11, 67}, {2, 15, 17, 33}, {1, 9, 10, 19}};
    const int kk[] = {5, 2, 3}, ss[] = {1, 2, 2}, pp[] = {2, 0, 1}; /* SPPF's, floor mode on odd extents, k3 s2 p1 */
    for (size_t k = 0; k < sizeof ins / sizeof ins[0]; k++) {
        const yp_pool_desc dc = pool_desc(ins[k], kk[k], ss[k], pp[k], YP_ELEM_F32),
                           dg = pool_desc(ins[k], kk[k], ss[k], pp[k], T);
        const int64_t n_in = dc.in.n * dc.in.h * dc.in.w * dc.in.c, n_out = dc.out.n * dc.out.h * dc.out.w * dc.out.c;
        /* a coarse grid makes ties: the first maximum must win on both */
        tbuf x = rnd_grid(n_in, 70 + k, -4, 4, 0.5f), y = nans(n_out), dy = rnd(n_out, 80 + k, -1, 1);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->maxpool_forward(cpu, &dc, x.h, y.h) == 0);
        GPU_OK(gpu->ops->maxpool_forward(gpu, &dg, x.d, y.d));
        expect_exact("maxpool_forward", &y);
        for (int b = 0; b < 2; b++) {
            tbuf dx = out_for(n_in, betas01[b], 90 + k);
            CHECK(cpu->ops->maxpool_backward(cpu, &dc, x.h, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->maxpool_backward(gpu, &dg, x.d, dy.d, dx.d, betas01[b]));
            expect_exact(b ? "maxpool_backward beta 1" : "maxpool_backward beta 0", &dx);
            tfree(&dx);
        }
        tfree(&x), tfree(&y), tfree(&dy);
    }
}

/* Both directions, both betas, Focus's order and Contract's at gains 2 and 3. */
static void test_space_to_depth(void) {
    const yp_s2d_desc cases[] = {YP_TEST_S2D_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_s2d_desc *d = &cases[k];
        const int64_t n = d->fine.n * d->fine.h * d->fine.w * d->fine.c;
        tbuf x = rnd(n, 100 + k, -1, 1);
        REQUIRE(x.d);
        for (int b = 0; b < 2; b++) {
            tbuf f = out_for(n, betas01[b], 120 + k), c = out_for(n, betas01[b], 125 + k);
            REQUIRE(f.d && c.d);
            CHECK(cpu->ops->space_to_depth(cpu, YP_ELEM_F32, d, x.h, c.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->space_to_depth(gpu, T, d, x.d, c.d, betas01[b]));
            expect_exact(b ? "space_to_depth beta 1" : "space_to_depth beta 0", &c);
            CHECK(cpu->ops->depth_to_space(cpu, YP_ELEM_F32, d, x.h, f.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->depth_to_space(gpu, T, d, x.d, f.d, betas01[b]));
            expect_exact(b ? "depth_to_space beta 1" : "depth_to_space beta 0", &f);
            tfree(&f), tfree(&c);
        }
        tfree(&x);
    }
}

static void test_zero_pad(void) {
    const yp_pad_desc cases[] = {YP_TEST_PAD_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_pad_desc *dc = &cases[k];
        yp_pad_desc dg = *dc;
        dg.dtype = T;
        const int64_t nx = dc->in.n * dc->in.h * dc->in.w * dc->in.c;
        const int64_t ny = dc->in.n * (dc->in.h + dc->top + dc->bottom) * (dc->in.w + dc->left + dc->right) * dc->in.c;
        tbuf x = rnd(nx, 130 + k, -2, 2), y = nans(ny), dy = rnd(ny, 140 + k, -1, 1);
        REQUIRE(x.d && y.d && dy.d);
        CHECK(cpu->ops->zero_pad_forward(cpu, dc, x.h, y.h) == 0);
        GPU_OK(gpu->ops->zero_pad_forward(gpu, &dg, x.d, y.d));
        expect_exact("zero_pad_forward", &y);
        for (int b = 0; b < 2; b++) {
            tbuf dx = out_for(nx, betas01[b], 150 + k);
            CHECK(cpu->ops->zero_pad_backward(cpu, dc, dy.h, dx.h, betas01[b]) == 0);
            GPU_OK(gpu->ops->zero_pad_backward(gpu, &dg, dy.d, dx.d, betas01[b]));
            expect_exact(b ? "zero_pad_backward beta 1" : "zero_pad_backward beta 0", &dx);
            tfree(&dx);
        }
        tfree(&x), tfree(&y), tfree(&dy);
    }
}

/* ---- pointwise activations ---- */

/* x on a grid of 1/8 over [-5, 5): hits 0 and +-3 exactly, the pieces' ends. */
static void test_activations(void) {
    const int64_t n = 70001; /* not a multiple of the block */
    const double rt = act_rtol();
    tbuf x = rnd_grid(n, 160, -5, 5, 0.125f), y = nans(n), dy = rnd(n, 161, -1, 1);
    REQUIRE(x.d && y.d && dy.d);
    CHECK(cpu->ops->relu_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->relu_forward(gpu, T, x.d, y.d, n));
    expect_exact("relu_forward", &y);
    for (int b = 0; b < 2; b++) {
        tbuf dx = out_for(n, betas01[b], 162); /* relu's backward reads the output y */
        CHECK(cpu->ops->relu_backward(cpu, YP_ELEM_F32, y.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->relu_backward(gpu, T, y.d, dy.d, dx.d, betas01[b], n));
        expect_exact(b ? "relu_backward beta 1" : "relu_backward beta 0", &dx);
        tfree(&dx);
        dx = out_for(n, betas01[b], 163);
        CHECK(cpu->ops->leaky_relu_backward(cpu, YP_ELEM_F32, 0.1f, x.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->leaky_relu_backward(gpu, T, 0.1f, x.d, dy.d, dx.d, betas01[b], n));
        expect(b ? "leaky_relu_backward beta 1" : "leaky_relu_backward beta 0", &dx, rt, ACT_ATOL);
        tfree(&dx);
        dx = out_for(n, betas01[b], 164);
        CHECK(cpu->ops->hardswish_backward(cpu, YP_ELEM_F32, x.h, dy.h, dx.h, betas01[b], n) == 0);
        GPU_OK(gpu->ops->hardswish_backward(gpu, T, x.d, dy.d, dx.d, betas01[b], n));
        expect(b ? "hardswish_backward beta 1" : "hardswish_backward beta 0", &dx, rt, ACT_ATOL);
        tfree(&dx);
    }
    CHECK(cpu->ops->leaky_relu_forward(cpu, YP_ELEM_F32, 0.1f, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->leaky_relu_forward(gpu, T, 0.1f, x.d, y.d, n));
    expect("leaky_relu_forward", &y, rt, ACT_ATOL);
    CHECK(cpu->ops->hardswish_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->hardswish_forward(gpu, T, x.d, y.d, n));
    expect("hardswish_forward", &y, rt, ACT_ATOL);
    /* in place on the device: y = relu(y) from a copy of x */
    CHECK(gpu->mem_copy(gpu, y.d, x.d, (size_t)n * yp_elem_size(T), YP_COPY_DEVICE_TO_DEVICE) == 0);
    CHECK(cpu->ops->relu_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->relu_forward(gpu, T, y.d, y.d, n));
    expect_exact("relu_forward in place", &y);
    tfree(&x), tfree(&y), tfree(&dy);
}

/* SiLU on [-12, 12) (x and dy not on a grid), out of place and in place; dx is overwritten. */
static void test_silu(void) {
    const int64_t n = 100003;
    const double rt = act_rtol();
    tbuf x = rnd(n, 170, -12, 12), dy = rnd(n, 171, -2, 2), y = nans(n), dx = nans(n);
    REQUIRE(x.d && dy.d && y.d && dx.d);
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, x.h, y.h, n) == 0);
    GPU_OK(gpu->ops->silu_forward(gpu, T, x.d, y.d, n));
    expect("silu_forward", &y, rt, ACT_ATOL);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, x.h, dy.h, dx.h, n) == 0);
    GPU_OK(gpu->ops->silu_backward(gpu, T, x.d, dy.d, dx.d, n));
    expect("silu_backward", &dx, rt, ACT_ATOL);
    const size_t bytes = (size_t)n * yp_elem_size(T);
    CHECK(gpu->mem_copy(gpu, y.d, x.d, bytes, YP_COPY_DEVICE_TO_DEVICE) == 0);
    GPU_OK(gpu->ops->silu_forward(gpu, T, y.d, y.d, n));
    expect("silu_forward in place", &y, rt, ACT_ATOL);
    CHECK(gpu->mem_copy(gpu, dx.d, dy.d, bytes, YP_COPY_DEVICE_TO_DEVICE) == 0);
    GPU_OK(gpu->ops->silu_backward(gpu, T, x.d, dx.d, dx.d, n));
    expect("silu_backward in place", &dx, rt, ACT_ATOL);
    tfree(&x), tfree(&dy), tfree(&y), tfree(&dx);
}

/* ---- attention ---- */

/* One case's operands on the host (rounded to T), the CPU's P, and the header's first-order
 * bounds, per element: py, pp, pq, pk, pv for y, P, dq, dk, dv (before the margin and the
 * compared values' own rounding). */
typedef struct {
    yp_dims d;
    int heads;
    int64_t L, dh, pairs;
    double scale, u, eta;
    const float *q, *k, *v, *dy, *p;
    double *py, *pp, *pq, *pk, *pv;
} attn_bounds;

/* The absolute rounding floor of T: half f16's subnormal spacing; bf16's subnormals (< 1e-38)
 * lie far below any value here. */
static double eta_of(yp_elem t) { return t == YP_ELEM_F16 ? ldexp(1.0, -25) : 0.0; }

/* a_i . b_j over the head slice of one (image, head) pair, in double. */
static double head_dot(const attn_bounds *a, const float *x, const float *y, int64_t off, int64_t i, int64_t j) {
    double s = 0;
    for (int64_t e = 0; e < a->dh; e++) s += (double)x[off + i * a->d.c + e] * y[off + j * a->d.c + e];
    return s;
}

/* The bounds of one (image, head) pair; sig, pi, tau: L x L scratch, rho: L. */
static void attn_bounds_pair(attn_bounds *a, int64_t bh, double *sig, double *pi, double *tau, double *rho) {
    const int64_t L = a->L, c = a->d.c, off = bh / a->heads * L * c + bh % a->heads * a->dh;
    const double u = a->u, eta = a->eta;
    const float *P = a->p + bh * L * L;
    for (int64_t i = 0; i < L; i++) { /* sigma: S rounded; pi: |P' - P|, the softmax's and P's rounding */
        double wsig = 0;
        for (int64_t j = 0; j < L; j++) {
            sig[i * L + j] = u * fabs(a->scale * head_dot(a, a->q, a->k, off, i, j)) + eta;
            wsig += P[i * L + j] * sig[i * L + j];
        }
        for (int64_t j = 0; j < L; j++) pi[i * L + j] = P[i * L + j] * (sig[i * L + j] + wsig + u) + eta;
    }
    for (int64_t i = 0; i < L; i++) { /* rho: the row dot r = P.dP; tau: |dS' - dS| */
        double r = 0, dr = 0;
        for (int64_t j = 0; j < L; j++) {
            const double dp = head_dot(a, a->dy, a->v, off, i, j), pij = P[i * L + j];
            r += pij * dp;
            dr += pi[i * L + j] * fabs(dp) + pij * (u * fabs(dp) + eta);
        }
        rho[i] = dr;
        for (int64_t j = 0; j < L; j++) {
            const double dp = head_dot(a, a->dy, a->v, off, i, j), pij = P[i * L + j];
            tau[i * L + j] = pi[i * L + j] * fabs(dp - r) + pij * (u * fabs(dp) + eta + rho[i]) +
                             u * fabs(pij * (dp - r)) + eta;
        }
    }
    for (int64_t i = 0; i < L * L; i++) /* P's own rounding is the check's u|cuda| + eta */
        a->pp[bh * L * L + i] = pi[i] - (u * P[i] + eta);
    for (int64_t r = 0; r < L; r++) /* the products: each bound term by term, no cancellation */
        for (int64_t e = 0; e < a->dh; e++) {
            double y = 0, dv = 0, dq = 0, dk = 0;
            for (int64_t t = 0; t < L; t++) {
                y += pi[r * L + t] * fabs(a->v[off + t * c + e]);
                dv += pi[t * L + r] * fabs(a->dy[off + t * c + e]);
                dq += a->scale * tau[r * L + t] * fabs(a->k[off + t * c + e]);
                dk += a->scale * tau[t * L + r] * fabs(a->q[off + t * c + e]);
            }
            const int64_t o = off + r * c + e;
            a->py[o] = y, a->pv[o] = dv, a->pq[o] = dq, a->pk[o] = dk;
        }
}

/* Fills a's bounds (allocated here; attn_bounds_free): 0, or -1 out of memory. */
static int attn_bounds_of(attn_bounds *a) {
    const int64_t act = a->d.n * a->L * a->d.c, LL = a->L * a->L;
    a->dh = a->d.c / a->heads, a->pairs = a->d.n * a->heads;
    a->scale = 1.0 / sqrt((double)a->dh), a->u = yp_test_elem_eps(T), a->eta = eta_of(T);
    a->py = malloc((size_t)act * sizeof(double)), a->pq = malloc((size_t)act * sizeof(double));
    a->pk = malloc((size_t)act * sizeof(double)), a->pv = malloc((size_t)act * sizeof(double));
    a->pp = malloc((size_t)(a->pairs * LL) * sizeof(double));
    double *sig = malloc((size_t)LL * sizeof(double)), *pi = malloc((size_t)LL * sizeof(double)),
           *tau = malloc((size_t)LL * sizeof(double)), *rho = malloc((size_t)a->L * sizeof(double));
    int ok = a->py && a->pq && a->pk && a->pv && a->pp && sig && pi && tau && rho;
    for (int64_t bh = 0; ok && bh < a->pairs; bh++) attn_bounds_pair(a, bh, sig, pi, tau, rho);
    free(sig), free(pi), free(tau), free(rho);
    return ok ? 0 : -1;
}

static void attn_bounds_free(attn_bounds *a) {
    free(a->py), free(a->pq), free(a->pk), free(a->pv), free(a->pp);
}

#define ATTN_MARGIN 2.0

/* The device copy of b against the CPU's result in b->h, both rounded to T, element i within
 * ATTN_MARGIN x (bound[i] + u|cpu| + u|cuda| + 2 eta): the count outside, the first few printed,
 * and the largest share of its bound any element uses. */
static void expect_bounded(const char *what, const tbuf *b, const double *bound, double u, double eta) {
    const size_t es = yp_elem_size(T);
    void *raw = malloc((size_t)b->n * es);
    REQUIRE(raw != NULL);
    CHECK(gpu->mem_copy(gpu, raw, b->d, (size_t)b->n * es, YP_COPY_DEVICE_TO_HOST) == 0);
    int64_t bad = 0;
    double used = 0;
    for (int64_t i = 0; i < b->n; i++) {
        const double w = yp_elem_round(T, b->h[i]), g = yp_elem_get(T, raw, i);
        const double lim = ATTN_MARGIN * (bound[i] + u * (fabs(w) + fabs(g)) + 2 * eta), e = fabs(g - w);
        if (!(e <= lim) && bad++ < 5)
            fprintf(stderr, "  %s %s [%lld]: cuda %.9g cpu %.9g bound %.3g\n", what, yp_elem_name(T), (long long)i, g,
                    w, lim);
        used = e / lim > used ? e / lim : used;
    }
    printf("    %-34s %s: at most %.3f of the bound\n", what, yp_elem_name(T), used);
    CHECK_EQ_I64(bad, 0);
    free(raw);
}

static void attn_case(yp_dims dims, int heads, uint64_t seed) {
    const yp_attn_desc dc = {dims, heads, YP_ELEM_F32}, dg = {dims, heads, T};
    const int64_t act = dims.n * dims.h * dims.w * dims.c, L = dims.h * dims.w, P = dims.n * heads * L * L;
    const int64_t guard = 67; /* elements after each L x L buffer that nothing may write */
    tbuf q = rnd(act, seed, -1, 1), k = rnd(act, seed + 1, -1, 1), v = rnd(act, seed + 2, -1, 1),
         dy = rnd(act, seed + 3, -1, 1), y = nans(act), p = nans(P + guard);
    float *hws = malloc((size_t)(2 * P) * sizeof(float));
    REQUIRE(q.d && k.d && v.d && dy.d && y.d && p.d && hws);
    CHECK(cpu->ops->attention_forward(cpu, &dc, q.h, k.h, v.h, y.h, p.h) == 0);
    GPU_OK(gpu->ops->attention_forward(gpu, &dg, q.d, k.d, v.d, y.d, p.d));
    attn_bounds bd = {.d = dims, .heads = heads, .L = L, .q = q.h, .k = k.h, .v = v.h, .dy = dy.h, .p = p.h};
    REQUIRE(attn_bounds_of(&bd) == 0);
    expect_bounded("attention y", &y, bd.py, bd.u, bd.eta);
    p.n = P; /* P itself, then its guard */
    expect_bounded("attention probs", &p, bd.pp, bd.u, bd.eta);
    p.n = P + guard;
    expect_guard("attention probs guard", &p, P);
    for (int kept = 0; kept < 2; kept++)
        for (int add = 0; add < 2; add++) {
            const float betas[3] = {(float)add, (float)add, (float)add}; /* a host array for both backends */
            const int64_t wsn = kept ? P : 2 * P;                         /* the schedule's scratch */
            tbuf g[3] = {out_for(act, betas[0], seed + 4), out_for(act, betas[1], seed + 5),
                         out_for(act, betas[2], seed + 6)},
                 ws = nans(wsn + guard);
            REQUIRE(g[0].d && g[1].d && g[2].d && ws.d);
            CHECK(cpu->ops->attention_backward(cpu, &dc, q.h, k.h, v.h, kept ? p.h : NULL, dy.h, g[0].h, g[1].h,
                                               g[2].h, betas, hws) == 0);
            GPU_OK(gpu->ops->attention_backward(gpu, &dg, q.d, k.d, v.d, kept ? p.d : NULL, dy.d, g[0].d, g[1].d,
                                                g[2].d, betas, ws.d));
            const char *const names[3] = {"dq", "dk", "dv"};
            const double *const bounds[3] = {bd.pq, bd.pk, bd.pv};
            for (int j = 0; j < 3; j++) {
                char what[64];
                snprintf(what, sizeof what, "attention %s (%s, beta %d)", names[j], kept ? "P kept" : "P again", add);
                expect_bounded(what, &g[j], bounds[j], bd.u, bd.eta);
            }
            expect_guard("attention ws guard", &ws, wsn);
            for (int j = 0; j < 3; j++) tfree(&g[j]);
            tfree(&ws);
        }
    CHECK(gpu->sync(gpu) == 0);
    free(hws);
    attn_bounds_free(&bd);
    tbuf *all[] = {&q, &k, &v, &dy, &y, &p};
    for (size_t j = 0; j < sizeof all / sizeof *all; j++) tfree(all[j]);
}

/* A small odd map (L = 35, dh = 4) and yolov5s-transformer's layer-8 map (20x20 at 640, dh = 8). */
static void test_attention(void) {
    attn_case((yp_dims){2, 5, 7, 16}, 4, 11);
    attn_case((yp_dims){1, 20, 20, 32}, 4, 29);
}

/* ---- refusals ---- */

static void expect_fail(int rc, const char *op) {
    CHECK(rc == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), op);
    CHECK_STR_HAS(gpu->last_error(gpu), "not f32, f16 or bf16");
}

/* A value that is no element type, refused by the entries test_cuda_ops does not try it on. */
static void test_refusals(void) {
    const yp_elem bad = YP_ELEM_COUNT;
    float *p = gpu->mem_alloc(gpu, 1024 * sizeof(float));
    REQUIRE(p != NULL);
    expect_fail(gpu->ops->silu_forward(gpu, bad, p, p, 4), "silu_forward");
    expect_fail(gpu->ops->silu_backward(gpu, bad, p, p, p, 4), "silu_backward");
    expect_fail(gpu->ops->leaky_relu_backward(gpu, bad, 0.1f, p, p, p, 0.0f, 4), "leaky_relu_backward");
    expect_fail(gpu->ops->hardswish_forward(gpu, bad, p, p, 4), "hardswish_forward");
    const int64_t cs[1] = {2};
    const float *xs[1] = {p};
    expect_fail(gpu->ops->concat_forward(gpu, bad, 1, xs, cs, (yp_dims){1, 2, 2, 2}, p), "concat_forward");
    const yp_pad_desc pd = {{1, 2, 2, 2}, 1, 1, 1, 1, bad};
    expect_fail(gpu->ops->zero_pad_forward(gpu, &pd, p, p + 64), "zero_pad_forward");
    const yp_attn_desc ad = {{1, 2, 2, 4}, 2, bad};
    expect_fail(gpu->ops->attention_forward(gpu, &ad, p, p, p, p, p), "attention_forward");
    const float betas[3] = {0, 0, 0};
    expect_fail(gpu->ops->attention_backward(gpu, &ad, p, p, p, p, p, p, p, p, betas, p), "attention_backward");
    CHECK(gpu->sync(gpu) == 0); /* nothing above reached the device */
    gpu->mem_free(gpu, p);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 0);
    if (rc) return rc;
    const yp_elem types[2] = {YP_ELEM_F16, YP_ELEM_BF16};
    for (int t = 0; t < 2; t++) {
        T = types[t];
        printf("%s:\n", yp_elem_name(T));
        YP_RUN(test_add_axpy);
        YP_RUN(test_concat);
        YP_RUN(test_upsample);
        YP_RUN(test_maxpool);
        YP_RUN(test_space_to_depth);
        YP_RUN(test_zero_pad);
        YP_RUN(test_activations);
        YP_RUN(test_silu);
        YP_RUN(test_attention);
    }
    YP_RUN(test_refusals);
    CHECK(gpu->sync(gpu) == 0);
    yp_backend_free(cpu);
    yp_backend_free(gpu);
    return yp_test_summary();
}
