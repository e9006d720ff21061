/* test_cpu_conv_cross.c - the CPU backend's non-square conv2d (YOLOv5's CrossConv: a 1xk conv
 * strided along the width, then a kx1 one strided along the height, possibly grouped), forward,
 * backward-data and backward-weights with and without bias, against PyTorch
 * (tests/data/ops/cross.*, tests/ref/make_cross_conv_fixtures.py), each with exactly the scratch
 * conv2d_scratch asks for, beta 0 onto NaN and beta 1; and the per-axis geometry's errors. The
 * double-loop and finite-difference checks of non-square shapes are test_cpu_conv's. */
#define YP_FX_STEM "cross"
#define YP_FX_SCRIPT "make_cross_conv_fixtures.py"
#include "cpu_conv_case.h"

static yp_conv_desc cross_desc(int64_t n, int64_t cin, int64_t h, int64_t w, int64_t cout, int kh, int kw, int sh,
                               int sw, int groups) {
    yp_conv_desc d = conv_desc_hw(n, cin, h, w, cout, kh, kw, sh, sw, kh / 2, kw / 2); /* YOLOv5's autopad of a list */
    d.groups = groups;
    return d;
}

static void test_fixture_1x3(void) { conv_fixture_case("cross_k1x3s1", cross_desc(2, 4, 6, 7, 6, 1, 3, 1, 1, 1), 0); }
static void test_fixture_3x1(void) { conv_fixture_case("cross_k3x1s1", cross_desc(2, 6, 6, 7, 4, 3, 1, 1, 1, 1), 0); }
static void test_fixture_1x3_s2(void) {
    conv_fixture_case("cross_k1x3s2", cross_desc(2, 4, 6, 9, 6, 1, 3, 1, 2, 1), 0);
}
static void test_fixture_3x1_s2_g2_bias(void) {
    conv_fixture_case("cross_k3x1s2_g2", cross_desc(2, 6, 7, 5, 4, 3, 1, 2, 1, 2), 1);
}

/* An output that only one axis's geometry explains is refused, naming both axes; so is a bad
 * extent on one axis only. */
static void test_errors(void) {
    static _Alignas(64) float buf[4096], ws[1 << 14];
    yp_conv_desc d = cross_desc(1, 4, 6, 6, 4, 1, 3, 1, 2, 1);
    d.out.w = 6; /* what stride 1 would give */
    int64_t per_image, fixed;
    CHECK(ops->conv2d_forward(cpu, &d, buf, buf, NULL, buf, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "k 1x3 s 1x2 p 0x1");
    d = cross_desc(1, 4, 6, 6, 4, 3, 1, 2, 1, 1);
    d.pw = -1;
    CHECK(ops->conv2d_scratch(cpu, &d, 0, YP_CONV_FORWARD, &per_image, &fixed) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "padding 1x-1");
    d.pw = 0, d.kw = 0;
    CHECK(ops->conv2d_backward_data(cpu, &d, buf, buf, buf, 0.0f, ws, ws) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "bad kernel 3x0");
}

int main(int argc, char **argv) {
    int rc = cpu_ops_setup(argc, argv);
    if (rc) return rc;
    YP_RUN(test_fixture_1x3);
    YP_RUN(test_fixture_3x1);
    YP_RUN(test_fixture_1x3_s2);
    YP_RUN(test_fixture_3x1_s2_g2_bias);
    YP_RUN(test_errors);
    free(fx_data);
    return yp_test_summary();
}
