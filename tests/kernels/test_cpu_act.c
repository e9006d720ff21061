/* test_cpu_act.c - the CPU backend's activations other than SiLU (relu, leaky_relu, hardswish)
 * and its zero padding against PyTorch 1.13 (tests/data/ops, written by
 * tests/ref/make_op_fixtures.py): forward, backward with beta 0 (dx overwritten, the NaN it held
 * never read) and beta 1 (added), each at the ends of the pieces (0, -0, +-3), where a backward
 * picks a side; the argument and element-type checks. */
#include "cpu_ops_fixture.h"

/* ---- activations ---- */

typedef int (*fwd_fn)(const float *x, float *y, int64_t n);
typedef int (*bwd_fn)(const float *x, const float *y, const float *dy, float *dx, float beta, int64_t n);

static int relu_f(const float *x, float *y, int64_t n) { return ops->relu_forward(cpu, YP_ELEM_F32, x, y, n); }
static int relu_b(const float *x, const float *y, const float *dy, float *dx, float beta, int64_t n) {
    (void)x; /* ReLU's backward reads its output, as autograd saves it */
    return ops->relu_backward(cpu, YP_ELEM_F32, y, dy, dx, beta, n);
}
static int leaky_f(const float *x, float *y, int64_t n) {
    return ops->leaky_relu_forward(cpu, YP_ELEM_F32, 0.1f, x, y, n);
}
static int leaky_b(const float *x, const float *y, const float *dy, float *dx, float beta, int64_t n) {
    (void)y;
    return ops->leaky_relu_backward(cpu, YP_ELEM_F32, 0.1f, x, dy, dx, beta, n);
}
static int hswish_f(const float *x, float *y, int64_t n) {
    return ops->hardswish_forward(cpu, YP_ELEM_F32, x, y, n);
}
static int hswish_b(const float *x, const float *y, const float *dy, float *dx, float beta, int64_t n) {
    (void)y;
    return ops->hardswish_backward(cpu, YP_ELEM_F32, x, dy, dx, beta, n);
}

/* Fixture case cs of n elements through f and b; tol: fp32 rounding of the reference's float64. */
static void act_fixture(const char *cs, fwd_fn f, bwd_fn b, double tol) {
    enum { N = 2 * 5 * 3 * 4 };
    float *x = fxc(cs, "x", N), *y_ref = fxc(cs, "y", N), *dy = fxc(cs, "dy", N), *dx_ref = fxc(cs, "dx", N);
    float *y = nan_buf(N), *dx = nan_buf(N);
    char what[64];
    if (x && y_ref && dy && dx_ref) {
        CHECK(f(x, y, N) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, N, tol);
        CHECK(b(x, y, dy, dx, 0.0f, N) == 0);
        snprintf(what, sizeof what, "%s dx", cs);
        CHECK_CLOSE(what, dx, dx_ref, N, tol);
        float *want = sum_buf(dx_ref, dx_ref, N);
        CHECK(b(x, y, dy, dx, 1.0f, N) == 0);
        snprintf(what, sizeof what, "%s dx (beta 1)", cs);
        CHECK_CLOSE(what, dx, want, N, tol);
        free(want);
        memcpy(dx, dy, N * sizeof *dx); /* in place: dx is dy with beta 0 */
        CHECK(b(x, y, dx, dx, 0.0f, N) == 0);
        snprintf(what, sizeof what, "%s dx (in place)", cs);
        CHECK_CLOSE(what, dx, dx_ref, N, tol);
        memcpy(y, x, N * sizeof *y);
        CHECK(f(y, y, N) == 0);
        snprintf(what, sizeof what, "%s y (in place)", cs);
        CHECK_CLOSE(what, y, y_ref, N, tol);
    }
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

/* ReLU and LeakyReLU are one compare and at most one multiply: exact up to the product's rounding. */
static void test_relu(void) { act_fixture("relu", relu_f, relu_b, 0.0); }
static void test_leaky_relu(void) { act_fixture("leaky_relu", leaky_f, leaky_b, 1e-7); }
static void test_hardswish(void) { act_fixture("hardswish", hswish_f, hswish_b, 1e-6); }

/* The pieces' ends one by one: ReLU's gradient at an output of 0 is 0, LeakyReLU's at an input of
 * 0 (and -0) is slope*dy, Hardswish's at -3 is -dy/2 and at 3 is dy (PyTorch's vectorised
 * backward, what the fixture's x = 3 got); NaN passes ReLU. */
static void test_act_edges(void) {
    float x[4] = {0.0f, -0.0f, -3.0f, 3.0f}, y[4], dy[4] = {1, 1, 1, 1}, dx[4];
    CHECK(ops->relu_forward(cpu, YP_ELEM_F32, x, y, 2) == 0);
    CHECK(ops->relu_backward(cpu, YP_ELEM_F32, y, dy, dx, 0.0f, 2) == 0);
    CHECK(dx[0] == 0.0f && dx[1] == 0.0f);
    CHECK(ops->leaky_relu_backward(cpu, YP_ELEM_F32, 0.25f, x, dy, dx, 0.0f, 2) == 0);
    CHECK(dx[0] == 0.25f && dx[1] == 0.25f);
    CHECK(ops->hardswish_forward(cpu, YP_ELEM_F32, x + 2, y, 2) == 0);
    CHECK(y[0] == 0.0f && y[1] == 3.0f);
    CHECK(ops->hardswish_backward(cpu, YP_ELEM_F32, x + 2, dy, dx, 0.0f, 2) == 0);
    CHECK(dx[0] == -0.5f && dx[1] == 1.0f);
    float nan_in = NAN, nan_out = 0.0f;
    CHECK(ops->relu_forward(cpu, YP_ELEM_F32, &nan_in, &nan_out, 1) == 0);
    CHECK(isnan(nan_out));
}

/* ---- zero padding: a copy into a border of zeros, exact both ways ---- */

static void pad_fixture(const char *cs, int l, int r, int t, int b) {
    yp_pad_desc d = {{2, 4, 5, 3}, l, r, t, b, YP_ELEM_F32};
    yp_dims out = {2, 4 + t + b, 5 + l + r, 3};
    const int64_t nx = dims_count(d.in), ny = dims_count(out);
    float *x = fxc(cs, "x", nx), *y_ref = fxc(cs, "y", ny), *dy = fxc(cs, "dy", ny), *dx_ref = fxc(cs, "dx", nx);
    float *y = nan_buf(ny), *dx = nan_buf(nx);
    char what[64];
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->zero_pad_forward(cpu, &d, x, y) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, ny, 0.0);
        CHECK(ops->zero_pad_backward(cpu, &d, dy, dx, 0.0f) == 0);
        snprintf(what, sizeof what, "%s dx", cs);
        CHECK_CLOSE(what, dx, dx_ref, nx, 0.0);
        float *want = sum_buf(dx_ref, dx_ref, nx);
        CHECK(ops->zero_pad_backward(cpu, &d, dy, dx, 1.0f) == 0);
        snprintf(what, sizeof what, "%s dx (beta 1)", cs);
        CHECK_CLOSE(what, dx, want, nx, 0.0);
        free(want);
    }
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

