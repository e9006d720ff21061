/* test_cuda_lowp_conv.c - the CUDA convolutions (cuDNN) with fp16 and bf16 data, and the cast
 * entry, against the CPU backend's fp32 on the same inputs rounded to the type:
 *   - conv2d forward, backward-data and backward-weights (beta 0 onto NaN, beta 1 onto random
 *     contents) for a 1x1 with bias, a 3x3 stride 2 and a grouped 3x3, each with the weights of
 *     the data's type (AMP's low-precision copy) and as fp32 masters (a frozen layer under AMP,
 *     converted into the staging); the bias, dw and dbias fp32 as the contract has them;
 *   - the scratch query: what yp_cudnn_scratch.h's bound grants (the staged filter and gradient
 *     at 2 bytes an element), per stage;
 *   - cast: every pair of f32, f16, bf16 on values over the types' ranges (subnormals, overflow),
 *     bit for bit the CPU's cast (both round to nearest even).
 * The reference runs on the weights the device multiplies with: rounded to the data's type.
 * Tolerances (u = yp_test_elem_eps of the type): y and dx are sums of K products accumulated in
 * fp32 in another order, then rounded once to the type: rtol 2u (one ulp of the type) plus atol
 * 1e-4 x max|cpu| (the fp32 test's bound for the reordered sums); dw is cuDNN's gradient rounded
 * to the type, then added in fp32: rtol 2u, atol (2u + 1e-4) x max|cpu| (with beta 1 the rounding
 * is of the new part only); dbias is summed from the rounded dy in fp32: rtol 1e-5, atol 1e-4 x
 * max. Without a usable GPU it prints "SKIP: <reason>" and exits 77. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_cudnn_scratch.h"
#include "yp_test.h"
#include "yp_test_cuda.h"

static yp_backend *gpu, *cpu;

static int ok(yp_backend *be, int rc) {
    if (rc) fprintf(stderr, "  %s: %s\n", be->name, be->last_error(be));
    return rc == 0;
}

static int64_t count_of(yp_dims d) { return d.n * d.h * d.w * d.c; }

/* fp32 device buffers (the bias and the weight gradients) compared with the CPU's. */
static int64_t check_f32(const char *what, const float *dev, const float *want, int64_t n, double rtol, double atol_rel) {
    float *got = malloc((size_t)(n > 0 ? n : 1) * sizeof *got);
    if (!got || gpu->mem_copy(gpu, got, dev, (size_t)n * sizeof(float), YP_COPY_DEVICE_TO_HOST)) return free(got), -1;
    double amax = 0;
    for (int64_t i = 0; i < n; i++) amax = fabs(want[i]) > amax ? fabs(want[i]) : amax;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= rtol * fabs(want[i]) + atol_rel * amax) && bad++ < 5)
            fprintf(stderr, "  %s [%lld]: cuda %.9g cpu %.9g\n", what, (long long)i, got[i], want[i]);
    free(got);
    return bad;
}

