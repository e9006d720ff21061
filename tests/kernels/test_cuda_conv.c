/* test_cuda_conv.c - the CUDA backend's convolutions (cuDNN), Detect decode and loss_level
 * against the CPU backend on deterministic random data: convs of YOLOv5's kinds (1x1, 3x3 stride
 * 1 and 2, 6x6 stride 2 pad 2, grouped and depthwise; with and without bias; odd spatial sizes)
 * forward, backward-data and backward-weights with beta 0 (onto NaN) and beta 1 (onto random
 * contents), the combined backward, the scratch query and preparation; the decode of three
 * levels; one loss level with positives that share cells (tests/support/yp_test_detect.h), in training and
 * evaluation, and its argument errors.
 * Without a usable GPU (or a build without CUDA) it prints "SKIP: <reason>" and exits 77, which
 * ctest reports as skipped. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"
#include "yp_test_cuda.h"
#include "yp_test_detect.h"

static yp_backend *gpu, *cpu;

static float *rand_host(int64_t n, uint64_t seed, float lo, float hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; p && i < n; i++) p[i] = yp_test_uniform(&st, lo, hi);
    return p;
}

static float *host_buf(int64_t n) {
    return calloc((size_t)(n > 0 ? n : 1), sizeof(float));
}

/* Counts elements where |got - want| > rtol |want| + atol, printing the first few. */
static int64_t mismatches(const char *what, const float *got, const float *want, int64_t n, double rtol,
                          double atol) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= rtol * fabs(want[i]) + atol) && bad++ < 5)
            fprintf(stderr, "  %s [%lld]: cuda %.9g cpu %.9g\n", what, (long long)i, got[i], want[i]);
    }
    if (bad) fprintf(stderr, "  %s: %lld of %lld elements off\n", what, (long long)bad, (long long)n);
    return bad;
}

/* The largest |x[i]|: the scale that a tolerance relative to the output is taken of. */
static double max_abs(const float *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* fp32 conv: each output is a sum of K = c_in*k*k products whose order differs between oneDNN
 * and cuDNN (and cuDNN may split K); the error of such sums is ~K ulp of the largest partial sum
 * in the worst case, ~1e-6 of the output's scale for K <= 600 here. 1e-4 of the scale (the issue's
 * bound) leaves a wide margin and still catches a wrong layout, tap or beta (errors O(scale)). */
static int64_t close_to_scale(const char *what, const float *got, const float *want, int64_t n) {
    return mismatches(what, got, want, n, 0.0, 1e-4 * max_abs(want, n) + 1e-7);
}

static float *to_device(const float *host, int64_t n) {
    size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
    float *d = gpu->mem_alloc(gpu, bytes);
    CHECK(d != NULL);
    if (d && host && gpu->mem_copy(gpu, d, host, (size_t)n * sizeof(float), YP_COPY_HOST_TO_DEVICE) != 0) {
        fprintf(stderr, "  %s\n", gpu->last_error(gpu));
        CHECK(!"mem_copy host to device");
    }
    return d;
}

/* A device buffer of n floats, every one NaN (beta 0 must not read it). */
static float *nan_device(int64_t n) {
    float *d = to_device(NULL, n);
    if (d) CHECK(gpu->mem_set(gpu, d, 0xff, (size_t)n * sizeof(float)) == 0);
    return d;
}

static int from_device(float *host, const float *dev, int64_t n) {
    int rc = gpu->mem_copy(gpu, host, dev, (size_t)n * sizeof(float), YP_COPY_DEVICE_TO_HOST);
    if (rc) fprintf(stderr, "  %s\n", gpu->last_error(gpu));
    return rc;
}

/* Reports a failed entry's reason. */
static int ok(yp_backend *be, int rc) {
    if (rc) fprintf(stderr, "  %s: %s\n", be->name, be->last_error(be));
    return rc == 0;
}

/* ---- conv ---- */

