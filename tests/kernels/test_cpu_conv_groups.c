/* test_cpu_conv_groups.c - the CPU backend's grouped and depthwise conv2d (the convs of YOLOv5's
 * ghost models: GhostConv's 5x5 depthwise cv2, DWConv's and GhostBottleneck's 3x3 depthwise,
 * DWConv's groups = gcd(c1, c2)), forward, backward-data and backward-weights with and without
 * bias: against PyTorch (tests/data/ops/groups.*, tests/ref/make_group_conv_fixtures.py), and on
 * shapes where oneDNN runs its vectorised depthwise and grouped kernels against direct loops in
 * double; each with exactly the scratch conv2d_scratch asks for, beta 0 onto NaN and beta 1. */
#define YP_FX_STEM "groups"
#define YP_FX_SCRIPT "make_group_conv_fixtures.py"
#include "cpu_conv_case.h"

static yp_conv_desc gconv_desc(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int k, int s, int p,
                               int groups) {
    yp_conv_desc d = conv_desc_hw(n, cin, h, w, cout, k, k, s, s, p, p);
    d.groups = groups;
    return d;
}

/* Floats of d's weights: PyTorch's (c_out, c_in/groups, k, k). */

/* Grouped conv in double over NHWC x and (c_out, c_in/g, k, k) w: y (when not NULL) = conv(x, w)
 * + b, and (when dy is not NULL) the gradients of sum(dy * y): dx, dw and db. Output channel co
 * belongs to group co / (c_out/g) and reads input channels g*(c_in/g) .. + c_in/g. */
static void gconv_ref(const yp_conv_desc *d, const double *x, const double *w, const double *b, double *y,
                      const double *dy, double *dx, double *dw, double *db) {
    const int64_t cig = d->in.c / d->groups, cog = d->out.c / d->groups;
    if (dy) {
        memset(dx, 0, (size_t)dims_count(d->in) * sizeof *dx);
        memset(dw, 0, (size_t)weight_count(d) * sizeof *dw);
        memset(db, 0, (size_t)d->out.c * sizeof *db);
    }
    for (int64_t i = 0; i < d->out.n; i++)
        for (int64_t oy = 0; oy < d->out.h; oy++)
            for (int64_t ox = 0; ox < d->out.w; ox++)
                for (int64_t co = 0; co < d->out.c; co++) {
                    const int64_t yi = ((i * d->out.h + oy) * d->out.w + ox) * d->out.c + co, c0 = co / cog * cig;
                    double acc = b ? b[co] : 0, g = dy ? dy[yi] : 0;
                    if (dy) db[co] += g;
                    for (int64_t ci = 0; ci < cig; ci++)
                        for (int kh = 0; kh < d->kh; kh++)
                            for (int kw = 0; kw < d->kw; kw++) {
                                int64_t iy = oy * d->sh - d->ph + kh, ix = ox * d->sw - d->pw + kw;
                                if (iy < 0 || iy >= d->in.h || ix < 0 || ix >= d->in.w) continue;
                                int64_t xi = ((i * d->in.h + iy) * d->in.w + ix) * d->in.c + c0 + ci;
                                int64_t wi = ((co * cig + ci) * d->kh + kh) * d->kw + kw;
                                acc += x[xi] * w[wi];
                                if (dy) dx[xi] += g * w[wi], dw[wi] += g * x[xi];
                            }
                    if (y) y[yi] = acc;
                }
}

static void test_fixture_dw_k5s1(void) {
    conv_fixture_case("dw_k5s1p2", gconv_desc(2, 8, 7, 6, 8, 5, 1, 2, 8), 0);
}
static void test_fixture_dw_k3s2_bias(void) {
    conv_fixture_case("dw_k3s2p1", gconv_desc(2, 8, 9, 8, 8, 3, 2, 1, 8), 1);
}
static void test_fixture_g2_k3s1(void) {
    conv_fixture_case("g2_k3s1p1", gconv_desc(2, 8, 6, 5, 4, 3, 1, 1, 2), 0);
}

