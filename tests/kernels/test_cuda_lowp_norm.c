/* test_cuda_lowp_norm.c - the CUDA backend's BatchNorm, loss_level and detect_decode with fp16
 * and bf16 activations, against the CPU backend's fp32 result on the same inputs. BN: training
 * statistics and output, statistics only, eval, apply, the fused BN+SiLU forward and backward
 * with and without its sums, backward from its own and from the fused sums with beta 0 and 1, the
 * SiLU backward in place; the loss: one level with positives that share cells
 * (tests/support/yp_test_detect.h), with and without the gradient, one class, no positives, and gains
 * carrying an AMP loss scale (large gradients); the decode of three levels.
 * The inputs are drawn rounded to the type (yp_test_tbuf, tests/support/yp_test_cuda.h: the host holds
 * exactly the values the device holds), the CPU runs fp32 on them, and an output of the type is
 * compared after rounding the CPU's value to it. BN's per-channel operands, the objectness
 * targets and the decoded boxes are fp32 on both sides, the sums and terms double.
 * Without a usable GPU (or a build without CUDA) it prints "SKIP: <reason>" and exits 77.
 *
 * Tolerances: |cuda - cpu| <= rtol*|cpu| + atol*max|cpu| over the output, with
 * u = yp_test_elem_eps(t) (2^-11 for f16, 2^-8 for bf16) and u32 = yp_test_elem_eps(F32) = 2^-24.
 *   Outputs of the type (BN's y and dx, the loss's dpred): rtol 2u, atol u. Both sides form the
 *     same fp32 value up to a few fp32 ulps (fma contraction, expf against the CPU's polynomial
 *     exp, the order of the double sums) and round it to the type once, so they may land on
 *     neighbouring values of the type: one ulp, at most 2u of the value. atol covers a value that
 *     cancels to ~0, where those fp32 differences (~1e-6 of the output's scale, far below u) are
 *     no longer small next to the value.
 *   dpred atol 4u: where m positives share a slot the GPU rounds the slot's running sum after
 *     each one (loss.cu's grad_add) where the CPU's fp32 sum is rounded once, m - 1 more roundings
 *     of partial sums of about the output's scale; the slots here hold up to 3 positives (every
 *     third repeats the one before, and random cells may meet).
 *   fp32 results computed from the rounded inputs: both sides read the same values and all the
 *     arithmetic after the load is fp32 or double, so they agree as closely as the fp32 tests of
 *     the same ops ask (test_cuda_ops, test_cuda_conv; their bounds in brackets), here in units
 *     of u32: BN's statistics and running stats rtol 2^11 u32 = 1.2e-4 [1e-4], atol 2^5 u32 =
 *     1.9e-6 [1e-6]; dgamma and dbeta rtol and atol 2^11 u32 [1e-4]; the loss's terms rtol 2^8
 *     u32 = 1.5e-5 [1e-5]; the objectness targets and the decoded boxes rtol 2^8 u32, atol 2^5
 *     u32 (a wrong element or layout is off by O(1) of the scale).
 *   The fused backward's sums (double, per channel), against the CPU's: the GPU sums dx as it
 *     stored it (rounded to the type: what bn_backward's own pass would read), the CPU its fp32
 *     dx, so they differ by at most u x S, S the channel's sum of |term|, plus the fp32 differences
 *     of dx itself (2^5 u32 S) and BN's rtol 2^11 u32; and against the sums of the stored dx
 *     recomputed here in double: 2^-30 S (the products are exact in double, only the order of the
 *     additions differs). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"
#include "yp_test_cuda.h"
#include "yp_test_detect.h"

static yp_backend *gpu, *cpu;

#define U32 yp_test_elem_eps(YP_ELEM_F32)
#define ELEM_RTOL(t) (2 * yp_test_elem_eps(t))
#define ELEM_ATOL(t) yp_test_elem_eps(t)
#define BN_RTOL (2048 * U32)
#define BN_ATOL (2048 * U32)
#define STAT_ATOL (32 * U32)
#define F32_RTOL (256 * U32)
#define F32_ATOL (32 * U32)

static const yp_elem types[] = {YP_ELEM_F16, YP_ELEM_BF16};

/* Runs a GPU call and prints the backend's reason when it fails. */
#define GPU_OK(call)                                                               \
    do {                                                                           \
        int rc_ = (call);                                                          \
        if (rc_ != 0) fprintf(stderr, "  %s: %s\n", #call, gpu->last_error(gpu)); \
        CHECK(rc_ == 0);                                                           \
    } while (0)

/* The count of elements of b's device copy outside the tolerance around its host copy (the CPU's
 * result, rounded to b's type by the check). */
#define CHECK_TBUF(what, b, rtol, atol) CHECK_EQ_I64(yp_test_tbuf_check(what, b, NULL, rtol, atol), 0)

/* An output for `beta`: NaN for 0 (must be overwritten unread), random values otherwise. */
static yp_test_tbuf out_buf(yp_elem t, int64_t n, float beta, uint64_t seed) {
    return beta == 0.0f ? yp_test_tbuf_nan(gpu, t, n) : yp_test_tbuf_rand(gpu, t, n, seed, -1.0f, 1.0f);
}

/* The device copy of b as fp32 values (malloc'd; NULL when the download fails). */
static float *tbuf_download(const yp_test_tbuf *b) {
    size_t es = yp_elem_size(b->t);
    void *raw = malloc((size_t)(b->n > 0 ? b->n : 1) * es);
    float *v = malloc((size_t)(b->n > 0 ? b->n : 1) * sizeof *v);
    if (!raw || !v || gpu->mem_copy(gpu, raw, b->d, (size_t)b->n * es, YP_COPY_DEVICE_TO_HOST)) {
        free(raw), free(v);
        return NULL;
    }
    for (int64_t i = 0; i < b->n; i++) v[i] = yp_elem_get(b->t, raw, i);
    free(raw);
    return v;
}

/* ---- BatchNorm ---- */

/* bn_backward's first pass over g as the GPU forms it: sums = {sum(g), sum(g*(x - mean))} per
 * channel in double, x - mean in fp32; and (scale not NULL) the sums of |term| behind each. */
static void host_sums(const float *x, const float *g, const float *mean, int64_t rows, int64_t c, double *sums,
                      double *scale) {
    for (int64_t j = 0; j < 2 * c; j++) {
        sums[j] = 0;
        if (scale) scale[j] = 0;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < c; j++) {
            const int64_t i = r * c + j;
            const float xm = x[i] - mean[j];
            const double t1 = g[i], t2 = (double)g[i] * (double)xm;
            sums[j] += t1, sums[c + j] += t2;
            if (scale) scale[j] += fabs(t1), scale[c + j] += fabs(t2);
        }
}

/* The count of the n sums outside rtol*|want| + k*scale[j], the first few printed. */
static int64_t sums_off(const char *what, const double *got, const double *want, const double *scale, int64_t n,
                        double rtol, double k) {
    int64_t bad = 0;
    for (int64_t j = 0; j < n; j++)
        if (!(fabs(got[j] - want[j]) <= rtol * fabs(want[j]) + k * scale[j]) && bad++ < 5)
            fprintf(stderr, "  %s [%lld]: cuda %.17g want %.17g (scale %.3g)\n", what, (long long)j, got[j], want[j],
                    scale[j]);
    return bad;
}

/* The fused SiLU backward with its sums: dx as for the other outputs, the sums against the CPU's
 * and against the sums of the dx the GPU stored. Leaves the CPU's dx in g.h. */
static void bn_silu_sums_case(const yp_bn_desc *d32, const yp_bn_desc *dt, const yp_test_tbuf *x,
                              const yp_test_tbuf *gamma, const yp_test_tbuf *beta, const yp_test_tbuf *stats,
                              const yp_test_tbuf *dy, yp_test_tbuf *g) {
    const yp_elem t = dt->dtype;
    const int64_t c = d32->dims.c, rows = d32->dims.n * d32->dims.h * d32->dims.w;
    double *want = malloc((size_t)(2 * c) * sizeof(double)), *got = malloc((size_t)(2 * c) * sizeof(double));
    double *mine = malloc((size_t)(2 * c) * sizeof(double)), *scale = malloc((size_t)(2 * c) * sizeof(double));
    double *dev = gpu->mem_alloc(gpu, (size_t)(2 * c) * sizeof(double));
    REQUIRE(want && got && mine && scale && dev);
    CHECK(cpu->ops->bn_silu_backward(cpu, d32, x->h, gamma->h, beta->h, stats->h, dy->h, g->h, want) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, dt, x->d, gamma->d, beta->d, stats->d, dy->d, g->d, dev));
    CHECK_TBUF("bn_silu_backward (sums) dx", g, ELEM_RTOL(t), ELEM_ATOL(t));
    CHECK(gpu->mem_copy(gpu, got, dev, (size_t)(2 * c) * sizeof(double), YP_COPY_DEVICE_TO_HOST) == 0);
    float *stored = tbuf_download(g);
    REQUIRE(stored);
    host_sums(x->h, stored, stats->h, rows, c, mine, scale);
    CHECK_EQ_I64(sums_off("bn_silu_backward sums vs cpu", got, want, scale, 2 * c, BN_RTOL,
                          yp_test_elem_eps(t) + STAT_ATOL),
                 0);
    CHECK_EQ_I64(sums_off("bn_silu_backward sums vs its dx", got, mine, scale, 2 * c, 0.0, 1.0 / (1 << 30)), 0);
    free(stored), free(want), free(got), free(mine), free(scale);
    gpu->mem_free(gpu, dev);
}

