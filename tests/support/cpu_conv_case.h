/* cpu_conv_case.h - one conv fixture case checked end to end on the CPU backend, shared by
 * test_cpu_conv (groups 1), test_cpu_conv_groups (grouped, depthwise) and test_cpu_conv_cross
 * (non-square): include after cpu_ops_fixture.h, whose fixture file the case names come from.
 * Defines: conv_desc_hw, weight_count, conv_fixture_case. */
#ifndef YP_CPU_CONV_CASE_H
#define YP_CPU_CONV_CASE_H

#include "cpu_ops_fixture.h"

/* An ungrouped conv of kernel kh x kw, stride sh x sw, padding ph x pw, its output's extents
 * following from them. */
static inline yp_conv_desc conv_desc_hw(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int kh, int kw,
                                        int sh, int sw, int ph, int pw) {
    yp_conv_desc d = {.in = {n, h, w, cin}, .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = ph, .pw = pw, .groups = 1};
    d.out = (yp_dims){n, (h + 2 * ph - kh) / sh + 1, (w + 2 * pw - kw) / sw + 1, cout};
    return d;
}

/* PyTorch's (c_out, c_in / groups, kh, kw) weight. */
static inline int64_t weight_count(const yp_conv_desc *d) {
    return d->out.c * (d->in.c / d->groups) * d->kh * d->kw;
}

/* One fixture case: forward, backward-data and -weights with beta 0 onto NaN, then with beta 1
 * onto random contents, then both passes in one call (conv2d_backward). fp32 sums of K <= 216
 * products against a float64 reference err by ~1e-6 of the largest value; 1e-4 is the bound. */
static void conv_fixture_case(const char *cs, yp_conv_desc d, int bias) {
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = weight_count(&d), nc = d.out.c;
    float *x = fxc(cs, "x", nx), *w = fxc(cs, "w", nw), *y_ref = fxc(cs, "y", ny), *dy = fxc(cs, "dy", ny);
    float *dx_ref = fxc(cs, "dx", nx), *dw_ref = fxc(cs, "dw", nw);
    float *b = bias ? fxc(cs, "b", nc) : NULL, *db_ref = bias ? fxc(cs, "db", nc) : NULL;
    float *ws = nan_buf(conv_scratch_floats(&d, bias)), *y = nan_buf(ny), *dx = nan_buf(nx), *dw = nan_buf(nw);
    float *db = nan_buf(nc), *dx0 = rand_buf(nx, 11, -1, 1), *dw0 = rand_buf(nw, 12, -1, 1);
    float *db0 = rand_buf(nc, 13, -1, 1), *dx_want = NULL, *dw_want = NULL, *db_want = NULL;
    char what[80];
    if (d.groups > 1) CHECK(conv_scratch_floats(&d, bias) > 1 || yp_conv_taps(&d) == 1); /* it answers for a grouped conv */
    if (!x || !w || !y_ref || !dy || !dx_ref || !dw_ref || (bias && (!b || !db_ref))) goto done;

    CHECK(ops->conv2d_forward(cpu, &d, x, w, b, y, WS_ARGS(&d, bias, ws)) == 0);
    snprintf(what, sizeof what, "%s y", cs);
    CHECK_CLOSE(what, y, y_ref, ny, 1e-4);
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 0.0f, WS_ARGS(&d, bias, ws)) == 0);
    snprintf(what, sizeof what, "%s dx", cs);
    CHECK_CLOSE(what, dx, dx_ref, nx, 1e-4);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, bias ? db : NULL, 0.0f, WS_ARGS(&d, bias, ws)) == 0);
    snprintf(what, sizeof what, "%s dw", cs);
    CHECK_CLOSE(what, dw, dw_ref, nw, 1e-4);
    if (bias) {
        snprintf(what, sizeof what, "%s db", cs);
        CHECK_CLOSE(what, db, db_ref, nc, 1e-4);
    }

    dx_want = sum_buf(dx0, dx_ref, nx), dw_want = sum_buf(dw0, dw_ref, nw);
    db_want = bias ? sum_buf(db0, db_ref, nc) : NULL;
    memcpy(dx, dx0, (size_t)nx * sizeof *dx);
    memcpy(dw, dw0, (size_t)nw * sizeof *dw);
    memcpy(db, db0, (size_t)nc * sizeof *db);
    CHECK(ops->conv2d_backward_data(cpu, &d, dy, w, dx, 1.0f, WS_ARGS(&d, bias, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(cpu, &d, x, dy, dw, bias ? db : NULL, 1.0f, WS_ARGS(&d, bias, ws)) == 0);
    snprintf(what, sizeof what, "%s dx (beta 1)", cs);
    CHECK_CLOSE(what, dx, dx_want, nx, 1e-4);
    snprintf(what, sizeof what, "%s dw (beta 1)", cs);
    CHECK_CLOSE(what, dw, dw_want, nw, 1e-4);
    if (bias) {
        snprintf(what, sizeof what, "%s db (beta 1)", cs);
        CHECK_CLOSE(what, db, db_want, nc, 1e-4);
    }

    /* the fused entry: dx (beta 1 onto dx0) and dw (beta 0) in one call */
    memcpy(dx, dx0, (size_t)nx * sizeof *dx);
    CHECK(ops->conv2d_backward(cpu, &d, x, dy, w, dx, dw, bias ? db : NULL, (yp_betas){1.0f, 0.0f},
                               WS_ARGS(&d, bias, ws)) == 0);
    snprintf(what, sizeof what, "%s conv2d_backward dx", cs);
    CHECK_CLOSE(what, dx, dx_want, nx, 1e-4);
    snprintf(what, sizeof what, "%s conv2d_backward dw", cs);
    CHECK_CLOSE(what, dw, dw_ref, nw, 1e-4);
    if (bias) {
        snprintf(what, sizeof what, "%s conv2d_backward db", cs);
        CHECK_CLOSE(what, db, db_ref, nc, 1e-4);
    }
done:
    free(x), free(w), free(y_ref), free(dy), free(dx_ref), free(dw_ref), free(b), free(db_ref);
    free(ws), free(y), free(dx), free(dw), free(db), free(dx0), free(dw0), free(db0);
    free(dx_want), free(dw_want), free(db_want);
}

#endif
