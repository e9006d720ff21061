/* test_cpu_ops.c - the rest of the CPU backend's op table (kernels/yp_ops.h): add, concat,
 * upsample, space_to_depth and depth_to_space (Focus, YOLOv5's Contract and Expand at gains 2
 * and 3), max pool, SGD/Adam/AdamW, EMA, sum of squares, Detect's eval decode, against PyTorch
 * references (tests/data/ops), the beta contract and argument errors; and that the table is
 * complete. Conv and batch norm are in test_cpu_conv.c. */
#include "cpu_ops_fixture.h"

/* ---- eltwise ---- */

static void test_add_axpy(void) {
    enum { N = 1001 };
    float *a = rand_buf(N, 51, -1, 1), *b = rand_buf(N, 52, -1, 1), *y = nan_buf(N), *dx = nan_buf(N);
    CHECK(ops->add_forward(cpu, YP_ELEM_F32, a, b, y, N) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += y[i] != a[i] + b[i];
    CHECK(ops->axpy_grad(cpu, YP_ELEM_F32, a, dx, 0.0f, N) == 0); /* dx = a (NaN not read) */
    bad += memcmp(dx, a, sizeof(float) * N) != 0;
    CHECK(ops->axpy_grad(cpu, YP_ELEM_F32, b, dx, 1.0f, N) == 0); /* dx = a + b */
    for (int i = 0; i < N; i++)
        bad += dx[i] != a[i] + b[i];
    CHECK(ops->axpy_grad(cpu, YP_ELEM_F32, a, dx, 0.5f, N) == 0); /* dx = 0.5*(a + b) + a */
    for (int i = 0; i < N; i++)
        bad += fabsf(dx[i] - (0.5f * (a[i] + b[i]) + a[i])) > 1e-6f;
    CHECK_EQ_I64(bad, 0);
    CHECK(ops->add_forward(cpu, YP_ELEM_F32, a, b, y, 0) == 0);
    CHECK(ops->add_forward(cpu, YP_ELEM_F32, a, b, y, -1) == -1);
    CHECK(ops->axpy_grad(cpu, YP_ELEM_F32, NULL, dx, 1.0f, 3) == -1);
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
        CHECK(ops->concat_forward(cpu, YP_ELEM_F32, k, (const float *const *)xs, chans, out, y) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, ny, 0.0);
        CHECK(ops->concat_backward(cpu, YP_ELEM_F32, k, dxs, chans, out, dy, betas) == 0);
        for (int i = 0; i < k; i++) {
            snprintf(what, sizeof what, "%s dx%d", cs, i);
            CHECK_CLOSE(what, dxs[i], dx_ref[i], rows * chans[i], 0.0);
        }
        /* Input 0 accumulates (beta 1), input 1 is not wanted (NULL), the rest overwrite again. */
        float *keep1 = dxs[1];
        betas[0] = 1.0f;
        dxs[1] = NULL;
        CHECK(ops->concat_backward(cpu, YP_ELEM_F32, k, dxs, chans, out, dy, betas) == 0);
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
    CHECK(ops->concat_forward(cpu, YP_ELEM_F32, 2, xs, (const int64_t[]){1, 1}, (yp_dims){1, 1, 1, 3}, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "add up to");
}

/* Upsample x2: forward copies (exact); backward sums 4 values per input pixel in fp32 against the
 * float64 sum (~1e-7). */
static void test_upsample_x2(void) {
    yp_dims in = {2, 3, 4, 5};
    const int64_t nx = dims_count(in), ny = 4 * nx;
    float *x = fx("upsample_x2.x", nx), *y_ref = fx("upsample_x2.y", ny), *dy = fx("upsample_x2.dy", ny);
    float *dx_ref = fx("upsample_x2.dx", nx), *y = nan_buf(ny), *dx = nan_buf(nx);
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->upsample_forward(cpu, YP_ELEM_F32, in, 2, x, y) == 0);
        CHECK_CLOSE("upsample_x2 y", y, y_ref, ny, 0.0);
        CHECK(ops->upsample_backward(cpu, YP_ELEM_F32, in, 2, dy, dx, 0.0f) == 0);
        CHECK_CLOSE("upsample_x2 dx", dx, dx_ref, nx, 1e-6);
        float *want = sum_buf(dx_ref, dx_ref, nx);
        CHECK(ops->upsample_backward(cpu, YP_ELEM_F32, in, 2, dy, dx, 1.0f) == 0);
        CHECK_CLOSE("upsample_x2 dx (beta 1)", dx, want, nx, 1e-6);
        free(want);
    }
    CHECK(ops->upsample_forward(cpu, YP_ELEM_F32, in, 0, x, y) == -1);
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

/* ---- pixel blocks to channels: permutations, so both directions are exact ---- */

/* space_to_depth (Focus: 2x2 blocks, column-major): forward space_to_depth, backward
 * depth_to_space, beta 0 (NaN not read) and 1. */
static void test_space_to_depth(void) {
    yp_dims in = {2, 6, 8, 3};
    const int64_t n = dims_count(in);
    float *x = fx("s2d.x", n), *y_ref = fx("s2d.y", n), *dy = fx("s2d.dy", n), *dx_ref = fx("s2d.dx", n);
    float *y = nan_buf(n), *dx = nan_buf(n);
    yp_s2d_desc d = {in, 2, YP_S2D_COL_MAJOR};
    if (x && y_ref && dy && dx_ref) {
        CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, x, y, 0.0f) == 0);
        CHECK_CLOSE("s2d y", y, y_ref, n, 0.0);
        CHECK(ops->depth_to_space(cpu, YP_ELEM_F32, &d, dy, dx, 0.0f) == 0);
        CHECK_CLOSE("s2d dx", dx, dx_ref, n, 0.0);
        float *want = sum_buf(dx_ref, dx_ref, n);
        CHECK(ops->depth_to_space(cpu, YP_ELEM_F32, &d, dy, dx, 1.0f) == 0);
        CHECK_CLOSE("s2d dx (beta 1)", dx, want, n, 0.0);
        free(want);
    }
    d.fine.w = 7;
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, x, y, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "space_to_depth: fine map 6x7: height and width must be multiples of the gain 2");
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

