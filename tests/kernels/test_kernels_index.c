/* test_kernels_index.c - the host+device element functions the CUDA kernels are made of
 * (kernels/yp_index_math.h, with zero_pad's and space_to_depth/depth_to_space's;
 * kernels/yp_bn_math.h), run on the host the way the kernels run them (one call per output
 * element, in any order; BN's per-channel sums then the shared formulas) and compared with the
 * CPU backend's ops. So the CUDA backend's index arithmetic and BN formulas are checked on
 * machines without a GPU. The data-movement gathers add in the CPU's
 * order, so with beta 0 and 1 they must give its bits exactly; BN sums in another order:
 * rtol 1e-5 and atol 1e-5 x max|cpu| (test_cuda_ops checks the kernels themselves on a GPU). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_bn_math.h"
#include "yp_index_math.h"
#include "yp_test.h"
#include "yp_test_move_cases.h"

static yp_backend *cpu;

/* Deterministic uniform floats in [lo, hi) (xorshift64*), rounded down to multiples of quant > 0. */
static float *rand_buf(int64_t n, uint64_t seed, float lo, float hi, float quant) {
    float *b = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; b && i < n; i++) {
        st ^= st >> 12;
        st ^= st << 25;
        st ^= st >> 27;
        float v = lo + (hi - lo) * (float)((double)((st * 2685821657736338717ull) >> 40) / 16777216.0);
        b[i] = quant > 0 ? floorf(v / quant) * quant : v;
    }
    return b;
}

static float *copy_buf(const float *a, int64_t n) {
    float *b = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (b)
        memcpy(b, a, (size_t)n * sizeof(float));
    return b;
}

/* Exact equality, the first difference printed. */
static int same(const char *what, const float *got, const float *want, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            fprintf(stderr, "  %s [%lld]: element %.9g cpu %.9g\n", what, (long long)i, got[i], want[i]);
            return 0;
        }
    return 1;
}

/* |got - want| <= rtol*|want| + atol_rel*max|want| everywhere. */
static int close_to(const char *what, const float *got, const float *want, int64_t n, double rtol, double atol_rel) {
    double amax = 0;
    for (int64_t i = 0; i < n; i++)
        amax = fabs(want[i]) > amax ? fabs(want[i]) : amax;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= rtol * fabs(want[i]) + atol_rel * amax)) {
            fprintf(stderr, "  %s [%lld]: element %.9g cpu %.9g\n", what, (long long)i, got[i], want[i]);
            return 0;
        }
    }
    return 1;
}

static const float betas[] = {0.0f, 1.0f};

static void test_concat(void) {
    const int64_t cs[3] = {17, 64, 3};
    const yp_dims out = {2, 13, 11, 84};
    const int64_t rows = out.n * out.h * out.w, n = rows * out.c;
    float *x[3], *y = rand_buf(n, 1, 0, 1, 0), *ye = rand_buf(n, 2, 0, 1, 0);
    for (int i = 0; i < 3; i++)
        x[i] = rand_buf(rows * cs[i], 10 + (uint64_t)i, -2, 2, 0);
    REQUIRE(y && ye && x[0] && x[1] && x[2]);
    CHECK(cpu->ops->concat_forward(cpu, YP_ELEM_F32, 3, (const float *const[]){x[0], x[1], x[2]}, cs, out, y) == 0);
    for (int i = 0, off = 0; i < 3; off += (int)cs[i], i++)
        for (int64_t e = 0; e < rows * cs[i]; e++)
            ye[yp_concat_index(e, cs[i], out.c, off)] = x[i][e];
    CHECK(same("concat forward", ye, y, n));
    const float bt[3] = {0.0f, 1.0f, 1.0f};
    float *dx[3], *dxe[3];
    for (int i = 0; i < 3; i++) {
        dx[i] = rand_buf(rows * cs[i], 20 + (uint64_t)i, -1, 1, 0);
        dxe[i] = copy_buf(dx[i], rows * cs[i]);
        REQUIRE(dx[i] && dxe[i]);
    }
    CHECK(cpu->ops->concat_backward(cpu, YP_ELEM_F32, 3, dx, cs, out, y, bt) == 0);
    for (int i = 0, off = 0; i < 3; off += (int)cs[i], i++) {
        for (int64_t e = 0; e < rows * cs[i]; e++)
            dxe[i][e] = yp_acc(bt[i], &dxe[i][e], y[yp_concat_index(e, cs[i], out.c, off)]);
        CHECK(same("concat backward", dxe[i], dx[i], rows * cs[i]));
        free(dx[i]), free(dxe[i]), free(x[i]);
    }
    free(y), free(ye);
}

