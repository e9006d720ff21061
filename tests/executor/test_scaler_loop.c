/* test_scaler_loop.c - AMP's loss scaler in the training loop (executor/update.c), on the CPU:
 * the loss scaler runs for amp-fp16 plans, which need a GPU, so these tests turn it on for an
 * fp32 plan of the tiny IR (tests/data/ir/tiny.json), where its arithmetic is the same:
 *   - with GradScaler's power-of-two scale the loss's gradients are the unscaled ones times S and
 *     the update divides them by S again, so training with the scaler gives the weights, EMA and
 *     momentum of training without it, bit for bit (SGD and Adam);
 *   - a gradient that overflowed (an inf written into one after the backward, as an fp16
 *     gradient past 65504 becomes on a GPU) skips the optimizer: the trained weights and the
 *     optimizer state stay, the gradients are zeroed, the EMA still moves (train.py's
 *     scaler.step, zero_grad, ema.update), the scale halves, Adam's step count stays while the
 *     EMA's advances, and the next batch trains again;
 *   - only amp-fp16 plans turn the scaler on by themselves. */
#include <math.h>
#include <string.h>

#include "yp_executor.h"
#include "yp_executor_internal.h"
#include "yp_ir.h"
#include "yp_test.h"

#define SIDE 16
#define BATCH 2

static yp_graph *graph;
static yp_backend *cpu;
static yp_gpu gpu;

static int make_exec(yp_plan *p, yp_exec *x, yp_optimizer opt, int scaler) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = BATCH, c.img_w = c.img_h = SIDE, c.mosaic = 0, c.labels_per_image = 2, c.optimizer = opt;
    yp_exec_candidate_for(&c, cpu);
    if (yp_plan_build(graph, &c, &gpu, 0, 0, p, &err)) return fprintf(stderr, "plan: %s\n", err.msg), -1;
    if (yp_exec_init(x, p, cpu, 0, 7, &err)) {
        fprintf(stderr, "exec: %s\n", err.msg);
        yp_plan_free(p);
        return -1;
    }
    CHECK(x->trainer.scaler_on == 0); /* an fp32 plan: off by itself */
    x->trainer.scaler_on = scaler;
    return 0;
}

/* Batch k: images in [0, 1), two boxes per image. */
static void batch(int k, float *img, float *tg) {
    uint32_t r = 12345u + 977u * (uint32_t)k;
    for (int i = 0; i < BATCH * SIDE * SIDE * 3; i++) {
        r = r * 1664525u + 1013904223u;
        img[i] = (float)(r >> 8) / 16777216.0f;
    }
    for (int i = 0; i < 2 * BATCH; i++) {
        const float row[6] = {(float)(i / 2), 0, 0.3f + 0.1f * (float)(i % 3), 0.4f + 0.05f * (float)k, 0.3f, 0.25f};
        memcpy(tg + 6 * i, row, sizeof row);
    }
}

/* One micro-step on batch k and the update; overflow: an inf in the last gradient before it. */
static int train_step(yp_exec *x, int k, int overflow) {
    static float img[BATCH * SIDE * SIDE * 3], tg[6 * 2 * BATCH];
    yp_err err;
    double loss[4];
    batch(k, img, tg);
    if (yp_exec_micro_step(x, img, tg, 2 * BATCH, loss, &err)) return fprintf(stderr, "step %d: %s\n", k, err.msg), -1;
    for (int t = x->train.s->n_tensors - 1; overflow && t >= 0; t--)
        if (x->train.s->tensors[t].kind == YP_KIND_GRAD) {
            ((float *)yp_exec_tensor(x, t))[0] = INFINITY;
            break;
        }
    if (yp_exec_update(x, &err)) return fprintf(stderr, "update %d: %s\n", k, err.msg), -1;
    return 0;
}

/* The largest |difference| over the tensors of `kind` of a and b (same plan). */
static double max_diff(const yp_exec *a, const yp_exec *b, yp_kind kind) {
    double m = 0;
    for (int t = 0; t < a->train.s->n_tensors; t++) {
        const yp_tensor *w = &a->train.s->tensors[t];
        if (w->kind != kind) continue;
        const float *u = yp_exec_tensor((yp_exec *)a, t), *v = yp_exec_tensor((yp_exec *)b, t);
        for (int64_t j = 0; j < w->shape.w; j++) {
            double d = fabs((double)u[j] - (double)v[j]);
            m = d > m || isnan(d) ? (isnan(d) ? INFINITY : d) : m;
        }
    }
    return m;
}

static void same_training(yp_optimizer opt) {
    yp_plan pa, pb;
    yp_exec a, b;
    REQUIRE(make_exec(&pa, &a, opt, 0) == 0);
    REQUIRE(make_exec(&pb, &b, opt, 1) == 0);
    for (int k = 0; k < 4; k++) {
        REQUIRE(train_step(&a, k, 0) == 0);
        REQUIRE(train_step(&b, k, 0) == 0);
    }
    printf("  %s: weights %.3g, EMA %.3g, optimizer state %.3g apart\n", yp_optimizer_name(opt),
           max_diff(&a, &b, YP_KIND_WEIGHT), max_diff(&a, &b, YP_KIND_EMA), max_diff(&a, &b, YP_KIND_OPTSTATE));
    CHECK(max_diff(&a, &b, YP_KIND_WEIGHT) == 0 && max_diff(&a, &b, YP_KIND_EMA) == 0);
    CHECK(max_diff(&a, &b, YP_KIND_OPTSTATE) == 0);
    CHECK(b.trainer.scaler.scale == 65536.0f && b.trainer.scaler.growth_tracker == 4);
    CHECK(fabs(a.trainer.last_grad_norm - b.trainer.last_grad_norm) <= 1e-12 * a.trainer.last_grad_norm);
    yp_exec_free(&a), yp_plan_free(&pa), yp_exec_free(&b), yp_plan_free(&pb);
}

