/* test_cpu_conv.c - the CPU backend's conv2d and batchnorm2d (kernels/yp_ops.h), forward and
 * backward, against PyTorch references (tests/data/ops), central finite differences in double on
 * tiny shapes, the beta (overwrite/accumulate) contract and argument errors. */
#include <omp.h>

#include "cpu_conv_case.h"

/* ---- conv ---- */

static yp_conv_desc conv_desc(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int k, int s, int p) {
    return conv_desc_hw(n, cin, h, w, cout, k, k, s, s, p, p);
}

static void test_conv_k3s1p1(void) {
    conv_fixture_case("conv_k3s1p1", conv_desc(2, 4, 8, 8, 6, 3, 1, 1), 0);
}
static void test_conv_k3s2p1(void) {
    yp_conv_desc d = conv_desc(2, 4, 9, 7, 6, 3, 2, 1);
    int64_t per_image, fixed;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_BACKWARD, &per_image, &fixed) == 0);
    CHECK_EQ_I64(per_image, 9 * 7 * 4); /* one image of dx: direct backward-data accumulates image by image */
    conv_fixture_case("conv_k3s2p1", d, 0);
}
static void test_conv_k6s2p2(void) {
    conv_fixture_case("conv_k6s2p2", conv_desc(2, 3, 16, 16, 8, 6, 2, 2), 0);
}
static void test_conv_k1_bias(void) {
    yp_conv_desc d = conv_desc(2, 8, 5, 6, 5, 1, 1, 0);
    int64_t per_image, fixed;
    CHECK(ops->conv2d_scratch(cpu, &d, 1, YP_CONV_BACKWARD, &per_image, &fixed) == 0);
    CHECK_EQ_I64(per_image, 0); /* accumulating backward-data is one matmul adding into dx */
    conv_fixture_case("conv_k1_bias", d, 1);
}

/* Direct convolution in double (NHWC x, OIHW w): the independent reference of the FD tests. */
static void conv_ref(const yp_conv_desc *d, const double *x, const double *w, double *y) {
    for (int64_t i = 0; i < d->out.n; i++)
        for (int64_t oy = 0; oy < d->out.h; oy++)
            for (int64_t ox = 0; ox < d->out.w; ox++)
                for (int64_t co = 0; co < d->out.c; co++) {
                    double acc = 0;
                    for (int64_t ci = 0; ci < d->in.c; ci++)
                        for (int kh = 0; kh < d->kh; kh++)
                            for (int kw = 0; kw < d->kw; kw++) {
                                int64_t iy = oy * d->sh - d->ph + kh, ix = ox * d->sw - d->pw + kw;
                                if (iy < 0 || iy >= d->in.h || ix < 0 || ix >= d->in.w)
                                    continue;
                                acc += x[((i * d->in.h + iy) * d->in.w + ix) * d->in.c + ci] *
                                       w[((co * d->in.c + ci) * d->kh + kh) * d->kw + kw];
                            }
                    y[((i * d->out.h + oy) * d->out.w + ox) * d->out.c + co] = acc;
                }
}

/* The gradients of L = sum(dy * conv(x, w)) in double, by the same loops as conv_ref:
 * dx[pixel, ci] = sum dy * w and dw[co, ci, kh, kw] = sum dy * x over the windows. */