static void test_upsample(void) {
    const yp_test_upsample_case cases[] = {YP_TEST_UPSAMPLE_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_dims in = cases[k].in;
        const int64_t s = cases[k].s, n = in.n * in.h * in.w * in.c, no = n * s * s;
        float *x = rand_buf(n, 30 + k, -2, 2, 0), *y = rand_buf(no, 31, 0, 1, 0), *ye = rand_buf(no, 32, 0, 1, 0);
        REQUIRE(x && y && ye);
        CHECK(cpu->ops->upsample_forward(cpu, YP_ELEM_F32, in, (int)s, x, y) == 0);
        for (int64_t o = 0; o < no; o++)
            ye[o] = x[yp_upsample_source(in, s, o)];
        CHECK(same("upsample forward", ye, y, no));
        for (int b = 0; b < 2; b++) {
            float *dx = rand_buf(n, 40 + k, -1, 1, 0), *dxe = copy_buf(dx, n), *de = malloc((size_t)n * sizeof(float));
            REQUIRE(dx && dxe && de);
            CHECK(cpu->ops->upsample_backward(cpu, YP_ELEM_F32, in, (int)s, y, dx, betas[b]) == 0);
            for (int64_t e = 0; e < n; e++)
                de[e] = yp_upsample_grad(y, dxe, in, s, betas[b], e);
            CHECK(same(b ? "upsample backward beta 1" : "upsample backward beta 0", de, dx, n));
            free(dx), free(dxe), free(de);
        }
        free(x), free(y), free(ye);
    }
}

static yp_pool_desc pool_desc(yp_dims in, int k, int s, int p) {
    yp_pool_desc d = {in, in, k, s, p, YP_ELEM_F32};
    d.out.h = (in.h + 2 * p - k) / s + 1;
    d.out.w = (in.w + 2 * p - k) / s + 1;
    return d;
}

static void test_maxpool(void) {
    const yp_pool_desc cases[] = {pool_desc((yp_dims){2, 13, 11, 67}, 5, 1, 2),
                                  pool_desc((yp_dims){2, 15, 17, 33}, 2, 2, 0),
                                  pool_desc((yp_dims){1, 9, 10, 19}, 3, 2, 1),
                                  pool_desc((yp_dims){1, 20, 20, 8}, 13, 1, 6)};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_pool_desc d = cases[k];
        const int64_t n = d.in.n * d.in.h * d.in.w * d.in.c, no = d.out.n * d.out.h * d.out.w * d.out.c;
        /* a coarse grid of values: windows hold ties, and the first maximum must win */
        float *x = rand_buf(n, 50 + k, -4, 4, 1.0f), *y = rand_buf(no, 51, 0, 1, 0), *ye = rand_buf(no, 52, 0, 1, 0);
        float *dy = rand_buf(no, 53 + k, -1, 1, 0);
        REQUIRE(x && y && ye && dy);
        CHECK(cpu->ops->maxpool_forward(cpu, &d, x, y) == 0);
        for (int64_t o = 0; o < no; o++)
            ye[o] = yp_pool_forward_at(x, d, o);
        CHECK(same("maxpool forward", ye, y, no));
        for (int b = 0; b < 2; b++) {
            float *dx = rand_buf(n, 60 + k, -1, 1, 0), *dxe = copy_buf(dx, n), *de = malloc((size_t)n * sizeof(float));
            REQUIRE(dx && dxe && de);
            CHECK(cpu->ops->maxpool_backward(cpu, &d, x, dy, dx, betas[b]) == 0);
            for (int64_t e = 0; e < n; e++)
                de[e] = yp_pool_grad(x, dy, dxe, d, betas[b], e);
            CHECK(same(b ? "maxpool backward beta 1" : "maxpool backward beta 0", de, dx, n));
            free(dx), free(dxe), free(de);
        }
        free(x), free(y), free(ye), free(dy);
    }
}

/* Pixel blocks to channels as eltwise.cu runs them: each coarse element from yp_s2d_source
 * (space_to_depth), each fine element from yp_s2d_target (depth_to_space); the two maps are
 * inverse permutations; the CPU's bits, both betas, both directions. Focus's order at gain 2,
 * Contract's (row-major) at gains 2, 3 and 4, and a gain-1 copy. */