/* bn_backward on dy = g (the type's values on both sides): (a) its own sums, beta 0 for dx and
 * the parameters; (b) the fused sums (those of g, the same on both sides), beta 1, dgamma not
 * wanted; (c) its own sums, beta 1. */
static void bn_backward_cases(const yp_bn_desc *d32, const yp_bn_desc *dt, const yp_test_tbuf *x,
                              const yp_test_tbuf *gamma, const yp_test_tbuf *stats, const yp_test_tbuf *g,
                              uint64_t seed) {
    const yp_elem t = dt->dtype;
    const int64_t c = d32->dims.c, rows = d32->dims.n * d32->dims.h * d32->dims.w, n = rows * c;
    double *sums_h = malloc((size_t)(2 * c) * sizeof(double));
    double *sums_d = gpu->mem_alloc(gpu, (size_t)(2 * c) * sizeof(double));
    REQUIRE(sums_h && sums_d);
    host_sums(x->h, g->h, stats->h, rows, c, sums_h, NULL);
    REQUIRE(gpu->mem_copy(gpu, sums_d, sums_h, (size_t)(2 * c) * sizeof(double), YP_COPY_HOST_TO_DEVICE) == 0);
    for (int k = 0; k < 3; k++) {
        const yp_betas bt = {k == 0 ? 0.0f : 1.0f, k == 0 ? 0.0f : 1.0f};
        const double *sh = k == 1 ? sums_h : NULL, *sd = k == 1 ? sums_d : NULL;
        yp_test_tbuf dx = out_buf(t, n, bt.dx, seed + 10 + (uint64_t)k),
                     dg = out_buf(YP_ELEM_F32, c, bt.w, seed + 20 + (uint64_t)k),
                     db = out_buf(YP_ELEM_F32, c, bt.w, seed + 30 + (uint64_t)k);
        REQUIRE(dx.d && dg.d && db.d);
        float *dgh = k == 1 ? NULL : dg.h, *dgd = k == 1 ? NULL : dg.d;
        CHECK(cpu->ops->bn_backward(cpu, d32, x->h, stats->h, gamma->h, g->h, sh, dx.h, dgh, db.h, bt) == 0);
        GPU_OK(gpu->ops->bn_backward(gpu, dt, x->d, stats->d, gamma->d, g->d, sd, dx.d, dgd, db.d, bt));
        char what[64];
        snprintf(what, sizeof what, "bn_backward case %d dx", k);
        CHECK_TBUF(what, &dx, ELEM_RTOL(t), ELEM_ATOL(t));
        snprintf(what, sizeof what, "bn_backward case %d dgamma", k);
        CHECK_TBUF(what, &dg, BN_RTOL, BN_ATOL); /* case 1: the untouched randoms on both sides */
        snprintf(what, sizeof what, "bn_backward case %d dbeta", k);
        CHECK_TBUF(what, &db, BN_RTOL, BN_ATOL);
        yp_test_tbuf_free(&dx), yp_test_tbuf_free(&dg), yp_test_tbuf_free(&db);
    }
    free(sums_h);
    gpu->mem_free(gpu, sums_d);
}