/* A conv of kernel kh x kw, stride sh x sw, padding ph x pw (CrossConv's 1x3 and 3x1). */
static yp_conv_desc conv_desc_hw(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int kh, int kw, int sh,
                                 int sw, int ph, int pw) {
    return (yp_conv_desc){.in = {n, h, w, cin}, .out = {n, (h + 2 * ph - kh) / sh + 1, (w + 2 * pw - kw) / sw + 1, cout},
                          .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = ph, .pw = pw, .groups = 1, .dtype = YP_ELEM_F32};
}
static yp_conv_desc conv_desc(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int k, int s, int p) {
    return conv_desc_hw(n, cin, h, w, cout, k, k, s, s, p, p);
}

static int64_t count_of(yp_dims d) {
    return d.n * d.h * d.w * d.c;
}

/* A backend's scratch for both stages of d: the larger per-image and fixed figures. */
static int scratch_both(yp_backend *be, const yp_conv_desc *d, int bias, int64_t *pi, int64_t *fx) {
    int64_t p0, f0, p1, f1;
    if (!ok(be, be->ops->conv2d_scratch(be, d, bias, YP_CONV_FORWARD, &p0, &f0)) ||
        !ok(be, be->ops->conv2d_scratch(be, d, bias, YP_CONV_BACKWARD, &p1, &f1)))
        return -1;
    *pi = p0 > p1 ? p0 : p1;
    *fx = f0 > f1 ? f0 : f1;
    return 0;
}

/* One conv: CPU reference (forward, backward-data and -weights with beta 0, then beta 1 onto
 * random contents) and the same on the GPU, plus the combined backward with betas (1, 0). */