static void test_zero_pad_0101(void) { pad_fixture("zero_pad_0101", 0, 1, 0, 1); }
static void test_zero_pad_1230(void) { pad_fixture("zero_pad_1230", 1, 2, 3, 0); }

/* ---- refusals: one line naming the op ---- */

static void test_act_errors(void) {
    float v[8] = {0};
    CHECK(ops->relu_forward(cpu, YP_ELEM_F16, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: relu_forward: dtype f16 not supported");
    CHECK(ops->relu_backward(cpu, YP_ELEM_BF16, v, v, v, 0.0f, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "relu_backward: dtype bf16");
    CHECK(ops->leaky_relu_forward(cpu, YP_ELEM_F16, 0.1f, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "leaky_relu_forward: dtype f16");
    CHECK(ops->leaky_relu_backward(cpu, YP_ELEM_F16, 0.1f, v, v, v, 0.0f, 4) == -1);
    CHECK(ops->hardswish_forward(cpu, YP_ELEM_F16, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "hardswish_forward: dtype f16");
    CHECK(ops->hardswish_backward(cpu, YP_ELEM_F16, v, v, v, 0.0f, 4) == -1);
    CHECK(ops->relu_forward(cpu, YP_ELEM_F32, v, v, -1) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "relu_forward: negative element count");
    CHECK(ops->hardswish_backward(cpu, YP_ELEM_F32, v, NULL, v, 0.0f, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "hardswish_backward: NULL buffer");
    CHECK(ops->leaky_relu_forward(cpu, YP_ELEM_F32, 0.1f, NULL, NULL, 0) == 0); /* nothing to do */
    yp_pad_desc d = {{1, 2, 2, 1}, 0, 1, 0, 1, YP_ELEM_F16};
    CHECK(ops->zero_pad_forward(cpu, &d, v, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: zero_pad_forward: dtype f16");
    CHECK(ops->zero_pad_backward(cpu, &d, v, v, 0.0f) == -1);
    d.dtype = YP_ELEM_F32, d.left = -1;
    CHECK(ops->zero_pad_forward(cpu, &d, v, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "zero_pad_forward: negative padding");
    CHECK(ops->zero_pad_forward(cpu, NULL, v, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL descriptor");
    d.left = 0, d.in.h = 0;
    CHECK(ops->zero_pad_backward(cpu, &d, v, v, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "zero_pad_backward: input dims");
}

int main(int argc, char **argv) {
    int rc = cpu_ops_setup(argc, argv);
    if (rc) return rc;
    YP_RUN(test_relu);
    YP_RUN(test_leaky_relu);
    YP_RUN(test_hardswish);
    YP_RUN(test_act_edges);
    YP_RUN(test_zero_pad_0101);
    YP_RUN(test_zero_pad_1230);
    YP_RUN(test_act_errors);
    free(fx_data);
    return yp_test_summary();
}
