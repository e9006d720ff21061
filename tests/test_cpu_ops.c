/* test_cpu_ops.c - the CPU backend's op table (kernels/yp_ops.h): every op forward and backward
 * against PyTorch references (tests/data/ops, written in float64 by tests/ref/make_op_fixtures.py
 * and stored as float32), central finite differences in double for conv backward-data/weights and
 * BN backward on tiny shapes, the beta (overwrite/accumulate) contract, and argument errors.
 *
 * Error measure per tensor: max|got - want| / max|want|. Unless a check says otherwise the bound is
 * the 1e-4 the issue asks for; the fp32 kernels' actual errors are ~1e-6 (printed with -v). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_backend.h"
#include "yp_test.h"

/* The two scratch pointers of a conv op carved from one buffer: columns first, then weights. */
static float *ws_cols(const yp_conv_desc *d, float *ws) {
    int64_t c, w;
    yp_conv_workspace_split(d, &c, &w);
    return c ? ws : NULL;
}
static float *ws_wt(const yp_conv_desc *d, float *ws) {
    int64_t c, w;
    yp_conv_workspace_split(d, &c, &w);
    return w ? ws + c : NULL;
}
#define WS_ARGS(d, ws) ws_cols(d, ws), ws_wt(d, ws)

static const yp_ops *ops;
static const yp_backend *cpu;
static int verbose;

/* ---- fixtures ---- */

enum { MAX_TENSORS = 512 };
static struct {
    char name[64];
    int64_t offset, count;
} fx_index[MAX_TENSORS];
static int fx_count;
static float *fx_data;
static int64_t fx_floats;

/* Loads ops.txt and ops.bin once. Returns 0, or -1 with a message. */
static int fx_load(void) {
    FILE *ft = fopen(YP_TEST_DATA "/ops/ops.txt", "r");
    FILE *fb = fopen(YP_TEST_DATA "/ops/ops.bin", "rb");
    int rc = -1;
    if (!ft || !fb) {
        fprintf(stderr, "cannot open %s/ops/ops.{txt,bin}\n", YP_TEST_DATA);
        goto done;
    }
    char line[512];
    while (fgets(line, sizeof line, ft)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        long long off, cnt;
        if (fx_count == MAX_TENSORS || sscanf(line, "%63s %lld %lld", fx_index[fx_count].name, &off, &cnt) != 3) {
            fprintf(stderr, "ops.txt: bad line or too many tensors: %s", line);
            goto done;
        }
        fx_index[fx_count].offset = off;
        fx_index[fx_count].count = cnt;
        if (off + cnt > fx_floats)
            fx_floats = off + cnt;
        fx_count++;
    }
    fx_data = malloc((size_t)fx_floats * sizeof *fx_data + 1);
    if (!fx_data || fread(fx_data, sizeof *fx_data, (size_t)fx_floats, fb) != (size_t)fx_floats) {
        fprintf(stderr, "ops.bin: short read (want %lld floats)\n", (long long)fx_floats);
        goto done;
    }
    rc = 0;
done:
    if (ft)
        fclose(ft);
    if (fb)
        fclose(fb);
    return rc;
}

/* A fresh malloc'd copy (exact size, so ASan sees overruns) of fixture tensor `name`, which must
 * hold `count` floats; NULL (and a failed check) otherwise. The caller frees it. */
static float *fx(const char *name, int64_t count) {
    for (int i = 0; i < fx_count; i++) {
        if (strcmp(fx_index[i].name, name) != 0)
            continue;
        if (fx_index[i].count != count) {
            fprintf(stderr, "  fixture %s has %lld floats, test expects %lld\n", name,
                    (long long)fx_index[i].count, (long long)count);
            CHECK(fx_index[i].count == count);
            return NULL;
        }
        float *p = malloc((size_t)count * sizeof *p);
        memcpy(p, fx_data + fx_index[i].offset, (size_t)count * sizeof *p);
        return p;
    }
    fprintf(stderr, "  fixture %s missing (rerun tests/ref/make_op_fixtures.py)\n", name);
    CHECK(!"fixture present");
    return NULL;
}

/* fx() with the name built from "<case>.<tensor>". */
static float *fxc(const char *cs, const char *tensor, int64_t count) {
    char name[96];
    snprintf(name, sizeof name, "%s.%s", cs, tensor);
    return fx(name, count);
}

