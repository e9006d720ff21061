/* test_grad_scaler.c - the AMP loss scale's state machine (executor/yp_grad_scaler.h) against
 * torch.cuda.amp.GradScaler's semantics (torch._amp_update_scale_, which PyTorch 1.13 runs on CUDA
 * only, so the expectations are written out here): init 2^16; a step with inf/NaN gradients is
 * skipped and halves the scale and restarts the count; the 2000th clean step in a row doubles it;
 * a doubling that would overflow fp32 keeps the scale. */
#include <float.h>
#include <math.h>

#include "yp_grad_scaler.h"
#include "yp_test.h"

static void test_defaults(void) {
    yp_grad_scaler s = yp_grad_scaler_init();
    CHECK(s.scale == 65536.0f && s.growth_factor == 2.0f && s.backoff_factor == 0.5f);
    CHECK_EQ_I64(s.growth_interval, 2000);
    CHECK(yp_grad_scaler_inv_scale(&s) == 1.0f / 65536.0f);
}

static void test_backoff_skips(void) {
    yp_grad_scaler s = yp_grad_scaler_init();
    CHECK_EQ_I64(yp_grad_scaler_update(&s, 1), 0); /* skipped */
    CHECK(s.scale == 32768.0f);
    CHECK_EQ_I64(s.skipped, 1);
    for (int k = 0; k < 3; k++) CHECK_EQ_I64(yp_grad_scaler_update(&s, 1), 0);
    CHECK(s.scale == 4096.0f);
    CHECK_EQ_I64(yp_grad_scaler_update(&s, 0), 1); /* a clean step is taken, the scale kept */
    CHECK(s.scale == 4096.0f);
    CHECK_EQ_I64(s.growth_tracker, 1);
}

static void test_growth_after_2000_clean(void) {
    yp_grad_scaler s = yp_grad_scaler_init();
    for (int k = 0; k < 1999; k++) CHECK_EQ_I64(yp_grad_scaler_update(&s, 0), 1);
    CHECK(s.scale == 65536.0f);
    CHECK_EQ_I64(s.growth_tracker, 1999);
    CHECK_EQ_I64(yp_grad_scaler_update(&s, 0), 1); /* the 2000th */
    CHECK(s.scale == 131072.0f);
    CHECK_EQ_I64(s.growth_tracker, 0);
    /* 1999 clean, then an inf: the count restarts, no growth; 2000 more clean grow from the halved scale */
    for (int k = 0; k < 1999; k++) yp_grad_scaler_update(&s, 0);
    CHECK_EQ_I64(yp_grad_scaler_update(&s, 1), 0);
    CHECK(s.scale == 65536.0f);
    CHECK_EQ_I64(s.growth_tracker, 0);
    for (int k = 0; k < 1999; k++) yp_grad_scaler_update(&s, 0);
    CHECK(s.scale == 65536.0f);
    yp_grad_scaler_update(&s, 0);
    CHECK(s.scale == 131072.0f);
}

static void test_no_overflow(void) {
    yp_grad_scaler s = yp_grad_scaler_init();
    s.scale = FLT_MAX / 1.5f, s.growth_interval = 1;
    CHECK_EQ_I64(yp_grad_scaler_update(&s, 0), 1);
    CHECK(isfinite(s.scale) && s.scale == FLT_MAX / 1.5f); /* x2 would be inf: kept */
    CHECK_EQ_I64(s.growth_tracker, 0);
    s.scale = 1e-45f; /* the smallest subnormal: halving reaches 0, as float arithmetic does in PyTorch */
    yp_grad_scaler_update(&s, 1);
    CHECK(s.scale == 0.0f);
}

int main(void) {
    YP_RUN(test_defaults);
    YP_RUN(test_backoff_skips);
    YP_RUN(test_growth_after_2000_clean);
    YP_RUN(test_no_overflow);
    return yp_test_summary();
}