static float *f32_device(const float *host, int64_t n) {
    float *d = gpu->mem_alloc(gpu, (size_t)(n > 0 ? n : 1) * sizeof(float));
    if (d && host) CHECK(gpu->mem_copy(gpu, d, host, (size_t)n * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    else if (d) CHECK(gpu->mem_set(gpu, d, 0xff, (size_t)n * sizeof(float)) == 0);
    return d;
}

static float *rand_host(int64_t n, uint64_t seed, float lo, float hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; p && i < n; i++) p[i] = yp_test_uniform(&st, lo, hi);
    return p;
}

static yp_conv_desc desc(int64_t n, int64_t cin, int64_t hw, int64_t cout, int k, int s, int groups, yp_elem t,
                         yp_elem wt) {
    int p = k / 2;
    int64_t o = (hw + 2 * p - k) / s + 1;
    return (yp_conv_desc){.in = {n, hw, hw, cin}, .out = {n, o, o, cout}, .kh = k, .kw = k, .sh = s, .sw = s, .ph = p,
                          .pw = p, .groups = groups, .dtype = t, .wdtype = wt};
}

static void conv_case(const char *name, yp_conv_desc d, int bias, uint64_t seed) {
    const yp_elem t = d.dtype;
    const double u = yp_test_elem_eps(t);
    const int64_t nx = count_of(d.in), ny = count_of(d.out), nw = d.out.c * (d.in.c / d.groups) * d.kh * d.kw;
    const int64_t nb = d.out.c;
    char what[128];
    fprintf(stderr, "conv %s %s (weights %s)\n", name, yp_elem_name(t), yp_elem_name(d.wdtype));
    yp_test_tbuf x = yp_test_tbuf_rand(gpu, t, nx, seed, -1, 1), dy = yp_test_tbuf_rand(gpu, t, ny, seed + 1, -1, 1);
    yp_test_tbuf w = yp_test_tbuf_rand(gpu, d.wdtype, nw, seed + 2, -0.5f, 0.5f);
    REQUIRE(x.h && x.d && dy.h && dy.d && w.h && w.d);
    float *b = rand_host(nb, seed + 3, -1, 1), *wr = malloc((size_t)nw * sizeof *wr);
    for (int64_t i = 0; i < nw; i++) wr[i] = yp_elem_round(t, w.h[i]); /* what the device multiplies with */
    /* the CPU's fp32 reference, with the CPU's own scratch */
    yp_conv_desc c32 = d;
    c32.dtype = c32.wdtype = YP_ELEM_F32;
    int64_t pi[2], fx[2];
    for (int s = 0; s < 2; s++) REQUIRE(ok(cpu, cpu->ops->conv2d_scratch(cpu, &c32, bias, (yp_conv_stage)s, &pi[s], &fx[s])));
    float *cws = calloc((size_t)(pi[0] > pi[1] ? pi[0] : pi[1]) + 1, 4), *cwt = calloc((size_t)(fx[0] > fx[1] ? fx[0] : fx[1]) + 1, 4);
    float *y_c = malloc((size_t)ny * 4), *dx_c = malloc((size_t)nx * 4), *dw_c = malloc((size_t)nw * 4);
    float *db_c = malloc((size_t)nb * 4), *dw1_c = rand_host(nw, seed + 4, -1, 1), *db1_c = rand_host(nb, seed + 5, -1, 1);
    float *dw0 = malloc((size_t)nw * 4), *db0 = malloc((size_t)nb * 4);
    memcpy(dw0, dw1_c, (size_t)nw * 4), memcpy(db0, db1_c, (size_t)nb * 4);
    REQUIRE(ok(cpu, cpu->ops->conv2d_forward(cpu, &c32, x.h, wr, bias ? b : NULL, y_c, cws, cwt)));
    REQUIRE(ok(cpu, cpu->ops->conv2d_backward_data(cpu, &c32, dy.h, wr, dx_c, 0.0f, cws, cwt)));
    REQUIRE(ok(cpu, cpu->ops->conv2d_backward_weights(cpu, &c32, x.h, dy.h, dw_c, bias ? db_c : NULL, 0.0f, cws, cwt)));
    REQUIRE(ok(cpu, cpu->ops->conv2d_backward_weights(cpu, &c32, x.h, dy.h, dw1_c, bias ? db1_c : NULL, 1.0f, cws, cwt)));
    /* the device: its scratch is the bound's fixed part, per stage */
    int64_t gp[2], gf[2];
    for (int s = 0; s < 2; s++) {
        REQUIRE(ok(gpu, gpu->ops->conv2d_scratch(gpu, &d, bias, (yp_conv_stage)s, &gp[s], &gf[s])));
        CHECK_EQ_I64(gf[s], yp_cudnn_fixed_floats(&d, (yp_conv_stage)s));
    }
    float *ws = f32_device(NULL, (gp[0] > gp[1] ? gp[0] : gp[1]) + 1), *wt = f32_device(NULL, (gf[0] > gf[1] ? gf[0] : gf[1]) + 1);
    float *g_b = f32_device(b, nb), *g_dw = f32_device(NULL, nw), *g_db = f32_device(NULL, nb);
    yp_test_tbuf y = yp_test_tbuf_nan(gpu, t, ny), dx = yp_test_tbuf_nan(gpu, t, nx);
    REQUIRE(ws && wt && g_b && g_dw && g_db && y.d && dx.d);
    REQUIRE(ok(gpu, gpu->ops->conv2d_forward(gpu, &d, x.d, w.d, bias ? g_b : NULL, y.d, ws, wt)));
    snprintf(what, sizeof what, "%s forward", name);
    CHECK_EQ_I64(yp_test_tbuf_check(what, &y, y_c, 2 * u, 1e-4), 0);
    REQUIRE(ok(gpu, gpu->ops->conv2d_backward_data(gpu, &d, dy.d, w.d, dx.d, 0.0f, ws, wt)));
    snprintf(what, sizeof what, "%s backward data", name);
    CHECK_EQ_I64(yp_test_tbuf_check(what, &dx, dx_c, 2 * u, 1e-4), 0);
    REQUIRE(ok(gpu, gpu->ops->conv2d_backward_weights(gpu, &d, x.d, dy.d, g_dw, bias ? g_db : NULL, 0.0f, ws, wt)));
    snprintf(what, sizeof what, "%s backward weights", name);
    CHECK_EQ_I64(check_f32(what, g_dw, dw_c, nw, 2 * u, 2 * u + 1e-4), 0);
    if (bias) CHECK_EQ_I64(check_f32("bias gradient", g_db, db_c, nb, 1e-5, 1e-4), 0);
    /* beta 1: onto the fp32 gradients already there */
    REQUIRE(gpu->mem_copy(gpu, g_dw, dw0, (size_t)nw * 4, YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(gpu->mem_copy(gpu, g_db, db0, (size_t)nb * 4, YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(ok(gpu, gpu->ops->conv2d_backward_weights(gpu, &d, x.d, dy.d, g_dw, bias ? g_db : NULL, 1.0f, ws, wt)));
    snprintf(what, sizeof what, "%s backward weights (beta 1)", name);
    CHECK_EQ_I64(check_f32(what, g_dw, dw1_c, nw, 2 * u, 2 * u + 1e-4), 0);
    if (bias) CHECK_EQ_I64(check_f32("bias gradient (beta 1)", g_db, db1_c, nb, 1e-5, 1e-4), 0);
    CHECK(gpu->sync(gpu) == 0);
    gpu->mem_free(gpu, ws), gpu->mem_free(gpu, wt), gpu->mem_free(gpu, g_b), gpu->mem_free(gpu, g_dw);
    gpu->mem_free(gpu, g_db);
    yp_test_tbuf_free(&x), yp_test_tbuf_free(&dy), yp_test_tbuf_free(&w), yp_test_tbuf_free(&y), yp_test_tbuf_free(&dx);
    free(b), free(wr), free(cws), free(cwt), free(y_c), free(dx_c), free(dw_c), free(db_c), free(dw1_c), free(db1_c);
    free(dw0), free(db0);
}

static void each_type(const char *name, yp_conv_desc d, int bias, uint64_t seed) {
    const yp_elem types[2] = {YP_ELEM_F16, YP_ELEM_BF16};
    for (int k = 0; k < 2; k++) {
        d.dtype = d.wdtype = types[k];
        conv_case(name, d, bias, seed);
        d.wdtype = YP_ELEM_F32; /* a frozen layer's fp32 master */
        conv_case(name, d, bias, seed + 100);
    }
}

static void test_conv_1x1(void) { each_type("1x1 bias", desc(2, 24, 9, 40, 1, 1, 1, 0, 0), 1, 11); }
static void test_conv_3x3_s2(void) { each_type("3x3 s2", desc(2, 16, 13, 32, 3, 2, 1, 0, 0), 0, 21); }
static void test_conv_grouped(void) { each_type("3x3 groups 4", desc(1, 32, 11, 32, 3, 1, 4, 0, 0), 1, 31); }

/* Weights of another type than the data's and fp32 are refused. */
static void test_conv_refusals(void) {
    yp_conv_desc d = desc(1, 8, 5, 8, 1, 1, 1, YP_ELEM_F16, YP_ELEM_BF16);
    int64_t a, b;
    CHECK(gpu->ops->conv2d_scratch(gpu, &d, 0, YP_CONV_FORWARD, &a, &b) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "weights of type bf16 with f16 data");
}

static void test_cast(void) {
    const yp_elem types[3] = {YP_ELEM_F32, YP_ELEM_F16, YP_ELEM_BF16};
    const int64_t n = 5003;
    float *v = malloc((size_t)n * sizeof *v);
    uint64_t st = 99;
    for (int64_t i = 0; i < n; i++) /* magnitudes 2^-30 .. 2^20: fp16's subnormals and overflow */
        v[i] = ldexpf(yp_test_uniform(&st, -1, 1), (int)(i % 51) - 30);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            if (a == b) continue;
            yp_test_tbuf x = yp_test_tbuf_alloc(gpu, types[a], n), y = yp_test_tbuf_nan(gpu, types[b], n);
            REQUIRE(x.h && x.d && y.d);
            for (int64_t i = 0; i < n; i++) x.h[i] = yp_elem_round(types[a], v[i]);
            REQUIRE(yp_test_tbuf_upload(&x) == 0);
            REQUIRE(ok(gpu, gpu->ops->cast(gpu, types[a], x.d, types[b], y.d, n)));
            float *want = malloc((size_t)n * sizeof *want); /* the CPU's cast, as fp32 values */
            for (int64_t i = 0; i < n; i++) want[i] = yp_elem_round(types[b], x.h[i]);
            char what[64];
            snprintf(what, sizeof what, "cast %s ->", yp_elem_name(types[a]));
            CHECK_EQ_I64(yp_test_tbuf_check(what, &y, want, 0, 0), 0);
            free(want);
            yp_test_tbuf_free(&x), yp_test_tbuf_free(&y);
        }
    free(v);
    CHECK(gpu->ops->cast(gpu, YP_ELEM_COUNT, (float *)&st, YP_ELEM_F32, (float *)&st + 1, 1) == -1);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 0);
    if (rc) return rc;
    YP_RUN(test_conv_1x1);
    YP_RUN(test_conv_3x3_s2);
    YP_RUN(test_conv_grouped);
    YP_RUN(test_conv_refusals);
    YP_RUN(test_cast);
    yp_backend_free(gpu);
    yp_backend_free(cpu);
    return yp_test_summary();
}