/* One BN shape through every entry in type t: x with per-channel offsets (|mean| up to 3 next to
 * spreads 0.5..2), YOLOv5's eps 1e-3 and momentum 0.03. */
static void bn_case(yp_elem t, yp_dims dims, uint64_t seed) {
    const int64_t c = dims.c, rows = dims.n * dims.h * dims.w, n = rows * c;
    const yp_bn_desc d32 = {dims, 1e-3f, 0.03f, YP_ELEM_F32}, dt = {dims, 1e-3f, 0.03f, t};
    const yp_elem f32 = YP_ELEM_F32;
    fprintf(stderr, "bn %s: %lld rows, %lld channels\n", yp_elem_name(t), (long long)rows, (long long)c);
    yp_test_tbuf x = yp_test_tbuf_rand(gpu, t, n, seed, -1, 1), dy = yp_test_tbuf_rand(gpu, t, n, seed + 5, -1, 1),
                 gamma = yp_test_tbuf_rand(gpu, f32, c, seed + 1, 0.5f, 1.5f),
                 beta = yp_test_tbuf_rand(gpu, f32, c, seed + 2, -0.5f, 0.5f),
                 rm = yp_test_tbuf_rand(gpu, f32, c, seed + 3, -0.5f, 0.5f),
                 rv = yp_test_tbuf_rand(gpu, f32, c, seed + 4, 0.5f, 2.0f);
    yp_test_tbuf stats = yp_test_tbuf_nan(gpu, f32, 2 * c), stats2 = yp_test_tbuf_nan(gpu, f32, 2 * c),
                 y = yp_test_tbuf_nan(gpu, t, n), y2 = yp_test_tbuf_nan(gpu, t, n), g = yp_test_tbuf_nan(gpu, t, n);
    REQUIRE(x.d && gamma.d && beta.d && rm.d && rv.d && stats.d && y.d && dy.d && stats2.d && y2.d && g.d);
    {
        uint64_t st = seed + 6;
        for (int64_t j = 0; j < c; j++) {
            float off = yp_test_uniform(&st, -3, 3), scale = yp_test_uniform(&st, 0.5f, 2.0f);
            for (int64_t r = 0; r < rows; r++) x.h[r * c + j] = yp_elem_round(t, off + scale * x.h[r * c + j]);
        }
        REQUIRE(yp_test_tbuf_upload(&x) == 0);
    }

    /* training forward: statistics, running update, output */
    CHECK(cpu->ops->bn_forward_train(cpu, &d32, x.h, gamma.h, beta.h, y.h, stats.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_train(gpu, &dt, x.d, gamma.d, beta.d, y.d, stats.d, rm.d, rv.d));
    CHECK_TBUF("bn_forward_train stats", &stats, BN_RTOL, STAT_ATOL);
    CHECK_TBUF("bn_forward_train running_mean", &rm, BN_RTOL, STAT_ATOL);
    CHECK_TBUF("bn_forward_train running_var", &rv, BN_RTOL, STAT_ATOL);
    CHECK_TBUF("bn_forward_train y", &y, ELEM_RTOL(t), ELEM_ATOL(t));
    /* the rest runs from the CPU's statistics on both, so that each op is compared alone */
    CHECK(yp_test_tbuf_upload(&stats) == 0);

    /* statistics only (y NULL): the same stats again (running stats updated a second time) */
    CHECK(cpu->ops->bn_forward_train(cpu, &d32, x.h, gamma.h, beta.h, NULL, stats2.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_train(gpu, &dt, x.d, gamma.d, beta.d, NULL, stats2.d, rm.d, rv.d));
    CHECK_TBUF("bn_forward_train (no y) stats", &stats2, BN_RTOL, STAT_ATOL);
    CHECK_TBUF("bn_forward_train (no y) running_var", &rv, BN_RTOL, STAT_ATOL);
    CHECK(yp_test_tbuf_upload(&rm) == 0 && yp_test_tbuf_upload(&rv) == 0);

    /* eval, apply, fused apply */
    CHECK(cpu->ops->bn_forward_eval(cpu, &d32, x.h, gamma.h, beta.h, y2.h, rm.h, rv.h) == 0);
    GPU_OK(gpu->ops->bn_forward_eval(gpu, &dt, x.d, gamma.d, beta.d, y2.d, rm.d, rv.d));
    CHECK_TBUF("bn_forward_eval", &y2, ELEM_RTOL(t), ELEM_ATOL(t));
    CHECK(cpu->ops->bn_apply(cpu, &d32, x.h, gamma.h, beta.h, stats.h, y2.h) == 0);
    GPU_OK(gpu->ops->bn_apply(gpu, &dt, x.d, gamma.d, beta.d, stats.d, y2.d));
    CHECK_TBUF("bn_apply", &y2, ELEM_RTOL(t), ELEM_ATOL(t));
    CHECK(cpu->ops->bn_silu_apply(cpu, &d32, x.h, gamma.h, beta.h, stats.h, y2.h) == 0);
    GPU_OK(gpu->ops->bn_silu_apply(gpu, &dt, x.d, gamma.d, beta.d, stats.d, y2.d));
    CHECK_TBUF("bn_silu_apply", &y2, ELEM_RTOL(t), ELEM_ATOL(t));

    /* fused SiLU backward, without and with the sums */
    CHECK(cpu->ops->bn_silu_backward(cpu, &d32, x.h, gamma.h, beta.h, stats.h, dy.h, g.h, NULL) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, &dt, x.d, gamma.d, beta.d, stats.d, dy.d, g.d, NULL));
    CHECK_TBUF("bn_silu_backward", &g, ELEM_RTOL(t), ELEM_ATOL(t));
    bn_silu_sums_case(&d32, &dt, &x, &gamma, &beta, &stats, &dy, &g);

    /* both sides continue from the CPU's dx as the type holds it */
    for (int64_t i = 0; i < n; i++) g.h[i] = yp_elem_round(t, g.h[i]);
    CHECK(yp_test_tbuf_upload(&g) == 0);
    bn_backward_cases(&d32, &dt, &x, &gamma, &stats, &g, seed);

    /* in place: bn_silu_backward with dx == dy */
    CHECK(cpu->ops->bn_silu_backward(cpu, &d32, x.h, gamma.h, beta.h, stats.h, dy.h, dy.h, NULL) == 0);
    GPU_OK(gpu->ops->bn_silu_backward(gpu, &dt, x.d, gamma.d, beta.d, stats.d, dy.d, dy.d, NULL));
    CHECK_TBUF("bn_silu_backward in place", &dy, ELEM_RTOL(t), ELEM_ATOL(t));

    yp_test_tbuf_free(&x), yp_test_tbuf_free(&gamma), yp_test_tbuf_free(&beta), yp_test_tbuf_free(&rm);
    yp_test_tbuf_free(&rv), yp_test_tbuf_free(&stats), yp_test_tbuf_free(&y), yp_test_tbuf_free(&dy);
    yp_test_tbuf_free(&stats2), yp_test_tbuf_free(&y2), yp_test_tbuf_free(&g);
}

static void test_bn(void) {
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        bn_case(types[k], (yp_dims){2, 19, 23, 67}, 200); /* 874 rows, 67 channels (no multiple of 8) */
        bn_case(types[k], (yp_dims){8, 40, 40, 16}, 400); /* 12800 rows: bn_backward's rows split too */
    }
}