/* malloc'd n floats set to NaN: an op that should overwrite (beta 0) but reads instead leaves NaN. */
static float *nan_buf(int64_t n) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* Deterministic uniform numbers in [lo, hi) (xorshift64*). */
static double uniform(uint64_t *state, double lo, double hi) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    uint64_t r = *state * 2685821657736338717ull;
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

static float *rand_buf(int64_t n, uint64_t seed, double lo, double hi) {
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)uniform(&seed, lo, hi);
    return p;
}

/* max|got - want| / max|want| (0/0 = 0; NaN anywhere gives infinity). */
static double rel_err(const float *got, const float *want, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num == 0 ? 0 : num / den;
}

static double rel_err_d(const float *got, const double *want, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (isnan(d))
            return INFINITY;
        num = d > num ? d : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num == 0 ? 0 : num / den;
}

#define CHECK_CLOSE(what, got, want, n, tol)                                                       \
    do {                                                                                           \
        double e_ = (got) && (want) ? rel_err((got), (want), (n)) : INFINITY;                      \
        if (verbose || !(e_ <= (tol)))                                                             \
            printf("    %-28s rel err %.3g (tol %.0e)\n", (what), e_, (double)(tol));              \
        CHECK(e_ <= (tol));                                                                        \
    } while (0)

/* want = a + b elementwise into a fresh buffer (what an op with beta 1 should give). */
static float *sum_buf(const float *a, const float *b, int64_t n) {
    float *p = malloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = a[i] + b[i];
    return p;
}

static int64_t dims_count(yp_dims d) {
    return d.n * d.h * d.w * d.c;
}

/* ---- conv ---- */

static yp_conv_desc conv_desc(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int k, int s, int p) {
    yp_conv_desc d = {.in = {n, h, w, cin}, .k = k, .s = s, .p = p, .groups = 1};
    d.out = (yp_dims){n, (h + 2 * p - k) / s + 1, (w + 2 * p - k) / s + 1, cout};
    return d;
}

/* One fixture case: forward (beta-free), backward-data and -weights with beta 0 on NaN-filled
 * outputs, then again with beta 1 onto random contents. fp32 GEMMs over K <= 216 products against a
 * float64 reference err by ~1e-6 of the largest value; 1e-4 is the bound. */