static void test_space_to_depth(void) {
    const yp_s2d_desc cases[] = {YP_TEST_S2D_CASES, {{1, 6, 10, 32}, 2, YP_S2D_COL_MAJOR},
                                 {{1, 8, 4, 3}, 4, YP_S2D_ROW_MAJOR}, {{1, 3, 5, 2}, 1, YP_S2D_ROW_MAJOR}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_s2d_desc *d = &cases[k];
        const int64_t n = d->fine.n * d->fine.h * d->fine.w * d->fine.c;
        float *x = rand_buf(n, 70 + k, -2, 2, 0), *y = rand_buf(n, 71, 0, 1, 0), *ye = rand_buf(n, 72, 0, 1, 0);
        REQUIRE(x && y && ye);
        CHECK(cpu->ops->space_to_depth(cpu, YP_ELEM_F32, d, x, y, 0.0f) == 0);
        for (int64_t o = 0; o < n; o++)
            ye[o] = yp_acc(0.0f, &ye[o], x[yp_s2d_source(d, o)]);
        CHECK(same("space_to_depth", ye, y, n));
        for (int64_t e = 0; e < n; e++) /* the two maps are inverse permutations */
            if (yp_s2d_source(d, yp_s2d_target(d, e)) != e || yp_s2d_target(d, yp_s2d_source(d, e)) != e) {
                CHECK(!"yp_s2d_target inverts yp_s2d_source");
                break;
            }
        for (int b = 0; b < 2; b++) {
            /* depth_to_space of y (coarse) into a fine map, and space_to_depth into a coarse one */
            float *f = rand_buf(n, 80 + k, -1, 1, 0), *fe = copy_buf(f, n);
            float *c = rand_buf(n, 85 + k, -1, 1, 0), *ce = copy_buf(c, n);
            REQUIRE(f && fe && c && ce);
            CHECK(cpu->ops->depth_to_space(cpu, YP_ELEM_F32, d, y, f, betas[b]) == 0);
            for (int64_t e = 0; e < n; e++)
                fe[e] = yp_acc(betas[b], &fe[e], y[yp_s2d_target(d, e)]);
            CHECK(same(b ? "depth_to_space beta 1" : "depth_to_space beta 0", fe, f, n));
            if (b == 0) CHECK(same("depth_to_space inverts space_to_depth", x, f, n));
            CHECK(cpu->ops->space_to_depth(cpu, YP_ELEM_F32, d, x, c, betas[b]) == 0);
            for (int64_t o = 0; o < n; o++)
                ce[o] = yp_acc(betas[b], &ce[o], x[yp_s2d_source(d, o)]);
            CHECK(same(b ? "space_to_depth beta 1" : "space_to_depth beta 0", ce, c, n));
            free(f), free(fe), free(c), free(ce);
        }
        free(x), free(y), free(ye);
    }
}

/* Zero padding as eltwise.cu runs it: each output element from yp_pad_source (0 in the border),
 * each input gradient gathered from yp_pad_target; the CPU's bits, both betas. */
static void test_zero_pad(void) {
    const yp_pad_desc cases[] = {YP_TEST_PAD_CASES};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const yp_pad_desc *d = &cases[k];
        const int64_t nx = d->in.n * d->in.h * d->in.w * d->in.c;
        const int64_t ny = d->in.n * (d->in.h + d->top + d->bottom) * (d->in.w + d->left + d->right) * d->in.c;
        float *x = rand_buf(nx, 90 + k, -2, 2, 0), *y = rand_buf(ny, 91, 0, 1, 0), *ye = rand_buf(ny, 92, 0, 1, 0);
        REQUIRE(x && y && ye);
        CHECK(cpu->ops->zero_pad_forward(cpu, d, x, y) == 0);
        int64_t border = 0;
        for (int64_t o = 0; o < ny; o++) {
            int64_t src = yp_pad_source(d, o);
            ye[o] = src < 0 ? 0.0f : x[src];
            border += src < 0;
        }
        CHECK_EQ_I64(border, ny - nx);
        CHECK(same("zero_pad forward", ye, y, ny));
        for (int64_t e = 0; e < nx; e++) /* the target of each input element holds it */
            if (yp_pad_source(d, yp_pad_target(d, e)) != e) {
                CHECK(!"yp_pad_target inverts yp_pad_source");
                break;
            }
        for (int b = 0; b < 2; b++) {
            float *dx = rand_buf(nx, 95 + k, -1, 1, 0), *dxe = copy_buf(dx, nx);
            REQUIRE(dx && dxe);
            CHECK(cpu->ops->zero_pad_backward(cpu, d, y, dx, betas[b]) == 0);
            for (int64_t e = 0; e < nx; e++)
                dxe[e] = yp_acc(betas[b], &dxe[e], y[yp_pad_target(d, e)]);
            CHECK(same(b ? "zero_pad backward beta 1" : "zero_pad backward beta 0", dxe, dx, nx));
            free(dx), free(dxe);
        }
        free(x), free(y), free(ye);
    }
}

/* BN as bn.cu computes it: per channel, double sums over the rows in row order (the GPU's order
 * differs: a tree over row lanes), then yp_bn_stats / yp_bn_fold / yp_bn_backward_channel /
 * yp_bn_dx. */