/* ---- loss_level ---- */

/* One level on both backends in type t, the gains times `scale` (an AMP loss scale, applied as
 * yp_loss_compute does; 1: none). */
static void loss_case(yp_elem t, int nc, int level, int n_pos, int train, float scale) {
    yp_loss_desc d = yp_test_loss_desc(nc);
    d.cfg.box *= scale, d.cfg.obj *= scale, d.cfg.cls *= scale;
    yp_loss_desc dt = d;
    dt.dtype = t;
    const int64_t slots = d.batch * d.grid_h[level] * d.grid_w[level] * d.cfg.na, np = slots * (nc + 5);
    fprintf(stderr, "loss %s: nc %d, level %d, %d positives%s, scale %g\n", yp_elem_name(t), nc, level, n_pos,
            train ? "" : ", no gradient", (double)scale);
    yp_test_tbuf pred = yp_test_tbuf_rand(gpu, t, np, 300 + (uint64_t)nc, -3, 3),
                 om = yp_test_tbuf_nan(gpu, YP_ELEM_F32, slots), dp = yp_test_tbuf_nan(gpu, t, np);
    yp_loss_target *pos = yp_test_positives(&d, level, n_pos, 400 + (uint64_t)n_pos);
    yp_loss_target *g_pos = gpu->mem_alloc(gpu, (size_t)(n_pos > 0 ? n_pos : 1) * sizeof *g_pos);
    REQUIRE(pred.d && om.d && dp.d && pos && g_pos);
    REQUIRE(n_pos == 0 || gpu->mem_copy(gpu, g_pos, pos, (size_t)n_pos * sizeof *pos, YP_COPY_HOST_TO_DEVICE) == 0);
    yp_loss_terms tc, tg;
    CHECK(cpu->ops->loss_level(cpu, &d, level, pred.h, pos, n_pos, om.h, train ? dp.h : NULL, &tc) == 0);
    GPU_OK(gpu->ops->loss_level(gpu, &dt, level, pred.d, g_pos, n_pos, om.d, train ? dp.d : NULL, &tg));
    fprintf(stderr, "  terms cpu box %.9g obj %.9g cls %.9g, cuda box %.9g obj %.9g cls %.9g\n", tc.box, tc.obj,
            tc.cls, tg.box, tg.obj, tg.cls);
    CHECK(fabs(tg.box - tc.box) <= F32_RTOL * fabs(tc.box) + 1e-12);
    CHECK(fabs(tg.obj - tc.obj) <= F32_RTOL * fabs(tc.obj) + 1e-12);
    CHECK(fabs(tg.cls - tc.cls) <= F32_RTOL * fabs(tc.cls) + 1e-12);
    if (n_pos == 0) CHECK(tg.box == 0.0 && tg.cls == 0.0);
    if (nc == 1) CHECK(tg.cls == 0.0);
    CHECK_TBUF("loss objectness targets", &om, F32_RTOL, F32_ATOL);
    if (train) CHECK_TBUF("loss gradient", &dp, ELEM_RTOL(t), 4 * yp_test_elem_eps(t));
    CHECK(gpu->sync(gpu) == 0);
    yp_test_tbuf_free(&pred), yp_test_tbuf_free(&om), yp_test_tbuf_free(&dp);
    gpu->mem_free(gpu, g_pos);
    free(pos);
}