/* YOLOv5's Contract (expand 0) or Expand (expand 1) at `gain` against the PyTorch module's
 * forward and autograd: Contract is space_to_depth in row-major block order and its backward
 * depth_to_space; Expand the other way round. `fine` is the fine map: Contract's input,
 * Expand's output. The backward with beta 0 (NaN not read) and beta 1. */
static void block_fixture(const char *cs, yp_dims fine, int gain, int expand) {
    const int64_t n = dims_count(fine);
    float *x = fxc(cs, "x", n), *y_ref = fxc(cs, "y", n), *dy = fxc(cs, "dy", n), *dx_ref = fxc(cs, "dx", n);
    float *y = nan_buf(n), *dx = nan_buf(n);
    const yp_s2d_desc d = {fine, gain, YP_S2D_ROW_MAJOR};
    int (*fwd)(yp_backend *, yp_elem, const yp_s2d_desc *, const float *, float *, float) =
        expand ? ops->depth_to_space : ops->space_to_depth;
    int (*bwd)(yp_backend *, yp_elem, const yp_s2d_desc *, const float *, float *, float) =
        expand ? ops->space_to_depth : ops->depth_to_space;
    char what[64];
    if (x && y_ref && dy && dx_ref) {
        CHECK(fwd(cpu, YP_ELEM_F32, &d, x, y, 0.0f) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, n, 0.0);
        CHECK(bwd(cpu, YP_ELEM_F32, &d, dy, dx, 0.0f) == 0);
        snprintf(what, sizeof what, "%s dx", cs);
        CHECK_CLOSE(what, dx, dx_ref, n, 0.0);
        float *want = sum_buf(dx_ref, dx_ref, n);
        CHECK(bwd(cpu, YP_ELEM_F32, &d, dy, dx, 1.0f) == 0);
        snprintf(what, sizeof what, "%s dx (beta 1)", cs);
        CHECK_CLOSE(what, dx, want, n, 0.0);
        free(want);
        /* Focus's block order is another permutation: it must not pass for Contract's */
        const yp_s2d_desc focus = {fine, gain, YP_S2D_COL_MAJOR};
        CHECK(fwd(cpu, YP_ELEM_F32, &focus, x, y, 0.0f) == 0);
        CHECK(rel_err(y, y_ref, n) > 0.1);
    }
    free(x), free(y_ref), free(dy), free(dx_ref), free(y), free(dx);
}