static void test_scaled_training_is_unscaled_sgd(void) { same_training(YP_OPT_SGD); }
static void test_scaled_training_is_unscaled_adam(void) { same_training(YP_OPT_ADAM); }

/* Is t one of `kind` (YP_KIND_WEIGHT: the trained ones, not BN's running statistics)? */
static int of_kind(const yp_tensor *w, yp_kind kind) { return w->kind == kind && (kind != YP_KIND_WEIGHT || w->grad >= 0); }

/* A copy of every tensor of `kind`, to compare against later. */
static float *snapshot(const yp_exec *x, yp_kind kind, int64_t *n) {
    *n = 0;
    for (int t = 0; t < x->train.s->n_tensors; t++) *n += of_kind(&x->train.s->tensors[t], kind) ? x->train.s->tensors[t].shape.w : 0;
    float *v = malloc((size_t)(*n + 1) * sizeof *v), *p = v;
    for (int t = 0; v && t < x->train.s->n_tensors; t++) {
        const yp_tensor *w = &x->train.s->tensors[t];
        if (!of_kind(w, kind)) continue;
        memcpy(p, yp_exec_tensor((yp_exec *)x, t), (size_t)w->shape.w * sizeof *p);
        p += w->shape.w;
    }
    return v;
}

static int same_as(const yp_exec *x, yp_kind kind, const float *v, int64_t n) {
    int64_t m;
    float *now = snapshot(x, kind, &m);
    int same = now && m == n && memcmp(now, v, (size_t)n * sizeof *v) == 0;
    free(now);
    return same;
}

static void test_overflow_skips_the_step(void) {
    yp_plan p;
    yp_exec x;
    REQUIRE(make_exec(&p, &x, YP_OPT_ADAM, 1) == 0);
    REQUIRE(train_step(&x, 0, 0) == 0);
    int64_t nw, nm, ne;
    float *w = snapshot(&x, YP_KIND_WEIGHT, &nw), *m = snapshot(&x, YP_KIND_OPTSTATE, &nm), *e = snapshot(&x, YP_KIND_EMA, &ne);
    REQUIRE(w && m && e);
    REQUIRE(train_step(&x, 1, 1) == 0); /* an overflowed gradient, and no error */
    CHECK(isinf(x.trainer.last_grad_norm) || isnan(x.trainer.last_grad_norm));
    CHECK(x.trainer.scaler.scale == 32768.0f && x.trainer.scaler.skipped == 1);
    CHECK_EQ_I64(x.trainer.scaler.growth_tracker, 0);
    CHECK_EQ_I64(x.trainer.updates, 2);
    CHECK_EQ_I64(x.trainer.opt_steps, 1);
    CHECK(same_as(&x, YP_KIND_WEIGHT, w, nw)); /* the optimizer skipped */
    CHECK(same_as(&x, YP_KIND_OPTSTATE, m, nm));
    CHECK(!same_as(&x, YP_KIND_EMA, e, ne)); /* ema.update(model) ran */
    int zeroed = 1;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        const yp_tensor *g = &x.train.s->tensors[t];
        if (g->kind != YP_KIND_GRAD) continue;
        const float *v = yp_exec_tensor(&x, t);
        for (int64_t j = 0; j < g->shape.w; j++) zeroed &= v[j] == 0.0f;
    }
    CHECK(zeroed);
    REQUIRE(train_step(&x, 2, 0) == 0); /* the next batch trains */
    CHECK(isfinite(x.trainer.last_grad_norm) && !same_as(&x, YP_KIND_WEIGHT, w, nw));
    CHECK_EQ_I64(x.trainer.opt_steps, 2);
    CHECK(x.trainer.scaler.scale == 32768.0f && x.trainer.scaler.growth_tracker == 1);
    int finite = 1;
    for (int t = 0; t < x.train.s->n_tensors; t++) {
        const yp_tensor *g = &x.train.s->tensors[t];
        if (!of_kind(g, YP_KIND_WEIGHT) && g->kind != YP_KIND_EMA) continue;
        const float *v = yp_exec_tensor(&x, t);
        for (int64_t j = 0; j < g->shape.w; j++) finite &= isfinite(v[j]);
    }
    CHECK(finite);
    free(w), free(m), free(e);
    yp_exec_free(&x), yp_plan_free(&p);
}

/* Without the scaler the same update is not skipped: it would poison the weights, which is why
 * the loop (train.c) stops at a non-finite loss when the scaler is off. */
static void test_no_scaler_no_skip(void) {
    yp_plan p;
    yp_exec x;
    REQUIRE(make_exec(&p, &x, YP_OPT_SGD, 0) == 0);
    REQUIRE(train_step(&x, 0, 1) == 0);
    CHECK_EQ_I64(x.trainer.opt_steps, 1);
    CHECK(!isfinite(x.trainer.last_grad_norm));
    yp_exec_free(&x), yp_plan_free(&p);
}

int main(void) {
    yp_err err;
    char why[256];
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!graph || !cpu || yp_gpu_parse("a100-40gb", &gpu, &err)) return fprintf(stderr, "setup failed\n"), 1;
    YP_RUN(test_scaled_training_is_unscaled_sgd);
    YP_RUN(test_scaled_training_is_unscaled_adam);
    YP_RUN(test_overflow_skips_the_step);
    YP_RUN(test_no_scaler_no_skip);
    yp_backend_free(cpu);
    yp_graph_free(graph);
    return yp_test_summary();
}