static void conv_fixture(const char *cs, yp_conv_desc d, int bias) {
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = d.out.c * d.in.c * d.k * d.k;
    float *x = fxc(cs, "x", nx), *w = fxc(cs, "w", nw), *y_ref = fxc(cs, "y", ny), *dy = fxc(cs, "dy", ny);
    float *dx_ref = fxc(cs, "dx", nx), *dw_ref = fxc(cs, "dw", nw);
    float *b = bias ? fxc(cs, "b", d.out.c) : NULL, *db_ref = bias ? fxc(cs, "db", d.out.c) : NULL;
    int64_t wsn = yp_conv_workspace_floats(&d);
    float *ws = nan_buf(wsn), *y = nan_buf(ny), *dx = nan_buf(nx), *dw = nan_buf(nw), *db = nan_buf(d.out.c);
    char what[64];
    if (!x || !w || !y_ref || !dy || !dx_ref || !dw_ref || (bias && (!b || !db_ref)))
        goto done;

    CHECK(ops->conv2d_forward(&d, x, w, b, y, WS_ARGS(&d, ws)) == 0);
    snprintf(what, sizeof what, "%s y", cs);
    CHECK_CLOSE(what, y, y_ref, ny, 1e-4);
    CHECK(ops->conv2d_backward_data(&d, dy, w, dx, 0.0f, WS_ARGS(&d, ws)) == 0);
    snprintf(what, sizeof what, "%s dx", cs);
    CHECK_CLOSE(what, dx, dx_ref, nx, 1e-4);
    CHECK(ops->conv2d_backward_weights(&d, x, dy, dw, bias ? db : NULL, 0.0f, WS_ARGS(&d, ws)) == 0);
    snprintf(what, sizeof what, "%s dw", cs);
    CHECK_CLOSE(what, dw, dw_ref, nw, 1e-4);
    if (bias) {
        snprintf(what, sizeof what, "%s db", cs);
        CHECK_CLOSE(what, db, db_ref, d.out.c, 1e-4);
    }

    /* beta 1: the result lands on top of what was there. */
    float *dx0 = rand_buf(nx, 11, -1, 1), *dw0 = rand_buf(nw, 12, -1, 1), *db0 = rand_buf(d.out.c, 13, -1, 1);
    float *dx_want = sum_buf(dx0, dx_ref, nx), *dw_want = sum_buf(dw0, dw_ref, nw);
    float *db_want = bias ? sum_buf(db0, db_ref, d.out.c) : NULL;
    memcpy(dx, dx0, (size_t)nx * sizeof *dx);
    memcpy(dw, dw0, (size_t)nw * sizeof *dw);
    memcpy(db, db0, (size_t)d.out.c * sizeof *db);
    CHECK(ops->conv2d_backward_data(&d, dy, w, dx, 1.0f, WS_ARGS(&d, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(&d, x, dy, dw, bias ? db : NULL, 1.0f, WS_ARGS(&d, ws)) == 0);
    snprintf(what, sizeof what, "%s dx (beta 1)", cs);
    CHECK_CLOSE(what, dx, dx_want, nx, 1e-4);
    snprintf(what, sizeof what, "%s dw (beta 1)", cs);
    CHECK_CLOSE(what, dw, dw_want, nw, 1e-4);
    if (bias) {
        snprintf(what, sizeof what, "%s db (beta 1)", cs);
        CHECK_CLOSE(what, db, db_want, d.out.c, 1e-4);
    }
    free(dx0), free(dw0), free(db0), free(dx_want), free(dw_want), free(db_want);
done:
    free(x), free(w), free(y_ref), free(dy), free(dx_ref), free(dw_ref), free(b), free(db_ref);
    free(ws), free(y), free(dx), free(dw), free(db);
}

static void test_conv_k3s1p1(void) {
    conv_fixture("conv_k3s1p1", conv_desc(2, 4, 8, 8, 6, 3, 1, 1), 0);
}
static void test_conv_k3s2p1(void) {
    conv_fixture("conv_k3s2p1", conv_desc(2, 4, 9, 7, 6, 3, 2, 1), 0);
}
static void test_conv_k6s2p2(void) {
    conv_fixture("conv_k6s2p2", conv_desc(2, 3, 16, 16, 8, 6, 2, 2), 0);
}
static void test_conv_k1_bias(void) {
    yp_conv_desc d = conv_desc(2, 8, 5, 6, 5, 1, 1, 0);
    CHECK_EQ_I64(yp_conv_workspace_floats(&d), 0); /* pointwise: one GEMM, no columns */
    conv_fixture("conv_k1_bias", d, 1);
}

/* Direct convolution in double (NHWC x, OIHW w): the independent reference of the FD tests. */
static void conv_ref(const yp_conv_desc *d, const double *x, const double *w, double *y) {
    for (int64_t i = 0; i < d->out.n; i++)
        for (int64_t oy = 0; oy < d->out.h; oy++)
            for (int64_t ox = 0; ox < d->out.w; ox++)
                for (int64_t co = 0; co < d->out.c; co++) {
                    double acc = 0;
                    for (int64_t ci = 0; ci < d->in.c; ci++)
                        for (int kh = 0; kh < d->k; kh++)
                            for (int kw = 0; kw < d->k; kw++) {
                                int64_t iy = oy * d->s - d->p + kh, ix = ox * d->s - d->p + kw;
                                if (iy < 0 || iy >= d->in.h || ix < 0 || ix >= d->in.w)
                                    continue;
                                acc += x[((i * d->in.h + iy) * d->in.w + ix) * d->in.c + ci] *
                                       w[((co * d->in.c + ci) * d->k + kh) * d->k + kw];
                            }
                    y[((i * d->out.h + oy) * d->out.w + ox) * d->out.c + co] = acc;
                }
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
    const int64_t nx = dims_count(d.in), ny = dims_count(d.out), nw = d.out.c * d.in.c * d.k * d.k;
    float *x = rand_buf(nx, 21, -1, 1), *w = rand_buf(nw, 22, -0.5, 0.5), *r = rand_buf(ny, 23, -1, 1);
    double *xd = malloc((size_t)nx * sizeof *xd), *wd = malloc((size_t)nw * sizeof *wd);
    double *rd = malloc((size_t)ny * sizeof *rd), *yd = malloc((size_t)ny * sizeof *yd);
    double *gx = malloc((size_t)nx * sizeof *gx), *gw = malloc((size_t)nw * sizeof *gw);
    int64_t wsn = yp_conv_workspace_floats(&d);
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
    CHECK(ops->conv2d_forward(&d, x, w, NULL, y, WS_ARGS(&d, ws)) == 0);
    CHECK(ops->conv2d_backward_data(&d, r, w, dx, 0.0f, WS_ARGS(&d, ws)) == 0);
    CHECK(ops->conv2d_backward_weights(&d, x, r, dw, NULL, 0.0f, WS_ARGS(&d, ws)) == 0);
    double ey = rel_err_d(y, yd, ny), ex = rel_err_d(dx, gx, nx), ew = rel_err_d(dw, gw, nw);
    if (verbose || !(ey <= 1e-4 && ex <= 1e-4 && ew <= 1e-4))
        printf("    conv k%d s%d p%d %lldx%lld: y %.3g, dx (fd) %.3g, dw (fd) %.3g\n", d.k, d.s, d.p,
               (long long)d.in.h, (long long)d.in.w, ey, ex, ew);
    CHECK(ey <= 1e-4);
    CHECK(ex <= 1e-4);
    CHECK(ew <= 1e-4);
    free(x), free(w), free(r), free(xd), free(wd), free(rd), free(yd), free(gx), free(gw);
    free(ws), free(y), free(dx), free(dw);
}

/* The im2col paths (padding on every side, strides that skip input, even kernels, k == 1 with a
 * stride or padding, which takes columns but no weight reordering), stride-1 backward-data as a
 * transposed conv (padding k-1-p from k-1 down to 0; c_out > c_in makes its columns the larger
 * part of the workspace) and the pointwise GEMM path. */
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

static void test_conv_errors(void) {
    yp_conv_desc d = conv_desc(1, 4, 4, 4, 4, 3, 1, 1);
    float buf[256] = {0}, ws[512];
    CHECK_EQ_I64(yp_conv_workspace_floats(&d), 16 * 36 + 4 * 36); /* columns + reordered weights */
    d.groups = 2;
    CHECK(ops->conv2d_forward(&d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(), "groups");
    CHECK(ops->conv2d_backward_data(&d, buf, buf, buf, 0.0f, ws, ws) == -1);
    CHECK(ops->conv2d_backward_weights(&d, buf, buf, buf, NULL, 0.0f, ws, ws) == -1);
    d.groups = 1;
    d.out.h = 5;
    CHECK(ops->conv2d_forward(&d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(), "does not follow");
    d.out.h = 4;
    CHECK(ops->conv2d_forward(&d, buf, buf, NULL, buf, NULL, NULL) == -1);
    CHECK_STR_HAS(cpu->last_error(), "workspace");
    CHECK(ops->conv2d_forward(&d, NULL, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(), "NULL");
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
    CHECK(ops->bn_forward_train(&d, x, gamma, beta, y, stats, rm, rv) == 0);
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
    CHECK(ops->bn_apply(&d, x, gamma, beta, stats, y2) == 0);
    snprintf(what, sizeof what, "%s apply == train y", cs);
    CHECK_CLOSE(what, y2, y, n, 1e-6);

    CHECK(ops->bn_backward(&d, x, stats, gamma, dy, dx, 0.0f, dg, db, 0.0f) == 0);
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
    CHECK(ops->bn_backward(&d, x, stats, gamma, dy, dx, 1.0f, dg, db, 1.0f) == 0);
    snprintf(what, sizeof what, "%s dx (beta 1)", cs);
    CHECK_CLOSE(what, dx, dx_want, n, 1e-4);
    snprintf(what, sizeof what, "%s dgamma (beta 1)", cs);
    CHECK_CLOSE(what, dg, dg_want, c, 1e-4);
    snprintf(what, sizeof what, "%s dbeta (beta 1)", cs);
    CHECK_CLOSE(what, db, db_want, c, 1e-4);
    /* No parameter gradients wanted: NULL dgamma/dbeta, dx unchanged. */
    CHECK(ops->bn_backward(&d, x, stats, gamma, dy, dx, 0.0f, NULL, NULL, 0.0f) == 0);
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
        CHECK(ops->bn_forward_eval(&d, x, gamma, beta, y, rm, rv) == 0);
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
    CHECK(ops->bn_forward_train(&d, x, g, b, y, stats, rm, rv) == 0);
    CHECK(ops->bn_backward(&d, x, stats, g, r, dx, 0.0f, dg, db, 0.0f) == 0);
    double ey = rel_err_d(y, yd, n), ex = rel_err_d(dx, gx, n), eg = rel_err_d(dg, gg, c), eb = rel_err_d(db, gb, c);
    if (verbose || !(ey <= 1e-4 && ex <= 1e-4 && eg <= 1e-4 && eb <= 1e-4))
        printf("    bn fd: y %.3g, dx %.3g, dgamma %.3g, dbeta %.3g\n", ey, ex, eg, eb);
    CHECK(ey <= 1e-4);
    CHECK(ex <= 1e-4);
    CHECK(eg <= 1e-4);
    CHECK(eb <= 1e-4);
    free(x), free(g), free(b), free(r), free(y), free(stats), free(dx), free(dg), free(db);
}

static void test_bn_errors(void) {
    float v[8] = {0}, rm[2] = {0}, rv[2] = {1, 1};
    yp_bn_desc d = {.dims = {1, 1, 1, 2}, .eps = 1e-3f, .momentum = 0.03f};
    CHECK(ops->bn_forward_train(&d, v, v, v, v, v, rm, rv) == -1); /* one value per channel */
    CHECK_STR_HAS(cpu->last_error(), "more than 1 value");
    d.dims.c = 0;
    CHECK(ops->bn_forward_eval(&d, v, v, v, v, rm, rv) == -1);
    d.dims.c = 2;
    d.eps = 0.0f;
    CHECK(ops->bn_apply(&d, v, v, v, v, v) == -1);
}

/* ---- eltwise ---- */

static void test_add_axpy(void) {
    enum { N = 1001 };
    float *a = rand_buf(N, 51, -1, 1), *b = rand_buf(N, 52, -1, 1), *y = nan_buf(N), *dx = nan_buf(N);
    CHECK(ops->add_forward(a, b, y, N) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != a[i] + b[i];
    CHECK(ops->axpy_grad(a, dx, 0.0f, N) == 0); /* dx = a (NaN not read) */
    bad += memcmp(dx, a, sizeof(float) * N) != 0;
    CHECK(ops->axpy_grad(b, dx, 1.0f, N) == 0); /* dx = a + b */
    for (int i = 0; i < N; i++)
        bad += dx[i] != a[i] + b[i];
    CHECK(ops->axpy_grad(a, dx, 0.5f, N) == 0); /* dx = 0.5*(a + b) + a */
    for (int i = 0; i < N; i++)
        bad += fabsf(dx[i] - (0.5f * (a[i] + b[i]) + a[i])) > 1e-6f;
    CHECK_EQ_I64(bad, 0);
    CHECK(ops->add_forward(a, b, y, 0) == 0);
    CHECK(ops->add_forward(a, b, y, -1) == -1);
    CHECK(ops->axpy_grad(NULL, dx, 1.0f, 3) == -1);
    free(a), free(b), free(y), free(dx);
}

/* Concat of k inputs: forward is copies (exact); backward slices dy (exact for beta 0, one add for
 * beta 1: 1e-6 covers its rounding against the float32-rounded reference sum). */
static void concat_fixture(const char *cs, int k, const int64_t *chans) {
    yp_dims out = {2, 3, 4, 0};
    for (int i = 0; i < k; i++)
        out.c += chans[i];
    const int64_t rows = out.n * out.h * out.w, ny = dims_count(out);
    float *xs[4] = {0}, *dx_ref[4] = {0}, *dxs[4] = {0}, *y_ref = fxc(cs, "y", ny), *dy = fxc(cs, "dy", ny);
    float *y = nan_buf(ny), betas[4];
    char name[32], what[64];
    int ok = y_ref && dy;
    for (int i = 0; i < k; i++) {
        snprintf(name, sizeof name, "x%d", i);
        xs[i] = fxc(cs, name, rows * chans[i]);
        snprintf(name, sizeof name, "dx%d", i);
        dx_ref[i] = fxc(cs, name, rows * chans[i]);
        dxs[i] = nan_buf(rows * chans[i]);
        betas[i] = 0.0f;
        ok = ok && xs[i] && dx_ref[i];
    }
    if (ok) {
        CHECK(ops->concat_forward(k, (const float *const *)xs, chans, out, y) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, ny, 0.0);
        CHECK(ops->concat_backward(k, dxs, chans, out, dy, betas) == 0);
        for (int i = 0; i < k; i++) {
            snprintf(what, sizeof what, "%s dx%d", cs, i);
            CHECK_CLOSE(what, dxs[i], dx_ref[i], rows * chans[i], 0.0);
        }
        /* Input 0 accumulates (beta 1), input 1 is not wanted (NULL), the rest overwrite again. */
        float *keep1 = dxs[1];
        betas[0] = 1.0f;
        dxs[1] = NULL;
        CHECK(ops->concat_backward(k, dxs, chans, out, dy, betas) == 0);
        dxs[1] = keep1;
        float *want0 = sum_buf(dx_ref[0], dx_ref[0], rows * chans[0]);
        snprintf(what, sizeof what, "%s dx0 (beta 1)", cs);
        CHECK_CLOSE(what, dxs[0], want0, rows * chans[0], 1e-6);
        free(want0);
    }
    for (int i = 0; i < k; i++)
        free(xs[i]), free(dx_ref[i]), free(dxs[i]);
    free(y_ref), free(dy), free(y);
}

static void test_concat2(void) {
    concat_fixture("concat2", 2, (const int64_t[]){3, 5});
}
static void test_concat4(void) {
    concat_fixture("concat4", 4, (const int64_t[]){2, 3, 1, 4});
    float v[4] = {0};
    const float *xs[2] = {v, v};
    CHECK(ops->concat_forward(2, xs, (const int64_t[]){1, 1}, (yp_dims){1, 1, 1, 3}, v) == -1);
    CHECK_STR_HAS(cpu->last_error(), "add up to");
}

/* Upsample x2: forward copies (exact); backward sums 4 values per input pixel in fp32 against the
 * float64 sum (~1e-7). */
static void test_upsample_x2(void) {
    yp_dims in = {2, 3, 4, 5};
    const int64_t nx = dims_count(in), ny = 4 * nx;
    float *x = fx("upsample_x2.x", nx), *y_ref = fx("upsample_x2.y", ny), *dy = fx("upsample_x2.dy", ny);
    float *dx_ref = fx("upsample_x2.dx", nx), *y = nan_buf(ny), *dx = nan_buf(nx);
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->upsample_forward(in, 2, x, y) == 0);
        CHECK_CLOSE("upsample_x2 y", y, y_ref, ny, 0.0);
        CHECK(ops->upsample_backward(in, 2, dy, dx, 0.0f) == 0);
        CHECK_CLOSE("upsample_x2 dx", dx, dx_ref, nx, 1e-6);
        float *want = sum_buf(dx_ref, dx_ref, nx);
        CHECK(ops->upsample_backward(in, 2, dy, dx, 1.0f) == 0);
        CHECK_CLOSE("upsample_x2 dx (beta 1)", dx, want, nx, 1e-6);
        free(want);
    }
    CHECK(ops->upsample_forward(in, 0, x, y) == -1);
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

/* space_to_depth (Focus): a permutation, so forward and backward are exact. */
static void test_space_to_depth(void) {
    yp_dims in = {2, 6, 8, 3};
    const int64_t n = dims_count(in);
    float *x = fx("s2d.x", n), *y_ref = fx("s2d.y", n), *dy = fx("s2d.dy", n), *dx_ref = fx("s2d.dx", n);
    float *y = nan_buf(n), *dx = nan_buf(n);
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->space_to_depth_forward(in, x, y) == 0);
        CHECK_CLOSE("s2d y", y, y_ref, n, 0.0);
        CHECK(ops->space_to_depth_backward(in, dy, dx, 0.0f) == 0);
        CHECK_CLOSE("s2d dx", dx, dx_ref, n, 0.0);
        float *want = sum_buf(dx_ref, dx_ref, n);
        CHECK(ops->space_to_depth_backward(in, dy, dx, 1.0f) == 0);
        CHECK_CLOSE("s2d dx (beta 1)", dx, want, n, 0.0);
        free(want);
    }
    in.w = 7;
    CHECK(ops->space_to_depth_forward(in, x, y) == -1);
    CHECK_STR_HAS(cpu->last_error(), "even");
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

/* ---- max pool ---- */

/* Integer inputs with many ties: the forward is exact; the backward must route every dy to the
 * first maximum in PyTorch's order (a wrong choice moves a whole dy, an O(1) error); the sums of
 * several dy landing on one input are fp32 adds (~1e-7). */
static void maxpool_fixture(const char *cs, yp_dims in, int k, int s, int p) {
    yp_pool_desc d = {.in = in, .k = k, .s = s, .p = p};
    d.out = (yp_dims){in.n, (in.h + 2 * p - k) / s + 1, (in.w + 2 * p - k) / s + 1, in.c};
    const int64_t nx = dims_count(in), ny = dims_count(d.out);
    float *x = fxc(cs, "x", nx), *y_ref = fxc(cs, "y", ny), *dy = fxc(cs, "dy", ny), *dx_ref = fxc(cs, "dx", nx);
    float *y = nan_buf(ny), *dx = nan_buf(nx);
    char what[64];
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->maxpool_forward(&d, x, y) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, ny, 0.0);
        CHECK(ops->maxpool_backward(&d, x, dy, dx, 0.0f) == 0);
        snprintf(what, sizeof what, "%s dx", cs);
        CHECK_CLOSE(what, dx, dx_ref, nx, 1e-6);
        float *want = sum_buf(dx_ref, dx_ref, nx);
        CHECK(ops->maxpool_backward(&d, x, dy, dx, 1.0f) == 0);
        snprintf(what, sizeof what, "%s dx (beta 1)", cs);
        CHECK_CLOSE(what, dx, want, nx, 1e-6);
        free(want);
    }
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

static void test_maxpool_k5s1p2(void) {
    maxpool_fixture("maxpool_k5s1p2", (yp_dims){2, 7, 7, 3}, 5, 1, 2);
}
static void test_maxpool_wide(void) {
    maxpool_fixture("maxpool_wide", (yp_dims){1, 5, 6, 260}, 5, 1, 2); /* two channel blocks */
}
static void test_maxpool_k3s2p1(void) {
    maxpool_fixture("maxpool_k3s2p1", (yp_dims){2, 7, 8, 3}, 3, 2, 1);
}

/* NaN wins its window (PyTorch propagates it); padding wider than k/2 is refused. */
static void test_maxpool_nan_and_errors(void) {
    yp_pool_desc d = {.in = {1, 1, 3, 1}, .out = {1, 1, 3, 1}, .k = 3, .s = 1, .p = 1};
    float x[3] = {1.0f, NAN, 2.0f}, y[3], dy[3] = {1, 1, 1}, dx[3];
    CHECK(ops->maxpool_forward(&d, x, y) == 0);
    CHECK(isnan(y[0]) && isnan(y[1]) && isnan(y[2]));
    CHECK(ops->maxpool_backward(&d, x, dy, dx, 0.0f) == 0);
    CHECK(dx[0] == 0.0f && dx[1] == 3.0f && dx[2] == 0.0f);
    d.p = 2;
    d.out.w = 5;
    CHECK(ops->maxpool_forward(&d, x, y) == -1);
    CHECK_STR_HAS(cpu->last_error(), "padding");
}

/* ---- optimizers ---- */

/* Three steps against torch.optim in float64 from the same float32 values. The gradient is fed as
 * 2*g with scale 0.5 (both exact), so the scale path is exercised for free. Checked: the weights,
 * the state, and the update w - w0 on its own (an error in the update is small next to |w|, so the
 * update gets its own measure). Per step the fp32 kernel rounds a few times (~1e-7 of |w|, ~1e-6
 * of the update); 1e-4 is the bound. */
static void optim_fixture(const char *cs, int kind, float lr, float wd) {
    enum { N = 1000 };
    float *w0 = fxc(cs, "w0", N), *w_ref = fxc(cs, "w", N), *m_ref = fxc(cs, "m", N);
    float *v_ref = kind ? fxc(cs, "v", N) : NULL, *g[3];
    float *w = malloc(N * sizeof *w), *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
    float *g2 = malloc(N * sizeof *g2), *dw = malloc(N * sizeof *dw), *dw_ref = malloc(N * sizeof *dw_ref);
    char what[64];
    int ok = w0 && w_ref && m_ref && (!kind || v_ref);
    for (int t = 0; t < 3; t++) {
        char name[8];
        snprintf(name, sizeof name, "g%d", t + 1);
        g[t] = fxc(cs, name, N);
        ok = ok && g[t];
    }
    if (ok) {
        memcpy(w, w0, N * sizeof *w);
        for (int t = 0; t < 3; t++) {
            for (int i = 0; i < N; i++)
                g2[i] = 2.0f * g[t][i];
            if (kind == 0)
                CHECK(ops->sgd_step(w, g2, m, N, lr, 0.937f, wd, 0.5f) == 0);
            else
                CHECK(ops->adam_step(w, g2, m, v, N, lr, 0.9f, 0.999f, 1e-8f, wd, kind == 2, t + 1, 0.5f) == 0);
        }
        for (int i = 0; i < N; i++) {
            dw[i] = (float)((double)w[i] - w0[i]);
            dw_ref[i] = (float)((double)w_ref[i] - w0[i]);
        }
        snprintf(what, sizeof what, "%s w", cs);
        CHECK_CLOSE(what, w, w_ref, N, 1e-4);
        snprintf(what, sizeof what, "%s w - w0", cs);
        CHECK_CLOSE(what, dw, dw_ref, N, 1e-4);
        snprintf(what, sizeof what, "%s m", cs);
        CHECK_CLOSE(what, m, m_ref, N, 1e-4);
        if (kind) {
            snprintf(what, sizeof what, "%s v", cs);
            CHECK_CLOSE(what, v, v_ref, N, 1e-4);
        }
    }
    for (int t = 0; t < 3; t++)
        free(g[t]);
    free(w0), free(w_ref), free(m_ref), free(v_ref), free(w), free(m), free(v), free(g2), free(dw), free(dw_ref);
}

static void test_sgd_nesterov(void) {
    optim_fixture("sgd", 0, 0.05f, 5e-4f);
}
static void test_adam(void) {
    optim_fixture("adam", 1, 0.1f, 5e-4f);
    float w = 1, g = 1, m = 0, v = 0;
    CHECK(ops->adam_step(&w, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 0, 0, 1.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(), "step");
}
static void test_adamw(void) {
    optim_fixture("adamw", 2, 0.1f, 0.05f);
}

/* EMA and the sum of squares against their closed forms in double. */
static void test_ema_sum_squares(void) {
    enum { N = 4099 };
    float *e = rand_buf(N, 61, -1, 1), *w = rand_buf(N, 62, -1, 1), *e0 = malloc(N * sizeof *e0);
    memcpy(e0, e, N * sizeof *e);
    const float dcy = 0.9999f * (1.0f - expf(-10.0f / 2000.0f));
    CHECK(ops->ema_update(e, w, N, dcy) == 0);
    int bad = 0;
    double ss = 0;
    for (int i = 0; i < N; i++) {
        double want = (double)dcy * e0[i] + (1.0 - (double)dcy) * w[i];
        bad += fabs(e[i] - want) > 1e-6;
        ss += (double)w[i] * w[i];
    }
    CHECK_EQ_I64(bad, 0);
    double got = -1;
    CHECK(ops->sum_squares(w, N, &got) == 0);
    CHECK(fabs(got - ss) <= 1e-12 * ss); /* double accumulation: only summation order differs */
    CHECK(ops->sum_squares(w, 0, &got) == 0 && got == 0.0);
    CHECK(ops->sum_squares(w, N, NULL) == -1);
    free(e), free(w), free(e0);
}

static void test_table_complete(void) {
    CHECK(cpu->ops == ops);
    CHECK(ops->conv2d_forward && ops->conv2d_backward_data && ops->conv2d_backward_weights);
    CHECK(ops->bn_forward_train && ops->bn_forward_eval && ops->bn_apply && ops->bn_backward);
    CHECK(ops->add_forward && ops->axpy_grad && ops->concat_forward && ops->concat_backward);
    CHECK(ops->upsample_forward && ops->upsample_backward && ops->maxpool_forward && ops->maxpool_backward);
    CHECK(ops->space_to_depth_forward && ops->space_to_depth_backward);
    CHECK(ops->sgd_step && ops->adam_step && ops->ema_update && ops->sum_squares);
}

int main(int argc, char **argv) {
    verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
    cpu = yp_backend_cpu();
    ops = cpu->ops;
    uint32_t probe = 1;
    if (*(unsigned char *)&probe != 1) {
        printf("  SKIP: the fixtures are little-endian float32\n");
        return 77;
    }
    if (!ops || fx_load() != 0) {
        fprintf(stderr, "no op table or no fixtures\n");
        return 1;
    }
    YP_RUN(test_table_complete);
    YP_RUN(test_conv_k3s1p1);
    YP_RUN(test_conv_k3s2p1);
    YP_RUN(test_conv_k6s2p2);
    YP_RUN(test_conv_k1_bias);
    YP_RUN(test_conv_finite_diff);
    YP_RUN(test_conv_errors);
    YP_RUN(test_bn_train);
    YP_RUN(test_bn_train_wide);
    YP_RUN(test_bn_eval);
    YP_RUN(test_bn_finite_diff);
    YP_RUN(test_bn_errors);
    YP_RUN(test_add_axpy);
    YP_RUN(test_concat2);
    YP_RUN(test_concat4);
    YP_RUN(test_upsample_x2);
    YP_RUN(test_space_to_depth);
    YP_RUN(test_maxpool_k5s1p2);
    YP_RUN(test_maxpool_wide);
    YP_RUN(test_maxpool_k3s2p1);
    YP_RUN(test_maxpool_nan_and_errors);
    YP_RUN(test_sgd_nesterov);
    YP_RUN(test_adam);
    YP_RUN(test_adamw);
    YP_RUN(test_ema_sum_squares);
    free(fx_data);
    return yp_test_summary();
}