static void test_loss_level(void) {
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const yp_elem t = types[k];
        loss_case(t, 3, 1, 12, 1, 1.0f);
        loss_case(t, 3, 0, 40, 1, 65536.0f); /* GradScaler's initial scale: gradients in the hundreds */
        loss_case(t, 3, 2, 7, 0, 1.0f);
        loss_case(t, 1, 1, 9, 1, 1.0f); /* one class: no class term */
        loss_case(t, 3, 1, 0, 1, 1.0f); /* no positives: objectness only */
    }
}

/* ---- detect_decode ---- */

/* Three levels of odd grids, 4 classes, 2 images, raw outputs of type t; boxes fp32. */
static void decode_case(yp_elem t) {
    yp_decode_desc d;
    memset(&d, 0, sizeof d);
    d.n = 2, d.nl = 3, d.na = 3, d.nc = 4, d.dtype = YP_ELEM_F32;
    const int64_t hs[3] = {5, 3, 2}, ws[3] = {7, 4, 1};
    const float strides[3] = {8, 16, 32};
    const int no = d.nc + 5;
    yp_test_tbuf x[3];
    const float *xh[3], *xd[3];
    int64_t rows = 0;
    for (int l = 0; l < 3; l++) {
        d.h[l] = hs[l], d.w[l] = ws[l], d.stride[l] = strides[l];
        memcpy(d.anchors[l], yp_test_anchors[l], sizeof yp_test_anchors[l]);
        x[l] = yp_test_tbuf_rand(gpu, t, d.n * hs[l] * ws[l] * d.na * no, 200 + (uint64_t)l, -4, 4);
        xh[l] = x[l].h, xd[l] = x[l].d;
        rows += d.na * hs[l] * ws[l];
    }
    yp_test_tbuf y = yp_test_tbuf_nan(gpu, YP_ELEM_F32, d.n * rows * no);
    REQUIRE(x[0].d && x[1].d && x[2].d && y.d);
    yp_decode_desc dt = d;
    dt.dtype = t;
    CHECK(cpu->ops->detect_decode(cpu, &d, xh, y.h) == 0);
    GPU_OK(gpu->ops->detect_decode(gpu, &dt, xd, (float *)y.d));
    char what[64];
    snprintf(what, sizeof what, "detect_decode from %s", yp_elem_name(t));
    CHECK_TBUF(what, &y, F32_RTOL, F32_ATOL);
    CHECK(gpu->sync(gpu) == 0);
    for (int l = 0; l < 3; l++) yp_test_tbuf_free(&x[l]);
    yp_test_tbuf_free(&y);
}

static void test_detect_decode(void) {
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) decode_case(types[k]);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 1);
    if (rc) return rc;
    YP_RUN(test_bn);
    YP_RUN(test_loss_level);
    YP_RUN(test_detect_decode);
    CHECK(gpu->sync(gpu) == 0);
    yp_backend_free(cpu);
    yp_backend_free(gpu);
    return yp_test_summary();
}