/* A grouped conv against gconv_ref: forward (with bias when asked), backward-data and -weights
 * with beta 0, then beta 1 on top (twice the reference). Channel counts of 32 and more run
 * oneDNN's vectorised depthwise / grouped kernels in its blocked layouts (reorders in and out);
 * fp32 sums of <= 25 products (depthwise) or <= 144 (grouped) err by ~1e-6 of the largest value;
 * the bound is the op tests' 1e-4. */
static void large_case(yp_conv_desc d, int bias) {
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = weight_count(&d), nc = d.out.c;
    float *x = rand_buf(nx, 51, -1, 1), *w = rand_buf(nw, 52, -0.3, 0.3), *dy = rand_buf(ny, 53, -1, 1);
    float *b = bias ? rand_buf(nc, 54, -1, 1) : NULL;
    double *xd = malloc((size_t)nx * sizeof *xd), *wd = malloc((size_t)nw * sizeof *wd);
    double *dyd = malloc((size_t)ny * sizeof *dyd), *yd = malloc((size_t)ny * sizeof *yd);
    double *dxd = malloc((size_t)nx * sizeof *dxd), *dwd = malloc((size_t)nw * sizeof *dwd);
    double *bd = malloc((size_t)nc * sizeof *bd), *dbd = malloc((size_t)nc * sizeof *dbd);
    for (int64_t i = 0; i < nx; i++) xd[i] = x[i];
    for (int64_t i = 0; i < nw; i++) wd[i] = w[i];
    for (int64_t i = 0; i < ny; i++) dyd[i] = dy[i];
    for (int64_t i = 0; i < nc; i++) bd[i] = b ? b[i] : 0;
    gconv_ref(&d, xd, wd, bias ? bd : NULL, yd, dyd, dxd, dwd, dbd);
    int64_t per_image = 0, fixed = 0;
    CHECK(conv_scratch_both(&d, bias, &per_image, &fixed) == 0);
    float *ws = nan_buf(per_image + fixed + 1), *y = nan_buf(ny), *dx = nan_buf(nx), *dw = nan_buf(nw);
    float *db = nan_buf(nc);
    CHECK(ops->conv2d_forward(cpu, &d, x, w, b, y, WS_ARGS(&d, bias, ws)) == 0);
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 0.0f, WS_ARGS(&d, bias, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, b ? db : NULL, 0.0f, WS_ARGS(&d, bias, ws)) == 0);
    double errs[7] = {rel_err_d(y, yd, ny), rel_err_d(dx, dxd, nx), rel_err_d(dw, dwd, nw),
                      bias ? rel_err_d(db, dbd, nc) : 0};
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 1.0f, WS_ARGS(&d, bias, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, b ? db : NULL, 1.0f, WS_ARGS(&d, bias, ws)) == 0);
    for (int64_t i = 0; i < nx; i++) dxd[i] *= 2;
    for (int64_t i = 0; i < nw; i++) dwd[i] *= 2;
    for (int64_t i = 0; i < nc; i++) dbd[i] *= 2;
    errs[4] = rel_err_d(dx, dxd, nx), errs[5] = rel_err_d(dw, dwd, nw), errs[6] = bias ? rel_err_d(db, dbd, nc) : 0;
    const char *names[] = {"y", "dx", "dw", "db", "dx (beta 1)", "dw (beta 1)", "db (beta 1)"};
    int bad = 0;
    for (int i = 0; i < 7; i++) bad |= !(errs[i] <= 1e-4);
    if (verbose || bad) {
        printf("    conv %lld->%lld groups %d k%d s%d p%d on %lldx%lld (scratch %lld + %lld floats):",
               (long long)d.in.c, (long long)d.out.c, d.groups, d.kh, d.sh, d.ph, (long long)d.in.h,
               (long long)d.in.w, (long long)per_image, (long long)fixed);
        for (int i = 0; i < 7; i++) printf("%s %s %.3g", i ? "," : "", names[i], errs[i]);
        printf("\n");
    }
    for (int i = 0; i < 7; i++) CHECK(errs[i] <= 1e-4);
    free(x), free(w), free(dy), free(b), free(xd), free(wd), free(dyd), free(yd), free(dxd), free(dwd), free(bd);
    free(dbd), free(ws), free(y), free(dx), free(dw), free(db);
}