static void test_bn(void) {
    const yp_dims dims = {2, 19, 23, 300};
    const int64_t c = dims.c, rows = dims.n * dims.h * dims.w, n = rows * c;
    const yp_bn_desc d = {dims, 1e-3f, 0.03f, YP_ELEM_F32};
    float *x = rand_buf(n, 90, -1, 1, 0), *dy = rand_buf(n, 91, -1, 1, 0), *gamma = rand_buf(c, 92, 0.5f, 1.5f, 0);
    float *beta = rand_buf(c, 93, -0.5f, 0.5f, 0), *rm = rand_buf(c, 94, -0.5f, 0.5f, 0);
    float *rv = rand_buf(c, 95, 0.5f, 2.0f, 0);
    float *rme = copy_buf(rm, c), *rve = copy_buf(rv, c), *stats = malloc((size_t)(2 * c) * sizeof(float));
    float *statse = malloc((size_t)(2 * c) * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
    float *ye = malloc((size_t)n * sizeof(float)), *dx = rand_buf(n, 96, -1, 1, 0), *dxe = copy_buf(dx, n);
    float *dg = rand_buf(c, 97, -1, 1, 0), *dge = copy_buf(dg, c), *db = rand_buf(c, 98, -1, 1, 0);
    float *dbe = copy_buf(db, c);
    REQUIRE(x && dy && gamma && beta && rm && rv && rme && rve && stats && statse && y && ye && dx && dxe && dg &&
            dge && db && dbe);
    for (int64_t r = 0; r < rows; r++) /* per-channel offsets next to the spread */
        for (int64_t j = 0; j < c; j++)
            x[r * c + j] = 3.0f * sinf((float)j) + (1.0f + (float)(j % 7) * 0.2f) * x[r * c + j];

    CHECK(cpu->ops->bn_forward_train(cpu, &d, x, gamma, beta, y, stats, rm, rv) == 0);
    for (int64_t j = 0; j < c; j++) {
        const float k = x[j];
        double s1 = 0, s2 = 0;
        for (int64_t r = 0; r < rows; r++) {
            float v = x[r * c + j] - k;
            s1 += v;
            s2 += (double)v * v;
        }
        yp_bn_stats(s1, s2, k, rows, d.eps, d.momentum, &statse[j], &statse[c + j], &rme[j], &rve[j]);
    }
    CHECK(close_to("bn stats", statse, stats, 2 * c, 1e-5, 1e-6));
    CHECK(close_to("bn running_mean", rme, rm, c, 1e-5, 1e-6));
    CHECK(close_to("bn running_var", rve, rv, c, 1e-5, 1e-6));
    for (int64_t e = 0; e < n; e++) { /* from the CPU's stats, as bn_apply_kernel */
        const int64_t j = e % c;
        float a, b;
        yp_bn_fold(gamma[j], beta[j], stats[j], stats[c + j], &a, &b);
        ye[e] = fmaf(x[e], a, b);
    }
    CHECK(close_to("bn y", ye, y, n, 1e-5, 1e-5));

    const yp_betas bt = {1.0f, 1.0f};
    CHECK(cpu->ops->bn_backward(cpu, &d, x, stats, gamma, dy, NULL, dx, dg, db, bt) == 0);
    for (int64_t j = 0; j < c; j++) {
        const float mean = stats[j];
        double sdy = 0, sdyx = 0;
        for (int64_t r = 0; r < rows; r++) {
            float g = dy[r * c + j];
            sdy += g;
            sdyx += (double)g * (double)(x[r * c + j] - mean);
        }
        float k1, k2, k3;
        yp_bn_backward_channel(gamma[j], stats[c + j], sdy, sdyx, rows, bt.w, &k1, &k2, &k3, &dge[j], &dbe[j]);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t e = r * c + j;
            dxe[e] = yp_acc(bt.dx, &dxe[e], yp_bn_dx(k1, k2, k3, dy[e], x[e], mean));
        }
    }
    CHECK(close_to("bn dx", dxe, dx, n, 1e-5, 1e-5));
    CHECK(close_to("bn dgamma", dge, dg, c, 1e-5, 1e-5));
    CHECK(close_to("bn dbeta", dbe, db, c, 1e-5, 1e-5));
    free(x), free(dy), free(gamma), free(beta), free(rm), free(rv), free(rme), free(rve), free(stats), free(statse);
    free(y), free(ye), free(dx), free(dxe), free(dg), free(dge), free(db), free(dbe);
}

int main(void) {
    char why[512] = "";
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) {
        fprintf(stderr, "no CPU backend: %s\n", why);
        return 1;
    }
    YP_RUN(test_concat);
    YP_RUN(test_upsample);
    YP_RUN(test_maxpool);
    YP_RUN(test_space_to_depth);
    YP_RUN(test_zero_pad);
    YP_RUN(test_bn);
    yp_backend_free(cpu);
    return yp_test_summary();
}