static void conv_ref_grads(const yp_conv_desc *d, const double *x, const double *w, const double *dy, double *dx,
                           double *dw) {
    memset(dx, 0, (size_t)dims_count(d->in) * sizeof *dx);
    memset(dw, 0, (size_t)(d->out.c * d->in.c * d->kh * d->kw) * sizeof *dw);
    for (int64_t i = 0; i < d->out.n; i++)
        for (int64_t oy = 0; oy < d->out.h; oy++)
            for (int64_t ox = 0; ox < d->out.w; ox++)
                for (int64_t co = 0; co < d->out.c; co++) {
                    double g = dy[((i * d->out.h + oy) * d->out.w + ox) * d->out.c + co];
                    for (int64_t ci = 0; ci < d->in.c; ci++)
                        for (int kh = 0; kh < d->kh; kh++)
                            for (int kw = 0; kw < d->kw; kw++) {
                                int64_t iy = oy * d->sh - d->ph + kh, ix = ox * d->sw - d->pw + kw;
                                if (iy < 0 || iy >= d->in.h || ix < 0 || ix >= d->in.w)
                                    continue;
                                int64_t xi = ((i * d->in.h + iy) * d->in.w + ix) * d->in.c + ci;
                                int64_t wi = ((co * d->in.c + ci) * d->kh + kh) * d->kw + kw;
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                }
}

/* Checks each named error against the 1e-4, printing them all (with -v, or on failure)
 * after the line's label. */
static void check_errors(const char *label, int n, const char *const *names, const double *errs) {
    int bad = 0;
    for (int i = 0; i < n; i++) bad |= !(errs[i] <= 1e-4);
    if (verbose || bad) {
        printf("    %s:", label);
        for (int i = 0; i < n; i++) printf("%s %s %.3g", i ? "," : "", names[i], errs[i]);
        printf("\n");
    }
    for (int i = 0; i < n; i++) CHECK(errs[i] <= 1e-4);
}

/* L = sum(r * conv(x, w)) in double. */
static double conv_loss(const yp_conv_desc *d, const double *x, const double *w, const double *r, double *ybuf) {
    conv_ref(d, x, w, ybuf);
    double l = 0;
    for (int64_t i = 0; i < dims_count(d->out); i++)
        l += r[i] * ybuf[i];
    return l;
}

/* Central differences of L = sum(r * conv(x, w)) in double against backward-data (dy = r) and
 * backward-weights. L is linear in x and in w, so the difference quotient is exact up to double
 * rounding (~1e-13); what remains is the kernels' fp32 error, ~1e-6 of the largest gradient. The
 * forward is checked against the double reference first (same bound). */
static void conv_fd(yp_conv_desc d) {
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = d.out.c * d.in.c * d.kh * d.kw;
    float *x = rand_buf(nx, 21, -1, 1), *w = rand_buf(nw, 22, -0.5, 0.5), *r = rand_buf(ny, 23, -1, 1);
    double *xd = malloc((size_t)nx * sizeof *xd), *wd = malloc((size_t)nw * sizeof *wd);
    double *rd = malloc((size_t)ny * sizeof *rd), *yd = malloc((size_t)ny * sizeof *yd);
    double *gx = malloc((size_t)nx * sizeof *gx), *gw = malloc((size_t)nw * sizeof *gw);
    int64_t wsn = conv_scratch_floats(&d, 0);
    float *ws = nan_buf(wsn), *y = nan_buf(ny), *dx = nan_buf(nx), *dw = nan_buf(nw);
    for (int64_t i = 0; i < nx; i++)
        xd[i] = x[i];
    for (int64_t i = 0; i < nw; i++)
        wd[i] = w[i];
    for (int64_t i = 0; i < ny; i++)
        rd[i] = r[i];
    const double h = 0.25;
    for (int64_t i = 0; i < nx; i++) {
        double keep = xd[i];
        xd[i] = keep + h;
        double lp = conv_loss(&d, xd, wd, rd, yd);
        xd[i] = keep - h;
        double lm = conv_loss(&d, xd, wd, rd, yd);
        xd[i] = keep;
        gx[i] = (lp - lm) / (2 * h);
    }
    for (int64_t i = 0; i < nw; i++) {
        double keep = wd[i];
        wd[i] = keep + h;
        double lp = conv_loss(&d, xd, wd, rd, yd);
        wd[i] = keep - h;
        double lm = conv_loss(&d, xd, wd, rd, yd);
        wd[i] = keep;
        gw[i] = (lp - lm) / (2 * h);
    }
    conv_ref(&d, xd, wd, yd);
    CHECK(ops->conv2d_forward(cpu, &d, x, w, NULL, y, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_data(cpu, &d, r, w, dx, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, r, dw, NULL, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    char label[96];
    snprintf(label, sizeof label, "conv k%dx%d s%dx%d p%dx%d %lldx%lld", d.kh, d.kw, d.sh, d.sw, d.ph, d.pw,
             (long long)d.in.h, (long long)d.in.w);
    const char *names[] = {"y", "dx (fd)", "dw (fd)"};
    double errs[] = {rel_err_d(y, yd, ny), rel_err_d(dx, gx, nx), rel_err_d(dw, gw, nw)};
    check_errors(label, 3, names, errs);
    free(x), free(w), free(r), free(xd), free(wd), free(rd), free(yd), free(gx), free(gw);
    free(ws), free(y), free(dx), free(dw);
}

/* Geometries beyond YOLOv5's (padding on every side, strides that skip input, even kernels, k == 1
 * with a stride or padding, padding from k-1 down to 0, c_out > c_in) through oneDNN's direct
 * convolutions, and a pointwise one. */
static void test_conv_finite_diff(void) {
    conv_fd(conv_desc(2, 3, 5, 5, 4, 3, 2, 1));
    conv_fd(conv_desc(1, 2, 6, 5, 3, 3, 1, 1));
    conv_fd(conv_desc(1, 2, 5, 6, 3, 3, 1, 0));
    conv_fd(conv_desc(1, 3, 4, 5, 2, 3, 1, 2));
    conv_fd(conv_desc(2, 3, 6, 6, 2, 2, 1, 0));
    conv_fd(conv_desc(2, 3, 5, 4, 3, 1, 2, 0));
    conv_fd(conv_desc(1, 3, 3, 3, 2, 1, 1, 1));
    conv_fd(conv_desc(2, 4, 3, 4, 3, 1, 1, 0));
    conv_fd(conv_desc(1, 2, 4, 4, 2, 5, 3, 2));
}

/* Non-square kernels, strides and padding (CrossConv's 1xk then kx1, strided on one axis each),
 * and one whose every extent differs on the two axes. */
static void test_conv_finite_diff_hw(void) {
    conv_fd(conv_desc_hw(2, 3, 5, 7, 4, 1, 3, 1, 2, 0, 1));
    conv_fd(conv_desc_hw(2, 4, 7, 4, 3, 3, 1, 2, 1, 1, 0));
    conv_fd(conv_desc_hw(1, 2, 6, 7, 3, 2, 5, 3, 1, 0, 2));
}

/* Shapes the backend runs another way than the tiny fixtures: a 3x3 stride-1 conv of 16 -> 32
 * channels on a 24x20 map (on an AVX-512 machine oneDNN's Winograd, in its blocked layout, with
 * reorders in and out), a 1x1 conv of 48 -> 16 channels and a stride-2 3x3 one, all against the
 * double loops, beta 0 then beta 1. Winograd's transforms round more than a direct sum: ~1e-5 of
 * the largest value here; the bound is the 1e-4. */
static void conv_large_case(yp_conv_desc d) {
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = d.out.c * d.in.c * d.kh * d.kw;
    float *x = rand_buf(nx, 41, -1, 1), *w = rand_buf(nw, 42, -0.2, 0.2), *dy = rand_buf(ny, 43, -1, 1);
    double *xd = malloc((size_t)nx * sizeof *xd), *wd = malloc((size_t)nw * sizeof *wd);
    double *dyd = malloc((size_t)ny * sizeof *dyd), *yd = malloc((size_t)ny * sizeof *yd);
    double *dxd = malloc((size_t)nx * sizeof *dxd), *dwd = malloc((size_t)nw * sizeof *dwd);
    int64_t per_image = 0, fixed = 0;
    CHECK(conv_scratch_both(&d, 0, &per_image, &fixed) == 0);
    float *ws = nan_buf(per_image + fixed + 1), *y = nan_buf(ny), *dx = nan_buf(nx), *dw = nan_buf(nw);
    for (int64_t i = 0; i < nx; i++) xd[i] = x[i];
    for (int64_t i = 0; i < nw; i++) wd[i] = w[i];
    for (int64_t i = 0; i < ny; i++) dyd[i] = dy[i];
    conv_ref(&d, xd, wd, yd);
    conv_ref_grads(&d, xd, wd, dyd, dxd, dwd);
    CHECK(ops->conv2d_forward(cpu, &d, x, w, NULL, y, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, NULL, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    double errs[5] = {rel_err_d(y, yd, ny), rel_err_d(dx, dxd, nx), rel_err_d(dw, dwd, nw)};
    /* beta 1 on top of the first results: twice the reference */
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 1.0f, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, NULL, 1.0f, WS_ARGS(&d, 0, ws)) == 0);
    for (int64_t i = 0; i < nx; i++) dxd[i] *= 2;
    for (int64_t i = 0; i < nw; i++) dwd[i] *= 2;
    errs[3] = rel_err_d(dx, dxd, nx), errs[4] = rel_err_d(dw, dwd, nw);
    /* both passes in one call (sharing the reorder of dy) give what the two calls gave */
    float *dx1 = nan_buf(nx), *dw1 = nan_buf(nw), *dx2 = nan_buf(nx), *dw2 = nan_buf(nw);
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx1, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw1, NULL, 0.0f, WS_ARGS(&d, 0, ws)) == 0);
    CHECK(ops->conv2d_backward(cpu, &d, x, dy, w, dx2, dw2, NULL, (yp_betas){0.0f, 0.0f}, WS_ARGS(&d, 0, ws)) == 0);
    CHECK_CLOSE("conv2d_backward dx", dx2, dx1, nx, 0.0);
    CHECK_CLOSE("conv2d_backward dw", dw2, dw1, nw, 0.0);
    free(dx1), free(dw1), free(dx2), free(dw2);
    char label[128];
    snprintf(label, sizeof label, "conv %lld->%lld k%dx%d s%dx%d on %lldx%lld (scratch %lld + %lld floats)",
             (long long)d.in.c, (long long)d.out.c, d.kh, d.kw, d.sh, d.sw, (long long)d.in.h, (long long)d.in.w,
             (long long)per_image, (long long)fixed);
    const char *names[] = {"y", "dx", "dw", "dx (beta 1)", "dw (beta 1)"};
    check_errors(label, 5, names, errs);
    free(x), free(w), free(dy), free(xd), free(wd), free(dyd), free(yd), free(dxd), free(dwd);
    free(ws), free(y), free(dx), free(dw);
}

static void test_conv_large(void) {
    conv_large_case(conv_desc(2, 16, 24, 20, 32, 3, 1, 1));
    conv_large_case(conv_desc(2, 48, 12, 10, 16, 1, 1, 0));
    conv_large_case(conv_desc(3, 32, 13, 11, 64, 3, 2, 1));
    conv_large_case(conv_desc_hw(2, 32, 12, 14, 32, 1, 3, 1, 2, 0, 1)); /* C3x's CrossConv: 1x3 */
    conv_large_case(conv_desc_hw(2, 32, 12, 7, 48, 3, 1, 2, 1, 1, 0));  /* and 3x1 */
}

static void test_conv_errors(void) {
    yp_conv_desc d = conv_desc(1, 4, 4, 4, 4, 3, 1, 1);
    static _Alignas(64) float buf[256], ws[1 << 14];
    int64_t per_image, fixed;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_FORWARD, &per_image, &fixed) == 0);
    CHECK(per_image + fixed <= (int64_t)(sizeof ws / sizeof *ws)); /* what ws below holds */
    d.groups = 3; /* grouped convs run (test_cpu_conv_groups.c); groups must divide the channels */
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_FORWARD, &per_image, &fixed) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "groups");
    CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "groups");
    CHECK(ops->conv2d_backward_data(cpu, &d, buf, buf, buf, 0.0f, ws, ws) == -1);
    CHECK(ops->conv2d_backward_weights(cpu, &d, buf, buf, buf, NULL, 0.0f, ws, ws) == -1);
    d.groups = 1;
    d.out.h = 5;
    CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "does not follow");
    d.out.h = 4;
    if (fixed) { /* the backend wants scratch: refusing to run without it names the plan */
        CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, NULL, NULL) == -1);
        CHECK_STR_HAS(cpu->last_error(cpu), "no scratch given");
    }
    CHECK(ops->conv2d_backward_data(cpu, &d, buf, buf, buf, 1.0f, NULL, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "one image of scratch");
    CHECK(ops->conv2d_forward(cpu, &d, NULL, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL");
}

/* The instance model: the scratch query is pure and depends on the instance only (not on the
 * caller's OpenMP setting, which every build restores), conv2d_prepare changes no answer, two
 * instances with different thread counts keep their own primitives and compute the same conv,
 * and freeing an instance frees its primitives (ASan/LSan builds check that). */
static void test_conv_instances(void) {
    const yp_conv_desc d = conv_desc(2, 16, 24, 20, 32, 3, 1, 1);
    char why[256] = "";
    yp_backend *one = yp_backend_cpu_new(&(yp_cpu_config){1}, why, sizeof why);
    yp_backend *three = yp_backend_cpu_new(&(yp_cpu_config){3}, why, sizeof why);
    REQUIRE(one && three);
    omp_set_num_threads(2);
    int64_t p[2][2], f[2][2], p_again, f_again;
    for (int st = 0; st < 2; st++) {
        CHECK(ops->conv2d_scratch(one, &d, 0, (yp_conv_stage)st, &p[st][0], &f[st][0]) == 0);
        CHECK(omp_get_max_threads() == 2); /* the caller's setting, restored */
        omp_set_num_threads(3);
        CHECK(ops->conv2d_scratch(one, &d, 0, (yp_conv_stage)st, &p_again, &f_again) == 0);
        CHECK_EQ_I64(p_again, p[st][0]);
        CHECK_EQ_I64(f_again, f[st][0]);
        CHECK(ops->conv2d_prepare(one, &d, 0, (yp_conv_stage)st) == 0);
        CHECK(omp_get_max_threads() == 3);
        CHECK(ops->conv2d_scratch(one, &d, 0, (yp_conv_stage)st, &p_again, &f_again) == 0);
        CHECK_EQ_I64(p_again, p[st][0]);
        CHECK_EQ_I64(f_again, f[st][0]);
        CHECK(ops->conv2d_scratch(three, &d, 0, (yp_conv_stage)st, &p[st][1], &f[st][1]) == 0);
        omp_set_num_threads(2);
    }
    if (verbose)
        printf("    fixed scratch (floats) fwd/bwd: 1 thread %lld/%lld, 3 threads %lld/%lld\n", (long long)f[0][0],
               (long long)f[1][0], (long long)f[0][1], (long long)f[1][1]);
    /* thread_init gives the calling thread the instance's count */
    three->thread_init(three);
    CHECK(omp_get_max_threads() == 3);
    one->thread_init(one);
    CHECK(omp_get_max_threads() == 1);

    /* the same conv on both instances, alternately, each with the scratch it asked for */
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = d.out.c * d.in.c * d.kh * d.kw;
    float *x = rand_buf(nx, 91, -1, 1), *w = rand_buf(nw, 92, -1, 1), *y1 = nan_buf(ny), *y3 = nan_buf(ny);
    float *ws1 = nan_buf(p[0][0] + f[0][0] + 16), *ws3 = nan_buf(p[0][1] + f[0][1] + 16);
    for (int rep = 0; rep < 2; rep++) {
        CHECK(ops->conv2d_forward(one, &d, x, w, NULL, y1, p[0][0] ? ws1 : NULL,
                                  f[0][0] ? ws1 + (p[0][0] + 15) / 16 * 16 : NULL) == 0);
        CHECK(ops->conv2d_forward(three, &d, x, w, NULL, y3, p[0][1] ? ws3 : NULL,
                                  f[0][1] ? ws3 + (p[0][1] + 15) / 16 * 16 : NULL) == 0);
        CHECK_CLOSE("conv on 1 vs 3 threads", y3, y1, ny, 1e-5);
    }
    free(x), free(w), free(y1), free(y3), free(ws1), free(ws3);
    yp_backend_free(one);
    yp_backend_free(three);
    yp_backend_free(NULL);
    cpu->thread_init(cpu);
}

/* The CPU runs fp32 only: any other element type in a descriptor is refused, by the scratch
 * query as by the ops, with the op and the type named. */
static void test_conv_bn_dtype(void) {
    yp_conv_desc d = conv_desc(1, 4, 4, 4, 4, 3, 1, 1);
    static _Alignas(64) float buf[256], ws[1 << 14];
    int64_t per_image, fixed;
    d.dtype = YP_ELEM_F16;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_FORWARD, &per_image, &fixed) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu),
                  "cpu backend: conv2d scratch: dtype f16 not supported; the CPU runs fp32 plans");
    CHECK(ops->conv2d_prepare(cpu, &d, 0, YP_CONV_FORWARD) == -1);
    d.dtype = YP_ELEM_BF16;
    CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "conv2d forward: dtype bf16 not supported");
    CHECK(ops->conv2d_backward(cpu, &d, buf, buf, buf, buf, buf, NULL, (yp_betas){0.0f, 0.0f}, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "dtype bf16");
    float rm[2] = {0}, rv[2] = {1, 1};
    yp_bn_desc b = {.dims = {1, 2, 2, 2}, .eps = 1e-3f, .momentum = 0.03f, .dtype = YP_ELEM_F16};
    CHECK(ops->bn_forward_train(cpu, &b, buf, buf, buf, buf, buf, rm, rv) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: bn_forward_train: dtype f16 not supported");
    CHECK(ops->bn_silu_backward(cpu, &b, buf, buf, buf, buf, buf, buf, NULL) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "bn_silu_backward: dtype f16");
}

/* ---- batch norm ---- */

/* Training forward against PyTorch (F.batch_norm(training=True), float64): y, the saved stats, the
 * running stats after the momentum-0.03 update with the unbiased variance; then bn_apply with the
 * saved stats gives y again, and backward gives dx, dgamma, dbeta (beta 0 on NaN, then beta 1).
 * Stats are summed in double, so the errors are fp32 rounding of the outputs (~1e-7); 1e-4 is the
 * issue's bound. */
static void bn_train_fixture(const char *cs, yp_dims dims) {
    const int64_t n = dims_count(dims), c = dims.c;
    yp_bn_desc d = {.dims = dims, .eps = 1e-3f, .momentum = 0.03f};
    float *x = fxc(cs, "x", n), *gamma = fxc(cs, "gamma", c), *beta = fxc(cs, "beta", c);
    float *rm = fxc(cs, "rm0", c), *rv = fxc(cs, "rv0", c), *y_ref = fxc(cs, "y", n);
    float *mean_ref = fxc(cs, "mean", c), *invstd_ref = fxc(cs, "invstd", c), *rm_ref = fxc(cs, "rm1", c);
    float *rv_ref = fxc(cs, "rv1", c), *dy = fxc(cs, "dy", n), *dx_ref = fxc(cs, "dx", n);
    float *dg_ref = fxc(cs, "dgamma", c), *db_ref = fxc(cs, "dbeta", c);
    float *y = nan_buf(n), *y2 = nan_buf(n), *stats = nan_buf(2 * c), *dx = nan_buf(n), *dg = nan_buf(c),
          *db = nan_buf(c);
    char what[64];
    if (!x || !gamma || !beta || !rm || !rv || !y_ref || !mean_ref || !invstd_ref || !rm_ref || !rv_ref || !dy ||
        !dx_ref || !dg_ref || !db_ref)
        goto done;
    CHECK(ops->bn_forward_train(cpu, &d, x, gamma, beta, y, stats, rm, rv) == 0);
    snprintf(what, sizeof what, "%s y", cs);
    CHECK_CLOSE(what, y, y_ref, n, 1e-4);
    snprintf(what, sizeof what, "%s mean", cs);
    CHECK_CLOSE(what, stats, mean_ref, c, 1e-4);
    snprintf(what, sizeof what, "%s invstd", cs);
    CHECK_CLOSE(what, stats + c, invstd_ref, c, 1e-4);
    snprintf(what, sizeof what, "%s running_mean", cs);
    CHECK_CLOSE(what, rm, rm_ref, c, 1e-4);
    snprintf(what, sizeof what, "%s running_var", cs);
    CHECK_CLOSE(what, rv, rv_ref, c, 1e-4);

    /* Recomputation from the saved stats reproduces the training output (both fold to x*a + b;
     * a and b come from the double stats there and from their float copies here: ~1e-7). */
    CHECK(ops->bn_apply(cpu, &d, x, gamma, beta, stats, y2) == 0);
    snprintf(what, sizeof what, "%s apply == train y", cs);
    CHECK_CLOSE(what, y2, y, n, 1e-6);

    CHECK(ops->bn_backward(cpu, &d, x, stats, gamma, dy, NULL, dx, dg, db, (yp_betas){0.0f, 0.0f}) == 0);
    snprintf(what, sizeof what, "%s dx", cs);
    CHECK_CLOSE(what, dx, dx_ref, n, 1e-4);
    snprintf(what, sizeof what, "%s dgamma", cs);
    CHECK_CLOSE(what, dg, dg_ref, c, 1e-4);
    snprintf(what, sizeof what, "%s dbeta", cs);
    CHECK_CLOSE(what, db, db_ref, c, 1e-4);

    float *dx0 = rand_buf(n, 31, -1, 1), *dg0 = rand_buf(c, 32, -1, 1), *db0 = rand_buf(c, 33, -1, 1);
    float *dx_want = sum_buf(dx0, dx_ref, n), *dg_want = sum_buf(dg0, dg_ref, c), *db_want = sum_buf(db0, db_ref, c);
    memcpy(dx, dx0, (size_t)n * sizeof *dx);
    memcpy(dg, dg0, (size_t)c * sizeof *dg);
    memcpy(db, db0, (size_t)c * sizeof *db);
    CHECK(ops->bn_backward(cpu, &d, x, stats, gamma, dy, NULL, dx, dg, db, (yp_betas){1.0f, 1.0f}) == 0);
    snprintf(what, sizeof what, "%s dx (beta 1)", cs);
    CHECK_CLOSE(what, dx, dx_want, n, 1e-4);
    snprintf(what, sizeof what, "%s dgamma (beta 1)", cs);
    CHECK_CLOSE(what, dg, dg_want, c, 1e-4);
    snprintf(what, sizeof what, "%s dbeta (beta 1)", cs);
    CHECK_CLOSE(what, db, db_want, c, 1e-4);
    /* No parameter gradients wanted: NULL dgamma/dbeta, dx unchanged. */
    CHECK(ops->bn_backward(cpu, &d, x, stats, gamma, dy, NULL, dx, NULL, NULL, (yp_betas){0.0f, 0.0f}) == 0);
    snprintf(what, sizeof what, "%s dx (no dgamma)", cs);
    CHECK_CLOSE(what, dx, dx_ref, n, 1e-4);
    free(dx0), free(dg0), free(db0), free(dx_want), free(dg_want), free(db_want);
done:
    free(x), free(gamma), free(beta), free(rm), free(rv), free(y_ref), free(mean_ref), free(invstd_ref);
    free(rm_ref), free(rv_ref), free(dy), free(dx_ref), free(dg_ref), free(db_ref);
    free(y), free(y2), free(stats), free(dx), free(dg), free(db);
}

static void test_bn_train(void) {
    bn_train_fixture("bn_train", (yp_dims){2, 5, 4, 6});
}
static void test_bn_train_wide(void) {
    bn_train_fixture("bn_train_wide", (yp_dims){2, 2, 3, 300}); /* two channel blocks */
}

/* Eval: y = gamma*(x - running_mean)/sqrt(running_var + eps) + beta; running stats untouched. */
static void test_bn_eval(void) {
    yp_dims dims = {2, 5, 4, 6};
    const int64_t n = dims_count(dims), c = dims.c;
    yp_bn_desc d = {.dims = dims, .eps = 1e-3f, .momentum = 0.03f};
    float *x = fx("bn_eval.x", n), *gamma = fx("bn_eval.gamma", c), *beta = fx("bn_eval.beta", c);
    float *rm = fx("bn_eval.rm", c), *rv = fx("bn_eval.rv", c), *y_ref = fx("bn_eval.y", n), *y = nan_buf(n);
    if (x && gamma && beta && rm && rv && y_ref) {
        CHECK(ops->bn_forward_eval(cpu, &d, x, gamma, beta, y, rm, rv) == 0);
        CHECK_CLOSE("bn_eval y", y, y_ref, n, 1e-4);
    }
    free(x), free(gamma), free(beta), free(rm), free(rv), free(y_ref), free(y);
}

/* Training-mode BN in double over NHWC rows: y = gamma*(x - mean)/sqrt(var + eps) + beta. */
static void bn_ref(yp_dims dims, double eps, const double *x, const double *g, const double *b, double *y) {
    const int64_t rows = dims.n * dims.h * dims.w, c = dims.c;
    for (int64_t j = 0; j < c; j++) {
        double m = 0, v = 0;
        for (int64_t r = 0; r < rows; r++)
            m += x[r * c + j];
        m /= (double)rows;
        for (int64_t r = 0; r < rows; r++)
            v += (x[r * c + j] - m) * (x[r * c + j] - m);
        v /= (double)rows;
        for (int64_t r = 0; r < rows; r++)
            y[r * c + j] = g[j] * (x[r * c + j] - m) / sqrt(v + eps) + b[j];
    }
}

static double bn_loss(yp_dims dims, const double *x, const double *g, const double *b, const double *r,
                      double *ybuf) {
    bn_ref(dims, 1e-3, x, g, b, ybuf);
    double l = 0;
    for (int64_t i = 0; i < dims_count(dims); i++)
        l += r[i] * ybuf[i];
    return l;
}

/* Central differences of L = sum(r * bn_train(x)) in double with h = 1e-4: truncation ~h^2 |L'''|
 * (~1e-8 here) and rounding ~1e-16 |L| / h (~1e-11) are far below the kernel's fp32 error (~1e-6);
 * 1e-4 is the bound. */
static void test_bn_finite_diff(void) {
    yp_dims dims = {2, 3, 2, 3};
    const int64_t n = dims_count(dims), c = dims.c;
    yp_bn_desc d = {.dims = dims, .eps = 1e-3f, .momentum = 0.1f};
    float *x = rand_buf(n, 41, -2, 3), *g = rand_buf(c, 42, 0.5, 1.5), *b = rand_buf(c, 43, -0.5, 0.5);
    float *r = rand_buf(n, 44, -1, 1), *y = nan_buf(n), *stats = nan_buf(2 * c), *dx = nan_buf(n);
    float *dg = nan_buf(c), *db = nan_buf(c), rm[3] = {0, 0, 0}, rv[3] = {1, 1, 1};
    double xd[36], gd[3], bd[3], rd[36], yd[36], gx[36], gg[3], gb[3];
    for (int64_t i = 0; i < n; i++)
        xd[i] = x[i], rd[i] = r[i];
    for (int64_t j = 0; j < c; j++)
        gd[j] = g[j], bd[j] = b[j];
    const double h = 1e-4;
    double *vars[3] = {xd, gd, bd}, *grads[3] = {gx, gg, gb};
    int64_t counts[3] = {n, c, c};
    for (int v = 0; v < 3; v++)
        for (int64_t i = 0; i < counts[v]; i++) {
            double keep = vars[v][i];
            vars[v][i] = keep + h;
            double lp = bn_loss(dims, xd, gd, bd, rd, yd);
            vars[v][i] = keep - h;
            double lm = bn_loss(dims, xd, gd, bd, rd, yd);
            vars[v][i] = keep;
            grads[v][i] = (lp - lm) / (2 * h);
        }
    bn_ref(dims, 1e-3, xd, gd, bd, yd);
    CHECK(ops->bn_forward_train(cpu, &d, x, g, b, y, stats, rm, rv) == 0);
    CHECK(ops->bn_backward(cpu, &d, x, stats, g, r, NULL, dx, dg, db, (yp_betas){0.0f, 0.0f}) == 0);
    double ey = rel_err_d(y, yd, n), ex = rel_err_d(dx, gx, n), eg = rel_err_d(dg, gg, c), eb = rel_err_d(db, gb, c);
    if (verbose || !(ey <= 1e-4 && ex <= 1e-4 && eg <= 1e-4 && eb <= 1e-4))
        printf("    bn fd: y %.3g, dx %.3g, dgamma %.3g, dbeta %.3g\n", ey, ex, eg, eb);
    CHECK(ey <= 1e-4);
    CHECK(ex <= 1e-4);
    CHECK(eg <= 1e-4);
    CHECK(eb <= 1e-4);
    free(x), free(g), free(b), free(r), free(y), free(stats), free(dx), free(dg), free(db);
}

/* Statistics of a channel whose mean is far larger than its spread (1000 +- 0.01): the variance
 * must not cancel away (the fp32 sums run on x minus the first row). Against double. */
static void test_bn_large_mean(void) {
    yp_dims dims = {4, 16, 16, 20};
    const int64_t n = dims_count(dims), c = dims.c, rows = n / c;
    yp_bn_desc d = {.dims = dims, .eps = 1e-8f, .momentum = 0.1f};
    float *x = rand_buf(n, 61, -0.01, 0.01), *stats = nan_buf(2 * c), *rm = rand_buf(c, 62, 0, 0);
    float *rv = rand_buf(c, 63, 1, 1), *g = rand_buf(c, 64, 1, 1), *b = rand_buf(c, 65, 0, 0);
    for (int64_t i = 0; i < n; i++) x[i] += 1000.0f;
    double worst = 0;
    CHECK(ops->bn_forward_train(cpu, &d, x, g, b, NULL, stats, rm, rv) == 0);
    for (int64_t j = 0; j < c; j++) {
        double m = 0, v = 0;
        for (int64_t r = 0; r < rows; r++) m += x[r * c + j];
        m /= (double)rows;
        for (int64_t r = 0; r < rows; r++) v += (x[r * c + j] - m) * (x[r * c + j] - m);
        double want = 1.0 / sqrt(v / (double)rows + 1e-8), e = fabs(stats[c + j] - want) / want;
        worst = e > worst ? e : worst;
    }
    if (verbose) printf("    large-mean invstd: worst rel err %.3g\n", worst);
    CHECK(worst <= 1e-4);
    free(x), free(stats), free(rm), free(rv), free(g), free(b);
}

static void test_bn_errors(void) {
    float v[8] = {0}, rm[2] = {0}, rv[2] = {1, 1};
    yp_bn_desc d = {.dims = {1, 1, 1, 2}, .eps = 1e-3f, .momentum = 0.03f};
    CHECK(ops->bn_forward_train(cpu, &d, v, v, v, v, v, rm, rv) == -1); /* one value per channel */
    CHECK_STR_HAS(cpu->last_error(cpu), "more than 1 value");
    d.dims.c = 0;
    CHECK(ops->bn_forward_eval(cpu, &d, v, v, v, v, rm, rv) == -1);
    d.dims.c = 2;
    d.eps = 0.0f;
    CHECK(ops->bn_apply(cpu, &d, v, v, v, v, v) == -1);
}

/* The fused BN + SiLU entries against the two ops run one after the other: the same fp32
 * arithmetic, so equal to rounding (bound 1e-6); a 3x9x7 batch of 300 channels crosses the
 * 256-channel block (and the 16-channel vectors' tail), spans two 128-row blocks of the sums and
 * runs on the OpenMP threads. */
static void test_bn_silu_fused(void) {
    yp_dims dims = {3, 9, 7, 300};
    const int64_t n = dims_count(dims), c = dims.c;
    yp_bn_desc d = {.dims = dims, .eps = 1e-3f, .momentum = 0.03f};
    float *x = rand_buf(n, 31, -3, 4), *gamma = rand_buf(c, 32, 0.5, 1.5), *beta = rand_buf(c, 33, -1, 1);
    float *rm = rand_buf(c, 34, 0, 0), *rv = rand_buf(c, 35, 1, 1), *dy = rand_buf(n, 36, -1, 1);
    float *stats = nan_buf(2 * c), *ybn = nan_buf(n), *want = nan_buf(n), *got = nan_buf(n);
    CHECK(ops->bn_forward_train(cpu, &d, x, gamma, beta, ybn, stats, rm, rv) == 0);
    /* statistics only (y NULL) gives the same statistics */
    float *stats2 = nan_buf(2 * c);
    CHECK(ops->bn_forward_train(cpu, &d, x, gamma, beta, NULL, stats2, rm, rv) == 0);
    CHECK_CLOSE("stats without y", stats2, stats, 2 * c, 0.0);
    CHECK(cpu->ops->silu_forward(cpu, YP_ELEM_F32, ybn, want, n) == 0);
    CHECK(ops->bn_silu_apply(cpu, &d, x, gamma, beta, stats, got) == 0);
    CHECK_CLOSE("bn_silu_apply", got, want, n, 1e-6);
    CHECK(cpu->ops->silu_backward(cpu, YP_ELEM_F32, ybn, dy, want, n) == 0);
    CHECK(ops->bn_silu_backward(cpu, &d, x, gamma, beta, stats, dy, got, NULL) == 0);
    CHECK_CLOSE("bn_silu_backward", got, want, n, 1e-6);
    /* with the sums, bn_backward skips its first pass and gives the same gradients */
    double *sums = malloc((size_t)(2 * c) * sizeof *sums);
    float *dx1 = nan_buf(n), *dx2 = nan_buf(n), *dg1 = nan_buf(c), *dg2 = nan_buf(c), *db1 = nan_buf(c), *db2 = nan_buf(c);
    CHECK(ops->bn_silu_backward(cpu, &d, x, gamma, beta, stats, dy, got, sums) == 0);
    CHECK_CLOSE("bn_silu_backward with sums", got, want, n, 0.0);
    CHECK(ops->bn_backward(cpu, &d, x, stats, gamma, got, NULL, dx1, dg1, db1, (yp_betas){0.0f, 0.0f}) == 0);
    CHECK(ops->bn_backward(cpu, &d, x, stats, gamma, got, sums, dx2, dg2, db2, (yp_betas){0.0f, 0.0f}) == 0);
    CHECK_CLOSE("bn_backward from sums: dx", dx2, dx1, n, 0.0);
    CHECK_CLOSE("bn_backward from sums: dgamma", dg2, dg1, c, 0.0);
    CHECK_CLOSE("bn_backward from sums: dbeta", db2, db1, c, 0.0);
    free(sums), free(dx1), free(dx2), free(dg1), free(dg2), free(db1), free(db2);
    memcpy(got, dy, (size_t)n * sizeof *got); /* dx may alias dy */
    CHECK(ops->bn_silu_backward(cpu, &d, x, gamma, beta, stats, got, got, NULL) == 0);
    CHECK_CLOSE("bn_silu_backward in place", got, want, n, 1e-6);
    CHECK(ops->bn_silu_apply(cpu, &d, x, gamma, NULL, stats, got) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL");
    free(x), free(gamma), free(beta), free(rm), free(rv), free(dy), free(stats), free(stats2), free(ybn), free(want),
        free(got);
}

int main(int argc, char **argv) {
    int rc = cpu_ops_setup(argc, argv);
    if (rc) return rc;
    YP_RUN(test_conv_k3s1p1);
    YP_RUN(test_conv_k3s2p1);
    YP_RUN(test_conv_k6s2p2);
    YP_RUN(test_conv_k1_bias);
    YP_RUN(test_conv_finite_diff);
    YP_RUN(test_conv_finite_diff_hw);
    YP_RUN(test_conv_large);
    YP_RUN(test_conv_errors);
    YP_RUN(test_conv_instances);
    YP_RUN(test_conv_bn_dtype);
    YP_RUN(test_bn_train);
    YP_RUN(test_bn_train_wide);
    YP_RUN(test_bn_eval);
    YP_RUN(test_bn_finite_diff);
    YP_RUN(test_bn_large_mean);
    YP_RUN(test_bn_errors);
    YP_RUN(test_bn_silu_fused);
    free(fx_data);
    return yp_test_summary();
}