static void test_large(void) {
    large_case(gconv_desc(2, 32, 20, 20, 32, 5, 1, 2, 32), 0);  /* GhostConv cv2 */
    large_case(gconv_desc(2, 64, 13, 11, 64, 3, 2, 1, 64), 1);  /* DWConv s2 */
    large_case(gconv_desc(2, 48, 10, 12, 48, 3, 1, 1, 48), 0);  /* GhostBottleneck, s1 */
    large_case(gconv_desc(2, 48, 9, 9, 32, 3, 1, 1, 16), 0);    /* DWConv(48, 32): groups gcd = 16 */
    large_case(gconv_desc(2, 32, 8, 7, 64, 1, 1, 0, 4), 1);     /* grouped 1x1: no single matmul */
    large_case(gconv_desc(1, 16, 6, 6, 32, 3, 1, 1, 16), 0);    /* channel multiplier 2 */
}

/* The scratch of a depthwise conv is the backend's answer, asked before and after the conv is
 * built, alike; a grouped 1x1 conv's accumulating backward-data goes image by image (one image
 * of dx per image), where an ungrouped one is a single matmul (none). */
static void test_scratch(void) {
    yp_conv_desc d = gconv_desc(2, 32, 20, 20, 32, 5, 1, 2, 32);
    int64_t p0, f0, p1, f1;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_BACKWARD, &p0, &f0) == 0);
    CHECK(ops->conv2d_prepare(cpu, &d, 0, YP_CONV_BACKWARD) == 0);
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_BACKWARD, &p1, &f1) == 0);
    CHECK_EQ_I64(p1, p0);
    CHECK_EQ_I64(f1, f0);
    yp_conv_desc g1 = gconv_desc(2, 32, 5, 6, 64, 1, 1, 0, 4), u1 = g1;
    u1.groups = 1;
    CHECK(ops->conv2d_scratch(cpu, &g1, 0, YP_CONV_BACKWARD, &p0, &f0) == 0);
    CHECK_EQ_I64(p0, 5 * 6 * 32);
    CHECK(ops->conv2d_scratch(cpu, &u1, 0, YP_CONV_BACKWARD, &p1, &f1) == 0);
    CHECK_EQ_I64(p1, 0);
}

/* groups that do not divide the channels, or are < 1, are refused with the counts named. */
static void test_errors(void) {
    static _Alignas(64) float buf[4096], ws[1 << 14];
    yp_conv_desc d = gconv_desc(1, 8, 4, 4, 8, 3, 1, 1, 3);
    int64_t per_image, fixed;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_FORWARD, &per_image, &fixed) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "groups 3 must be >= 1 and divide c_in 8 and c_out 8");
    CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "groups 3");
    d.groups = 0;
    CHECK(ops->conv2d_backward_data(cpu, &d, buf, buf, buf, 0.0f, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "groups 0");
    d = gconv_desc(1, 8, 4, 4, 6, 3, 1, 1, 4); /* divides c_in, not c_out */
    CHECK(ops->conv2d_backward_weights(cpu, &d, buf, buf, buf, NULL, 0.0f, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "c_out 6");
}

int main(int argc, char **argv) {
    int rc = cpu_ops_setup(argc, argv);
    if (rc) return rc;
    YP_RUN(test_fixture_dw_k5s1);
    YP_RUN(test_fixture_dw_k3s2_bias);
    YP_RUN(test_fixture_g2_k3s1);
    YP_RUN(test_large);
    YP_RUN(test_scratch);
    YP_RUN(test_errors);
    free(fx_data);
    return yp_test_summary();
}