static void conv_case(const char *name, yp_conv_desc d, int bias, uint64_t seed) {
    const int64_t nx = count_of(d.in), ny = count_of(d.out), nw = d.out.c * (d.in.c / d.groups) * d.kh * d.kw;
    const int64_t nb = d.out.c;
    float *x = rand_host(nx, seed, -1, 1), *w = rand_host(nw, seed + 1, -0.5f, 0.5f);
    float *b = rand_host(nb, seed + 2, -1, 1), *dy = rand_host(ny, seed + 3, -1, 1);
    float *dx0 = rand_host(nx, seed + 4, -1, 1), *dw0 = rand_host(nw, seed + 5, -1, 1);
    float *db0 = rand_host(nb, seed + 6, -1, 1);
    float *y_c = host_buf(ny), *dx_c = host_buf(nx), *dw_c = host_buf(nw), *db_c = host_buf(nb);
    float *dx1_c = host_buf(nx), *dw1_c = host_buf(nw), *db1_c = host_buf(nb);
    float *got = host_buf(nx > ny ? (nx > nw ? nx : nw) : (ny > nw ? ny : nw));
    float *cws = NULL, *cwt = NULL;
    float *g_x = NULL, *g_w = NULL, *g_b = NULL, *g_dy = NULL, *g_y = NULL, *g_dx = NULL, *g_dw = NULL, *g_db = NULL;
    float *g_ws = NULL, *g_wt = NULL;
    char what[96];
    int64_t pi, fx;
    fprintf(stderr, "conv %s: n %lld, %lldx%lldx%lld -> %lldx%lldx%lld, k %dx%d s %dx%d p %dx%d groups %d%s\n", name,
            (long long)d.in.n, (long long)d.in.h, (long long)d.in.w, (long long)d.in.c, (long long)d.out.h,
            (long long)d.out.w, (long long)d.out.c, d.kh, d.kw, d.sh, d.sw, d.ph, d.pw, d.groups, bias ? ", bias" : "");

    /* CPU reference */
    REQUIRE(scratch_both(cpu, &d, bias, &pi, &fx) == 0);
    cws = pi ? host_buf(pi) : NULL, cwt = fx ? host_buf(fx) : NULL;
    const yp_ops *co = cpu->ops;
    REQUIRE(ok(cpu, co->conv2d_forward(cpu, &d, x, w, bias ? b : NULL, y_c, cws, cwt)));
    REQUIRE(ok(cpu, co->conv2d_backward_data(cpu, &d, dy, w, dx_c, 0.0f, cws, cwt)));
    REQUIRE(ok(cpu, co->conv2d_backward_weights(cpu, &d, x, dy, dw_c, bias ? db_c : NULL, 0.0f, cws, cwt)));
    memcpy(dx1_c, dx0, (size_t)nx * sizeof(float));
    memcpy(dw1_c, dw0, (size_t)nw * sizeof(float));
    memcpy(db1_c, db0, (size_t)nb * sizeof(float));
    REQUIRE(ok(cpu, co->conv2d_backward_data(cpu, &d, dy, w, dx1_c, 1.0f, cws, cwt)));
    REQUIRE(ok(cpu, co->conv2d_backward_weights(cpu, &d, x, dy, dw1_c, bias ? db1_c : NULL, 1.0f, cws, cwt)));

    /* GPU: the scratch query answers the same before and after preparation */
    const yp_ops *go = gpu->ops;
    int64_t p0, f0, p1, f1, q0, g0, q1, g1;
    REQUIRE(ok(gpu, go->conv2d_scratch(gpu, &d, bias, YP_CONV_FORWARD, &p0, &f0)));
    REQUIRE(ok(gpu, go->conv2d_scratch(gpu, &d, bias, YP_CONV_BACKWARD, &p1, &f1)));
    REQUIRE(ok(gpu, go->conv2d_prepare(gpu, &d, bias, YP_CONV_FORWARD)));
    REQUIRE(ok(gpu, go->conv2d_prepare(gpu, &d, bias, YP_CONV_BACKWARD)));
    REQUIRE(ok(gpu, go->conv2d_scratch(gpu, &d, bias, YP_CONV_FORWARD, &q0, &g0)));
    REQUIRE(ok(gpu, go->conv2d_scratch(gpu, &d, bias, YP_CONV_BACKWARD, &q1, &g1)));
    CHECK_EQ_I64(q0, p0);
    CHECK_EQ_I64(g0, f0);
    CHECK_EQ_I64(q1, p1);
    CHECK_EQ_I64(g1, f1);
    CHECK(p0 >= 0 && p1 >= 0);
    /* the fixed scratch holds the reordered weights for k > 1, nothing for 1x1 */
    CHECK_EQ_I64(f0, yp_conv_taps(&d) == 1 ? 0 : nw);
    CHECK_EQ_I64(f1, yp_conv_taps(&d) == 1 ? 0 : nw);
    fprintf(stderr, "  cuda scratch: forward %lld + %lld floats, backward %lld + %lld\n", (long long)p0,
            (long long)f0, (long long)p1, (long long)f1);
    /* exactly what was asked, NaN-filled: an op that reads scratch it did not write shows */
    int64_t gpi = p0 > p1 ? p0 : p1, gfx = f0 > f1 ? f0 : f1;
    g_ws = gpi ? nan_device(gpi) : NULL, g_wt = gfx ? nan_device(gfx) : NULL;
    g_x = to_device(x, nx), g_w = to_device(w, nw), g_b = to_device(b, nb), g_dy = to_device(dy, ny);
    g_y = nan_device(ny), g_dx = nan_device(nx), g_dw = nan_device(nw), g_db = nan_device(nb);
    REQUIRE(g_x && g_w && g_b && g_dy && g_y && g_dx && g_dw && g_db && (!gpi || g_ws) && (!gfx || g_wt));

    REQUIRE(ok(gpu, go->conv2d_forward(gpu, &d, g_x, g_w, bias ? g_b : NULL, g_y, g_ws, g_wt)));
    REQUIRE(from_device(got, g_y, ny) == 0);
    snprintf(what, sizeof what, "%s forward", name);
    CHECK_EQ_I64(close_to_scale(what, got, y_c, ny), 0);

    /* beta 0 onto NaN */
    REQUIRE(ok(gpu, go->conv2d_backward_data(gpu, &d, g_dy, g_w, g_dx, 0.0f, g_ws, g_wt)));
    REQUIRE(ok(gpu, go->conv2d_backward_weights(gpu, &d, g_x, g_dy, g_dw, bias ? g_db : NULL, 0.0f, g_ws, g_wt)));
    REQUIRE(from_device(got, g_dx, nx) == 0);
    snprintf(what, sizeof what, "%s backward data", name);
    CHECK_EQ_I64(close_to_scale(what, got, dx_c, nx), 0);
    REQUIRE(from_device(got, g_dw, nw) == 0);
    snprintf(what, sizeof what, "%s backward weights", name);
    CHECK_EQ_I64(close_to_scale(what, got, dw_c, nw), 0);
    if (bias) {
        REQUIRE(from_device(got, g_db, nb) == 0);
        snprintf(what, sizeof what, "%s bias gradient", name);
        CHECK_EQ_I64(close_to_scale(what, got, db_c, nb), 0);
    }

    /* beta 1 onto random contents */
    REQUIRE(gpu->mem_copy(gpu, g_dx, dx0, (size_t)nx * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(gpu->mem_copy(gpu, g_dw, dw0, (size_t)nw * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(gpu->mem_copy(gpu, g_db, db0, (size_t)nb * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(ok(gpu, go->conv2d_backward_data(gpu, &d, g_dy, g_w, g_dx, 1.0f, g_ws, g_wt)));
    REQUIRE(ok(gpu, go->conv2d_backward_weights(gpu, &d, g_x, g_dy, g_dw, bias ? g_db : NULL, 1.0f, g_ws, g_wt)));
    REQUIRE(from_device(got, g_dx, nx) == 0);
    snprintf(what, sizeof what, "%s backward data (beta 1)", name);
    CHECK_EQ_I64(close_to_scale(what, got, dx1_c, nx), 0);
    REQUIRE(from_device(got, g_dw, nw) == 0);
    snprintf(what, sizeof what, "%s backward weights (beta 1)", name);
    CHECK_EQ_I64(close_to_scale(what, got, dw1_c, nw), 0);
    if (bias) {
        REQUIRE(from_device(got, g_db, nb) == 0);
        snprintf(what, sizeof what, "%s bias gradient (beta 1)", name);
        CHECK_EQ_I64(close_to_scale(what, got, db1_c, nb), 0);
    }

    /* combined: dx accumulates (beta.dx 1), dw and dbias overwrite NaN (beta.w 0) */
    REQUIRE(gpu->mem_copy(gpu, g_dx, dx0, (size_t)nx * sizeof(float), YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(gpu->mem_set(gpu, g_dw, 0xff, (size_t)nw * sizeof(float)) == 0);
    REQUIRE(gpu->mem_set(gpu, g_db, 0xff, (size_t)nb * sizeof(float)) == 0);
    REQUIRE(ok(gpu, go->conv2d_backward(gpu, &d, g_x, g_dy, g_w, g_dx, g_dw, bias ? g_db : NULL,
                                        (yp_betas){1.0f, 0.0f}, g_ws, g_wt)));
    REQUIRE(from_device(got, g_dx, nx) == 0);
    snprintf(what, sizeof what, "%s combined backward data", name);
    CHECK_EQ_I64(close_to_scale(what, got, dx1_c, nx), 0);
    REQUIRE(from_device(got, g_dw, nw) == 0);
    snprintf(what, sizeof what, "%s combined backward weights", name);
    CHECK_EQ_I64(close_to_scale(what, got, dw_c, nw), 0);
    if (bias) {
        REQUIRE(from_device(got, g_db, nb) == 0);
        snprintf(what, sizeof what, "%s combined bias gradient", name);
        CHECK_EQ_I64(close_to_scale(what, got, db_c, nb), 0);
    }
    CHECK(gpu->sync(gpu) == 0);

    gpu->mem_free(gpu, g_x), gpu->mem_free(gpu, g_w), gpu->mem_free(gpu, g_b), gpu->mem_free(gpu, g_dy);
    gpu->mem_free(gpu, g_y), gpu->mem_free(gpu, g_dx), gpu->mem_free(gpu, g_dw), gpu->mem_free(gpu, g_db);
    gpu->mem_free(gpu, g_ws), gpu->mem_free(gpu, g_wt);
    free(x), free(w), free(b), free(dy), free(dx0), free(dw0), free(db0);
    free(y_c), free(dx_c), free(dw_c), free(db_c), free(dx1_c), free(dw1_c), free(db1_c), free(got);
    free(cws), free(cwt);
}

static void test_conv_1x1(void) {
    conv_case("1x1 bias", conv_desc(2, 8, 7, 7, 16, 1, 1, 0), 1, 101);
    conv_case("1x1", conv_desc(2, 64, 5, 9, 32, 1, 1, 0), 0, 102);
}
static void test_conv_3x3_s1(void) {
    conv_case("3x3 s1", conv_desc(2, 6, 9, 11, 10, 3, 1, 1), 0, 103);
    conv_case("3x3 s1 bias", conv_desc(1, 16, 13, 7, 24, 3, 1, 1), 1, 104);
}
static void test_conv_3x3_s2(void) {
    conv_case("3x3 s2 bias", conv_desc(2, 5, 13, 9, 12, 3, 2, 1), 1, 105);
    conv_case("3x3 s2", conv_desc(3, 32, 10, 10, 64, 3, 2, 1), 0, 106);
}
static void test_conv_6x6_s2(void) {
    conv_case("6x6 s2 p2", conv_desc(2, 3, 17, 15, 8, 6, 2, 2), 0, 107);
    conv_case("6x6 s2 p2 bias", conv_desc(1, 3, 32, 32, 16, 6, 2, 2), 1, 108);
}
/* Grouped and depthwise convs (the ghost models' GhostConv, DWConv, GhostBottleneck): cuDNN's
 * group count with the filter (c_out, k, k, c_in/groups) reordered per output channel, against
 * the CPU backend's oneDNN grouped convs (test_cpu_conv_groups.c checks those against PyTorch).
 * Each output sums at most (c_in/groups)*k*k = 64 products: the 1e-4 bound has a wider margin. */
static yp_conv_desc grouped(yp_conv_desc d, int groups) {
    d.groups = groups;
    return d;
}
static void test_conv_grouped(void) {
    conv_case("dw 5x5 s1", grouped(conv_desc(2, 8, 7, 6, 8, 5, 1, 2), 8), 0, 111);
    conv_case("dw 3x3 s2 bias", grouped(conv_desc(2, 8, 9, 8, 8, 3, 2, 1), 8), 1, 112);
    conv_case("g2 3x3 s1", grouped(conv_desc(2, 8, 6, 5, 4, 3, 1, 1), 2), 0, 113);
    conv_case("dw 5x5 s1 wide", grouped(conv_desc(2, 64, 20, 20, 64, 5, 1, 2), 64), 0, 114);
    conv_case("g16 3x3 s1", grouped(conv_desc(2, 48, 9, 9, 32, 3, 1, 1), 16), 0, 115);
    conv_case("g4 1x1 bias", grouped(conv_desc(2, 32, 8, 7, 64, 1, 1, 0), 4), 1, 116);
}

/* CrossConv's non-square convs (C3x, and CrossConv strided and grouped): cuDNN's per-axis
 * padding and strides with the KRSC filter (c_out, kh, kw, c_in/groups), against the CPU
 * backend's (test_cpu_conv_cross.c checks those against PyTorch). */
static void test_conv_cross(void) {
    conv_case("1x3 s1", conv_desc_hw(2, 16, 9, 10, 16, 1, 3, 1, 1, 0, 1), 0, 117);
    conv_case("3x1 s1", conv_desc_hw(2, 16, 9, 10, 24, 3, 1, 1, 1, 1, 0), 0, 118);
    conv_case("1x3 s1x2", conv_desc_hw(2, 8, 8, 11, 16, 1, 3, 1, 2, 0, 1), 0, 119);
    conv_case("3x1 s2x1 g2 bias", grouped(conv_desc_hw(2, 16, 9, 6, 8, 3, 1, 2, 1, 1, 0), 2), 1, 120);
}

/* Detect's head: a 1x1 conv with bias onto na*(nc+5) = 255 channels, 3x3 grid. */
static void test_conv_detect_head(void) {
    conv_case("detect head", conv_desc(2, 32, 3, 3, 255, 1, 1, 0), 1, 109);
}

static void test_conv_errors(void) {
    yp_conv_desc d = conv_desc(1, 4, 8, 8, 4, 3, 1, 1);
    int64_t pi, fx;
    d.dtype = YP_ELEM_F16;
    CHECK(gpu->ops->conv2d_scratch(gpu, &d, 0, YP_CONV_FORWARD, &pi, &fx) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "f16");
    CHECK(gpu->ops->conv2d_forward(gpu, &d, NULL, NULL, NULL, NULL, NULL, NULL) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "conv2d_forward");
    d = conv_desc(1, 4, 8, 8, 4, 3, 1, 1);
    d.out.h = 7; /* not the conv's output */
    CHECK(gpu->ops->conv2d_scratch(gpu, &d, 0, YP_CONV_FORWARD, &pi, &fx) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "output");
    d = grouped(conv_desc(1, 4, 8, 8, 4, 3, 1, 1), 3); /* groups must divide the channels */
    CHECK(gpu->ops->conv2d_scratch(gpu, &d, 0, YP_CONV_FORWARD, &pi, &fx) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "not divisible by groups 3");
    d = conv_desc(1, 4, 8, 8, 4, 3, 1, 1);
    CHECK(gpu->ops->conv2d_forward(gpu, &d, NULL, NULL, NULL, NULL, NULL, NULL) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "NULL");
    CHECK(gpu->sync(gpu) == 0);
}

/* ---- detect_decode ---- */

/* Three levels of odd grids, 4 classes, 2 images. Both sides evaluate the same fp32 expression
 * (expf: <= 2 ulp on CUDA, < 1 ulp in glibc; IEEE division; the products by 2 exact): a few ulp
 * of values up to ~1e3 pixels, so rtol 1e-5 with atol 1e-5 has a 10x margin. */
static void test_detect_decode(void) {
    yp_decode_desc d;
    memset(&d, 0, sizeof d);
    d.n = 2, d.nl = 3, d.na = 3, d.nc = 4, d.dtype = YP_ELEM_F32;
    const int64_t hs[3] = {5, 3, 2}, ws[3] = {7, 4, 1};
    const float strides[3] = {8, 16, 32};
    const int no = d.nc + 5;
    float *xs[3], *gxs[3];
    int64_t rows = 0;
    for (int l = 0; l < 3; l++) {
        d.h[l] = hs[l], d.w[l] = ws[l], d.stride[l] = strides[l];
        memcpy(d.anchors[l], yp_test_anchors[l], sizeof yp_test_anchors[l]);
        int64_t n = d.n * hs[l] * ws[l] * d.na * no;
        xs[l] = rand_host(n, 200 + (uint64_t)l, -4, 4);
        gxs[l] = to_device(xs[l], n);
        rows += d.na * hs[l] * ws[l];
    }
    const int64_t ny = d.n * rows * no;
    float *y_c = host_buf(ny), *y_g = host_buf(ny), *g_y = nan_device(ny);
    REQUIRE(gxs[0] && gxs[1] && gxs[2] && g_y);
    REQUIRE(ok(cpu, cpu->ops->detect_decode(cpu, &d, (const float *const *)xs, y_c)));
    REQUIRE(ok(gpu, gpu->ops->detect_decode(gpu, &d, (const float *const *)gxs, g_y)));
    REQUIRE(from_device(y_g, g_y, ny) == 0);
    CHECK_EQ_I64(mismatches("detect_decode", y_g, y_c, ny, 1e-5, 1e-5), 0);

    d.dtype = YP_ELEM_COUNT; /* F16 and BF16 run (test_cuda_lowp_norm); no other value does */
    CHECK(gpu->ops->detect_decode(gpu, &d, (const float *const *)gxs, g_y) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "not f32, f16 or bf16");
    d.dtype = YP_ELEM_F32;
    const float *nulls[3] = {gxs[0], NULL, gxs[2]};
    CHECK(gpu->ops->detect_decode(gpu, &d, nulls, g_y) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "level 1");
    CHECK(gpu->sync(gpu) == 0);
    for (int l = 0; l < 3; l++) free(xs[l]), gpu->mem_free(gpu, gxs[l]);
    free(y_c), free(y_g), gpu->mem_free(gpu, g_y);
}

/* ---- loss_level ---- */

/* One level on both backends. Element math is the same fp32 (the CIoU from one text); the
 * differences are expf/log1pf ulps and the order of the sums (double; the gradients of positives
 * sharing a cell add in float in another order): terms to rtol 1e-5, each gradient and
 * objectness target to 1e-5 relative plus 1e-5 of the tensor's scale. */
static void loss_case(int nc, int level, int n_pos, int train) {
    yp_loss_desc d = yp_test_loss_desc(nc);
    const int no = nc + 5;
    const int64_t slots = d.batch * d.grid_h[level] * d.grid_w[level] * d.cfg.na, np = slots * no;
    fprintf(stderr, "loss: nc %d, level %d, %d positives%s\n", nc, level, n_pos, train ? "" : ", no gradient");
    float *pred = rand_host(np, 300 + (uint64_t)nc, -3, 3);
    yp_loss_target *pos = yp_test_positives(&d, level, n_pos, 400 + (uint64_t)n_pos);
    float *om_c = host_buf(slots), *dp_c = host_buf(np), *om_g = host_buf(slots), *dp_g = host_buf(np);
    REQUIRE(pred && pos && om_c && dp_c && om_g && dp_g);
    yp_loss_terms tc, tg;
    REQUIRE(ok(cpu, cpu->ops->loss_level(cpu, &d, level, pred, pos, n_pos, om_c, train ? dp_c : NULL, &tc)));

    float *g_pred = to_device(pred, np), *g_om = nan_device(slots), *g_dp = nan_device(np);
    yp_loss_target *g_pos = gpu->mem_alloc(gpu, (size_t)(n_pos > 0 ? n_pos : 1) * sizeof *g_pos);
    REQUIRE(g_pred && g_om && g_dp && g_pos);
    REQUIRE(n_pos == 0 ||
            gpu->mem_copy(gpu, g_pos, pos, (size_t)n_pos * sizeof *pos, YP_COPY_HOST_TO_DEVICE) == 0);
    REQUIRE(ok(gpu, gpu->ops->loss_level(gpu, &d, level, g_pred, g_pos, n_pos, g_om, train ? g_dp : NULL, &tg)));
    fprintf(stderr, "  terms cpu box %.9g obj %.9g cls %.9g, cuda box %.9g obj %.9g cls %.9g\n", tc.box, tc.obj,
            tc.cls, tg.box, tg.obj, tg.cls);
    CHECK(fabs(tg.box - tc.box) <= 1e-5 * fabs(tc.box) + 1e-12);
    CHECK(fabs(tg.obj - tc.obj) <= 1e-5 * fabs(tc.obj) + 1e-12);
    CHECK(fabs(tg.cls - tc.cls) <= 1e-5 * fabs(tc.cls) + 1e-12);
    if (n_pos == 0) CHECK(tg.box == 0.0 && tg.cls == 0.0);
    if (nc == 1) CHECK(tg.cls == 0.0);
    REQUIRE(from_device(om_g, g_om, slots) == 0);
    CHECK_EQ_I64(mismatches("loss objectness targets", om_g, om_c, slots, 1e-5, 1e-6), 0);
    if (train) {
        REQUIRE(from_device(dp_g, g_dp, np) == 0);
        CHECK_EQ_I64(mismatches("loss gradient", dp_g, dp_c, np, 1e-5, 1e-5 * max_abs(dp_c, np) + 1e-9), 0);
    }
    CHECK(gpu->sync(gpu) == 0);
    gpu->mem_free(gpu, g_pred), gpu->mem_free(gpu, g_om), gpu->mem_free(gpu, g_dp), gpu->mem_free(gpu, g_pos);
    free(pred), free(pos), free(om_c), free(dp_c), free(om_g), free(dp_g);
}

static void test_loss_level(void) {
    loss_case(3, 1, 12, 1);
    loss_case(3, 0, 40, 1);
    loss_case(3, 2, 7, 0);
    loss_case(1, 1, 9, 1); /* one class: no class term */
    loss_case(3, 1, 0, 1); /* no positives: objectness only */
}

static void test_loss_errors(void) {
    yp_loss_desc d = yp_test_loss_desc(3);
    const int level = 1;
    const int64_t slots = d.batch * d.grid_h[level] * d.grid_w[level] * d.cfg.na, np = slots * 8;
    yp_loss_target *pos = yp_test_positives(&d, level, 4, 7);
    REQUIRE(pos);
    pos[2].gi = (int32_t)d.grid_w[level]; /* one column past the grid */
    float *g_pred = nan_device(np), *g_om = nan_device(slots), *g_dp = nan_device(np);
    yp_loss_target *g_pos = gpu->mem_alloc(gpu, 4 * sizeof *g_pos);
    REQUIRE(g_pred && g_om && g_dp && g_pos);
    REQUIRE(gpu->mem_copy(gpu, g_pos, pos, 4 * sizeof *pos, YP_COPY_HOST_TO_DEVICE) == 0);
    yp_loss_terms t;
    CHECK(gpu->ops->loss_level(gpu, &d, level, g_pred, g_pos, 4, g_om, g_dp, &t) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "positive 2");
    CHECK_STR_HAS(gpu->last_error(gpu), "outside level 1");
    CHECK(gpu->ops->loss_level(gpu, &d, 3, g_pred, g_pos, 0, g_om, g_dp, &t) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "out of range");
    d.dtype = YP_ELEM_COUNT; /* F16 and BF16 run (test_cuda_lowp_norm); no other value does */
    CHECK(gpu->ops->loss_level(gpu, &d, level, g_pred, g_pos, 0, g_om, g_dp, &t) == -1);
    CHECK_STR_HAS(gpu->last_error(gpu), "loss_level: element type 3 is not f32, f16 or bf16");
    CHECK(gpu->sync(gpu) == 0);
    gpu->mem_free(gpu, g_pred), gpu->mem_free(gpu, g_om), gpu->mem_free(gpu, g_dp), gpu->mem_free(gpu, g_pos);
    free(pos);
}

int main(void) {
    int rc = yp_test_cuda_open(&gpu, &cpu, 1);
    if (rc) return rc;
    YP_RUN(test_conv_1x1);
    YP_RUN(test_conv_3x3_s1);
    YP_RUN(test_conv_3x3_s2);
    YP_RUN(test_conv_6x6_s2);
    YP_RUN(test_conv_detect_head);
    YP_RUN(test_conv_grouped);
    YP_RUN(test_conv_cross);
    YP_RUN(test_conv_errors);
    YP_RUN(test_detect_decode);
    YP_RUN(test_loss_level);
    YP_RUN(test_loss_errors);
    yp_backend_free(cpu);
    yp_backend_free(gpu);
    return yp_test_summary();
}