static void test_contract_g2(void) { block_fixture("contract_g2", (yp_dims){2, 4, 6, 3}, 2, 0); }
static void test_contract_g3(void) { block_fixture("contract_g3", (yp_dims){2, 6, 9, 2}, 3, 0); }
static void test_expand_g2(void) { block_fixture("expand_g2", (yp_dims){2, 6, 8, 2}, 2, 1); }
static void test_expand_g3(void) { block_fixture("expand_g3", (yp_dims){2, 6, 9, 2}, 3, 1); }

/* Argument errors, before any write: the gain must divide the fine map, a gain and an order in
 * range, two buffers (no in place), a descriptor. */
static void test_s2d_errors(void) {
    float v[64] = {0}, w[64] = {0};
    yp_s2d_desc d = {{1, 6, 4, 1}, 3, YP_S2D_ROW_MAJOR};
    CHECK(ops->depth_to_space(cpu, YP_ELEM_F32, &d, v, w, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "depth_to_space: fine map 6x4: height and width must be multiples of the gain 3");
    d.gain = 0;
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, v, w, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "space_to_depth: gain 0");
    d.gain = 2, d.order = YP_S2D_ORDER_COUNT;
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, v, w, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "order 2");
    d.order = YP_S2D_ROW_MAJOR;
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, v, v, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "in place");
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, NULL, v, w, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "NULL descriptor");
    CHECK(ops->depth_to_space(cpu, YP_ELEM_F32, &d, NULL, w, 0.0f) == -1);
    d.fine.c = 0;
    CHECK(ops->depth_to_space(cpu, YP_ELEM_F32, &d, v, w, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "fine map dims");
    d.fine.c = 1, d.gain = 1; /* gain 1: a copy */
    for (int i = 0; i < 24; i++) v[i] = (float)i;
    CHECK(ops->space_to_depth(cpu, YP_ELEM_F32, &d, v, w, 0.0f) == 0);
    CHECK(memcmp(v, w, 24 * sizeof *v) == 0);
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
        CHECK(ops->maxpool_forward(cpu, &d, x, y) == 0);
        snprintf(what, sizeof what, "%s y", cs);
        CHECK_CLOSE(what, y, y_ref, ny, 0.0);
        CHECK(ops->maxpool_backward(cpu, &d, x, dy, dx, 0.0f) == 0);
        snprintf(what, sizeof what, "%s dx", cs);
        CHECK_CLOSE(what, dx, dx_ref, nx, 1e-6);
        float *want = sum_buf(dx_ref, dx_ref, nx);
        CHECK(ops->maxpool_backward(cpu, &d, x, dy, dx, 1.0f) == 0);
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
/* yolov3-tiny's pools: k 2 s 2 (an odd height drops its last row) and k 2 s 1 after its zero pad. */
static void test_maxpool_k2s2p0(void) {
    maxpool_fixture("maxpool_k2s2p0", (yp_dims){2, 7, 8, 3}, 2, 2, 0);
}
static void test_maxpool_k2s1p0(void) {
    maxpool_fixture("maxpool_k2s1p0", (yp_dims){2, 6, 5, 3}, 2, 1, 0);
}

/* NaN wins its window (PyTorch propagates it); padding wider than k/2 is refused. */
static void test_maxpool_nan_and_errors(void) {
    yp_pool_desc d = {.in = {1, 1, 3, 1}, .out = {1, 1, 3, 1}, .k = 3, .s = 1, .p = 1};
    float x[3] = {1.0f, NAN, 2.0f}, y[3], dy[3] = {1, 1, 1}, dx[3];
    CHECK(ops->maxpool_forward(cpu, &d, x, y) == 0);
    CHECK(isnan(y[0]) && isnan(y[1]) && isnan(y[2]));
    CHECK(ops->maxpool_backward(cpu, &d, x, dy, dx, 0.0f) == 0);
    CHECK(dx[0] == 0.0f && dx[1] == 3.0f && dx[2] == 0.0f);
    d.p = 2;
    d.out.w = 5;
    CHECK(ops->maxpool_forward(cpu, &d, x, y) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "padding");
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
            const yp_optim_hyp h = {.lr = lr, .momentum = kind ? 0.9f : 0.937f, .beta2 = 0.999f, .eps = 1e-8f,
                                    .weight_decay = wd, .decoupled = kind == 2, .step = t + 1, .grad_scale = 0.5f};
            if (kind == 0)
                CHECK(ops->sgd_step(cpu, YP_ELEM_F32, w, g2, m, N, &h) == 0);
            else
                CHECK(ops->adam_step(cpu, YP_ELEM_F32, w, g2, m, v, N, &h) == 0);
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
    const yp_optim_hyp h = {.lr = 0.1f, .momentum = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .step = 0, .grad_scale = 1.0f};
    CHECK(ops->adam_step(cpu, YP_ELEM_F32, &w, &g, &m, &v, 1, &h) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "step");
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
    CHECK(ops->ema_update(cpu, YP_ELEM_F32, e, w, N, dcy) == 0);
    int bad = 0;
    double ss = 0;
    for (int i = 0; i < N; i++) {
        double want = (double)dcy * e0[i] + (1.0 - (double)dcy) * w[i];
        bad += fabs(e[i] - want) > 1e-6;
        ss += (double)w[i] * w[i];
    }
    CHECK_EQ_I64(bad, 0);
    /* the fused step: SGD, zeroed gradient and EMA as the separate entries give them */
    float *w1 = rand_buf(N, 63, -1, 1), *g1 = rand_buf(N, 64, -1, 1), *m1 = rand_buf(N, 65, -1, 1);
    float *w2 = malloc(N * sizeof *w2), *g2 = malloc(N * sizeof *g2), *m2 = malloc(N * sizeof *m2);
    float *e1 = rand_buf(N, 66, -1, 1), *e2 = malloc(N * sizeof *e2);
    memcpy(w2, w1, N * sizeof *w1), memcpy(g2, g1, N * sizeof *g1), memcpy(m2, m1, N * sizeof *m1);
    memcpy(e2, e1, N * sizeof *e1);
    const yp_optim_hyp h = {.lr = 0.01f, .momentum = 0.937f, .weight_decay = 5e-4f, .grad_scale = 0.5f, .ema_decay = dcy};
    CHECK(ops->sgd_step(cpu, YP_ELEM_F32, w1, g1, m1, N, &h) == 0);
    memset(g1, 0, N * sizeof *g1);
    CHECK(ops->ema_update(cpu, YP_ELEM_F32, e1, w1, N, dcy) == 0);
    CHECK(ops->sgd_ema_step(cpu, YP_ELEM_F32, w2, g2, m2, e2, N, &h) == 0);
    CHECK(!memcmp(w1, w2, N * sizeof *w1) && !memcmp(g1, g2, N * sizeof *g1) && !memcmp(m1, m2, N * sizeof *m1) &&
          !memcmp(e1, e2, N * sizeof *e1));
    free(w1), free(g1), free(m1), free(w2), free(g2), free(m2), free(e1), free(e2);
    double got = -1;
    CHECK(ops->sum_squares(cpu, YP_ELEM_F32, w, N, &got) == 0);
    CHECK(fabs(got - ss) <= 1e-12 * ss); /* double accumulation: only summation order differs */
    CHECK(ops->sum_squares(cpu, YP_ELEM_F32, w, 0, &got) == 0 && got == 0.0);
    CHECK(ops->sum_squares(cpu, YP_ELEM_F32, w, N, NULL) == -1);
    /* several tensors at once: the sums of the single calls added in order, to the bit */
    const float *xs[4] = {w, e, w + 7, NULL};
    const int64_t ns[4] = {N, N, 100, 0};
    double one = 0, sum = 0, multi = -1;
    for (int j = 0; j < 4; j++) {
        CHECK(ops->sum_squares(cpu, YP_ELEM_F32, xs[j], ns[j], &one) == 0);
        sum += one;
    }
    CHECK(ops->sum_squares_multi(cpu, YP_ELEM_F32, 4, xs, ns, &multi) == 0);
    CHECK(multi == sum);
    CHECK(ops->sum_squares_multi(cpu, YP_ELEM_F32, 0, NULL, NULL, &multi) == 0 && multi == 0.0);
    CHECK(ops->sum_squares_multi(cpu, YP_ELEM_F32, 4, xs, ns, NULL) == -1);
    CHECK(ops->sum_squares_multi(cpu, YP_ELEM_F32, -1, xs, ns, &multi) == -1);
    CHECK(ops->sum_squares_multi(cpu, YP_ELEM_BF16, 4, xs, ns, &multi) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "sum_squares_multi: dtype bf16");
    free(e), free(w), free(e0);
}

/* The CPU runs fp32 only: every op with an element-type parameter or descriptor field refuses
 * the others with one line naming the op and the type, before touching any buffer. */
static void test_dtype_refused(void) {
    float v[16] = {0}, *vs[2] = {v, v};
    const float *cvs[2] = {v, v};
    const int64_t cs[2] = {1, 1};
    double ss;
    const yp_optim_hyp h = {.lr = 0.1f, .step = 1, .grad_scale = 1.0f};
    const yp_elem f16 = YP_ELEM_F16, bf16 = YP_ELEM_BF16;
    CHECK(ops->silu_forward(cpu, f16, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: silu_forward: dtype f16 not supported; the CPU runs fp32 plans");
    CHECK(strchr(cpu->last_error(cpu), '\n') == NULL);
    CHECK(ops->silu_backward(cpu, bf16, v, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: silu_backward: dtype bf16 not supported");
    CHECK(ops->add_forward(cpu, f16, v, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "add_forward: dtype f16");
    CHECK(ops->axpy_grad(cpu, f16, v, v, 1.0f, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "axpy_grad: dtype f16");
    CHECK(ops->concat_forward(cpu, f16, 2, cvs, cs, (yp_dims){1, 1, 1, 2}, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "concat_forward: dtype f16");
    CHECK(ops->concat_backward(cpu, f16, 2, vs, cs, (yp_dims){1, 1, 1, 2}, v, v) == -1);
    CHECK(ops->upsample_forward(cpu, f16, (yp_dims){1, 1, 1, 1}, 2, v, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "upsample_forward: dtype f16");
    CHECK(ops->upsample_backward(cpu, f16, (yp_dims){1, 1, 1, 1}, 2, v, v, 0.0f) == -1);
    const yp_s2d_desc sd = {{1, 2, 2, 1}, 2, YP_S2D_ROW_MAJOR};
    CHECK(ops->space_to_depth(cpu, f16, &sd, v, v + 4, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "space_to_depth: dtype f16");
    CHECK(ops->depth_to_space(cpu, bf16, &sd, v, v + 4, 0.0f) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "depth_to_space: dtype bf16");
    yp_pool_desc pd = {{1, 2, 2, 1}, {1, 2, 2, 1}, 1, 1, 0, YP_ELEM_F16};
    CHECK(ops->maxpool_forward(cpu, &pd, v, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "cpu backend: maxpool_forward: dtype f16");
    CHECK(ops->maxpool_backward(cpu, &pd, v, v, v, 0.0f) == -1);
    CHECK(ops->sgd_step(cpu, f16, v, v, v, 4, &h) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "sgd_step: dtype f16");
    CHECK(ops->adam_step(cpu, f16, v, v, v, v, 4, &h) == -1);
    CHECK(ops->sgd_ema_step(cpu, f16, v, v, v, v, 4, &h) == -1);
    CHECK(ops->ema_update(cpu, f16, v, v, 4, 0.5f) == -1);
    CHECK(ops->sum_squares(cpu, bf16, v, 4, &ss) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "sum_squares: dtype bf16");
    yp_decode_desc dd = {1, 1, 1, 0, {1}, {1}, {8.0f}, {{{1.0f, 1.0f}}}, YP_ELEM_BF16};
    const float *dx[1] = {v};
    CHECK(ops->detect_decode(cpu, &dd, dx, v) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "detect_decode: dtype bf16");
    CHECK(ops->silu_forward(cpu, YP_ELEM_COUNT, v, v, 4) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "dtype ?");
    pd.dtype = YP_ELEM_F32; /* and fp32 still runs */
    CHECK(ops->maxpool_forward(cpu, &pd, v, v) == 0);
    CHECK(ops->silu_forward(cpu, YP_ELEM_F32, v, v, 4) == 0);
}

/* ---- evaluation decode ---- */

/* Detect's eval decode against yolov5.decode (bench/reference/yolov5.py), field by field: box
 * centres (pixels up to ~100), sizes (up to ~500) and scores (0..1) are held apart, so a wrong
 * score cannot hide under the large box values. Rows come in PyTorch's order (level, anchor, grid
 * row, column), and the grids are not square, so a swapped row and column moves whole rows. */
static void test_detect_decode(void) {
    enum { N = 2, NL = 2, NA = 3, NC = 2, NO = NC + 5 };
    const int64_t h[NL] = {4, 2}, w[NL] = {3, 5}, rows = NA * (4 * 3 + 2 * 5);
    yp_decode_desc d = {N, NL, NA, NC, {4, 2}, {3, 5}, {0}, {{{0}}}, YP_ELEM_F32};
    float *x0 = fx("decode.x0", N * h[0] * w[0] * NA * NO), *x1 = fx("decode.x1", N * h[1] * w[1] * NA * NO);
    float *want = fx("decode.y", N * rows * NO), *st = fx("decode.strides", NL), *an = fx("decode.anchors", NL * NA * 2);
    float *y = nan_buf(N * rows * NO);
    if (x0 && x1 && want && st && an) {
        for (int l = 0; l < NL; l++) {
            d.stride[l] = st[l];
            for (int a = 0; a < NA; a++) d.anchors[l][a][0] = an[(l * NA + a) * 2], d.anchors[l][a][1] = an[(l * NA + a) * 2 + 1];
        }
        const float *xs[NL] = {x0, x1};
        CHECK(ops->detect_decode(cpu, &d, xs, y) == 0);
        static const struct { const char *what; int lo, hi; } groups[] = {
            {"decode xy", 0, 2}, {"decode wh", 2, 4}, {"decode scores", 4, NO}};
        for (size_t k = 0; k < sizeof groups / sizeof *groups; k++) {
            int64_t m = 0;
            float *got = malloc(sizeof(float) * N * rows * NO), *ref = malloc(sizeof(float) * N * rows * NO);
            for (int64_t r = 0; r < N * rows; r++)
                for (int f = groups[k].lo; f < groups[k].hi; f++) got[m] = y[r * NO + f], ref[m++] = want[r * NO + f];
            CHECK_CLOSE(groups[k].what, got, ref, m, 1e-5);
            free(got), free(ref);
        }
        /* argument errors, before any write */
        const float *none[NL] = {x0, NULL};
        CHECK(ops->detect_decode(cpu, &d, none, y) == -1);
        CHECK_STR_HAS(cpu->last_error(cpu), "detect_decode: NULL input of level 1");
        d.nl = 0;
        CHECK(ops->detect_decode(cpu, &d, xs, y) == -1);
        CHECK_STR_HAS(cpu->last_error(cpu), "out of range");
    }
    free(x0), free(x1), free(want), free(st), free(an), free(y);
}

static void test_table_complete(void) {
    CHECK(cpu->ops == ops);
    CHECK(ops->conv2d_forward && ops->conv2d_backward_data && ops->conv2d_backward_weights);
    CHECK(ops->bn_forward_train && ops->bn_forward_eval && ops->bn_apply && ops->bn_backward);
    CHECK(ops->add_forward && ops->axpy_grad && ops->concat_forward && ops->concat_backward);
    CHECK(ops->upsample_forward && ops->upsample_backward && ops->maxpool_forward && ops->maxpool_backward);
    CHECK(ops->space_to_depth && ops->depth_to_space);
    CHECK(ops->sgd_step && ops->adam_step && ops->ema_update && ops->sum_squares && ops->sum_squares_multi);
    CHECK(ops->conv2d_scratch && ops->conv2d_prepare);
    CHECK(ops->loss_level); /* checked against PyTorch in test_loss */
    CHECK(ops->detect_decode);
}

int main(int argc, char **argv) {
    int rc = cpu_ops_setup(argc, argv);
    if (rc) return rc;
    YP_RUN(test_table_complete);
    YP_RUN(test_add_axpy);
    YP_RUN(test_concat2);
    YP_RUN(test_concat4);
    YP_RUN(test_upsample_x2);
    YP_RUN(test_space_to_depth);
    YP_RUN(test_contract_g2);
    YP_RUN(test_contract_g3);
    YP_RUN(test_expand_g2);
    YP_RUN(test_expand_g3);
    YP_RUN(test_s2d_errors);
    YP_RUN(test_maxpool_k5s1p2);
    YP_RUN(test_maxpool_wide);
    YP_RUN(test_maxpool_k3s2p1);
    YP_RUN(test_maxpool_k2s2p0);
    YP_RUN(test_maxpool_k2s1p0);
    YP_RUN(test_maxpool_nan_and_errors);
    YP_RUN(test_sgd_nesterov);
    YP_RUN(test_adam);
    YP_RUN(test_adamw);
    YP_RUN(test_ema_sum_squares);
    YP_RUN(test_detect_decode);
    YP_RUN(test_dtype_refused);
    free(fx_data);
    return yp_test_summary();
}
