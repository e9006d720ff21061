/* test_step.c - a whole training step on the CPU against PyTorch (tests/ref/make_step_fixture.py:
 * yolov5t, batch 2, 128x128, 8 labels, SGD): the loss, every parameter gradient, and the weights
 * (and BN statistics) after 3 updates agree within 1e-3 relative; plans that differ only in
 * checkpoint set or saving policy give the same gradients; the executor's arena is the planned
 * size to the byte; debug guards stay intact. */
#include <math.h>

#include "step_fixture.h"
#include "yp_executor.h"
#include "yp_test.h"
#include "yp_yaml.h"

static fx_file fx;
static yp_graph *graph;
static yp_gpu gpu;

/* A plan of yolov5t at batch 2, 128 px, fp32, room for 8 labels. */
static int make_plan(yp_plan *p, yp_save_policy policy, uint64_t ckpt) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = 2, c.img_w = c.img_h = 128, c.mosaic = 0, c.labels_per_image = 4, c.policy = policy, c.ckpt_layers = ckpt;
    yp_exec_candidate_for(&c, yp_backend_cpu());
    if (yp_plan_build(graph, &c, &gpu, 0, 0, p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* An executor on plan p with the fixture's initial weights. */
static int make_exec(yp_exec *x, const yp_plan *p, int64_t guard) {
    yp_err err;
    if (yp_exec_init(x, p, yp_backend_cpu(), guard, 1, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, "init/", 5)) continue;
        yp_named_tensor nt = {fx.r[i].name + 5, fx.r[i].data, fx.r[i].numel};
        if (yp_exec_load_params(x, &nt, 1, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

static int micro(yp_exec *x, double loss[4]) {
    yp_err err;
    const fx_record *img = fx_get(&fx, "images"), *tg = fx_get(&fx, "targets");
    if (yp_exec_micro_step(x, img->data, tg->data, tg->numel / 6, loss, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

/* Worst relative error over every parameter gradient against the fixture. */
static double grads_vs_fixture(const yp_exec *x, int verbose) {
    double worst = 0;
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, "grad/", 5)) continue;
        int t = yp_exec_find_param(x, fx.r[i].name + 5);
        if (t < 0 || x->s->tensors[t].grad < 0) return 1e9;
        double e = fx_rel_err(yp_exec_tensor(x, x->s->tensors[t].grad), fx.r[i].data, fx.r[i].numel);
        if (e > 1e-3 && verbose) fprintf(stderr, "  grad %s: rel err %.2e\n", fx.r[i].name + 5, e);
        if (e > worst) worst = e;
    }
    return worst;
}

static void test_loss_and_grads(void) {
    yp_plan p;
    yp_exec x;
    if (make_plan(&p, YP_SAVE_YOLOPLAN, 0)) {
        CHECK(0);
        return;
    }
    if (make_exec(&x, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    CHECK_EQ_I64(x.arena_bytes, p.arena_bytes); /* the executor allocates the planned arena to the byte */
    double loss[4];
    CHECK(micro(&x, loss) == 0);
    const float *ref = fx_get(&fx, "loss/1")->data;
    /* loss terms: fp32 reductions over ~16k cells in a different order than PyTorch: 1e-4 relative */
    for (int k = 0; k < 4; k++) {
        double e = fabs(loss[k] - ref[k]) / fabs(ref[k]);
        if (e > 1e-4) fprintf(stderr, "loss[%d] %.7f vs torch %.7f\n", k, loss[k], ref[k]);
        CHECK(e <= 1e-4);
    }
    /* gradients: through ~60 layers of fp32 convs and BN in another summation order: 1e-3 */
    double g = grads_vs_fixture(&x, 1);
    printf("  loss %.6f (torch %.6f), worst gradient rel err %.2e\n", loss[3], ref[3], g);
    CHECK(g <= 1e-3);
    yp_exec_free(&x);
    yp_plan_free(&p);
}

static void test_three_sgd_steps(void) {
    yp_plan p;
    yp_exec x;
    yp_err err;
    if (make_plan(&p, YP_SAVE_YOLOPLAN, 0)) {
        CHECK(0);
        return;
    }
    if (make_exec(&x, &p, 0)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    for (int step = 1; step <= 3; step++) {
        double loss[4];
        char name[16];
        CHECK(micro(&x, loss) == 0);
        snprintf(name, sizeof name, "loss/%d", step);
        const float *ref = fx_get(&fx, name)->data;
        printf("  step %d: loss %.7f (torch %.7f), box %.7f/%.7f obj %.7f/%.7f cls %.7f/%.7f, grad norm %.4f\n", step, loss[3], ref[3], loss[0], ref[0], loss[1], ref[1], loss[2], ref[2], x.last_grad_norm);
        CHECK(fabs(loss[3] - ref[3]) <= 1e-3 * fabs(ref[3]));
        CHECK(yp_exec_update(&x, &err) == 0);
    }
    /* Tolerance 1e-3 relative per tensor (max |a-b| / max |b|) for every tensor of magnitude
     * >= 1e-2. BN biases start at 0 and move by ~1e-4 in 3 steps; their gradients are sums of
     * dy with heavy cancellation, so per tensor they measure fp32 summation order, not the
     * step: they are held to 1e-3 of the largest parameter change of the model instead. */
    double worst = 0, worst_small = 0, max_change = 0;
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, "final/", 6)) continue;
        char init[160];
        snprintf(init, sizeof init, "init/%s", fx.r[i].name + 6);
        const fx_record *a = fx_get(&fx, init);
        for (int64_t k = 0; a && k < a->numel; k++) {
            double d = fabs((double)fx.r[i].data[k] - a->data[k]);
            max_change = d > max_change ? d : max_change;
        }
    }
    for (int i = 0; i < fx.n; i++) {
        if (strncmp(fx.r[i].name, "final/", 6)) continue;
        int t = yp_exec_find_param(&x, fx.r[i].name + 6);
        CHECK(t >= 0);
        if (t < 0) continue;
        const float *ours = yp_exec_tensor(&x, t), *ref = fx.r[i].data;
        double scale = 0, diff = 0;
        for (int64_t k = 0; k < fx.r[i].numel; k++) {
            scale = fabs(ref[k]) > scale ? fabs(ref[k]) : scale;
            diff = fabs((double)ours[k] - ref[k]) > diff ? fabs((double)ours[k] - ref[k]) : diff;
        }
        if (scale >= 1e-2) {
            if (diff / scale > 1e-3) fprintf(stderr, "  %s after 3 steps: rel err %.2e\n", fx.r[i].name + 6, diff / scale);
            worst = diff / scale > worst ? diff / scale : worst;
        } else {
            worst_small = diff / max_change > worst_small ? diff / max_change : worst_small;
        }
    }
    printf("  after 3 SGD steps: worst rel err %.2e (tensors >= 1e-2), BN biases within %.2e of the largest change\n",
           worst, worst_small);
    CHECK(worst_small <= 1e-3);
    CHECK(worst <= 1e-3);
    yp_exec_free(&x);
    yp_plan_free(&p);
}

/* The same gradients whatever is saved or recomputed. */
static void test_policies_agree(void) {
    yp_plan base, other;
    yp_exec a, b;
    if (make_plan(&base, YP_SAVE_YOLOPLAN, 0) || make_exec(&a, &base, 0)) {
        CHECK(0);
        return;
    }
    double loss[4];
    CHECK(micro(&a, loss) == 0);
    const uint64_t ck = 1u << 2 | 1u << 9 | 1u << 17 | 1u << 23;
    struct { yp_save_policy pol; uint64_t ck; const char *what; } v[] = {
        {YP_SAVE_PYTORCH, 0, "pytorch policy"},
        {YP_SAVE_YOLOPLAN, ck, "checkpoint 2,9,17,23"},
        {YP_SAVE_CONCAT, 0, "yoloplan+cat policy"},
        {YP_SAVE_CONCAT, ck, "yoloplan+cat, checkpoint 2,9,17,23"},
    };
    for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++) {
        if (make_plan(&other, v[k].pol, v[k].ck) || make_exec(&b, &other, 0)) {
            CHECK(0);
            break;
        }
        CHECK(micro(&b, loss) == 0);
        double worst = 0;
        for (int t = 0; t < a.s->n_tensors; t++) {
            const yp_tensor *w = &a.s->tensors[t];
            if (w->kind != YP_KIND_GRAD) continue;
            int u = yp_schedule_find(b.s, w->name);
            double e = fx_rel_err(yp_exec_tensor(&b, u), yp_exec_tensor(&a, t), w->shape.w);
            worst = e > worst ? e : worst;
        }
        printf("  %s: worst gradient difference %.2e\n", v[k].what, worst);
        CHECK(worst <= 1e-5);
        yp_exec_free(&b);
        yp_plan_free(&other);
    }
    yp_exec_free(&a);
    yp_plan_free(&base);
}

/* With guard canaries around every tensor, a step leaves them intact (and still matches). */
static void test_guards(void) {
    yp_plan p;
    yp_exec x;
    if (make_plan(&p, YP_SAVE_YOLOPLAN, 1u << 4)) {
        CHECK(0);
        return;
    }
    if (make_exec(&x, &p, 256)) {
        CHECK(0);
        yp_plan_free(&p);
        return;
    }
    CHECK(x.arena_bytes > p.arena_bytes);
    double loss[4];
    CHECK(micro(&x, loss) == 0);
    CHECK(grads_vs_fixture(&x, 0) <= 1e-3);
    /* an out-of-bounds write is caught: scribble just past a live tensor and check */
    int t = x.images_t;
    ((unsigned char *)yp_exec_tensor(&x, t))[x.s->tensors[t].bytes] = 0;
    yp_err err;
    CHECK(yp_exec_check_guards(&x, 0, &err) == -1);
    CHECK_STR_HAS(err.msg, "input:images");
    yp_exec_free(&x);
    yp_plan_free(&p);
}

int main(void) {
    yp_err err;
    if (fx_load(YP_TEST_DATA "/step/step.bin", &fx)) {
        fprintf(stderr, "cannot read %s\n", YP_TEST_DATA "/step/step.bin");
        return 1;
    }
    graph = yp_yaml_import(YP_TEST_DATA "/yaml/good/yolov5t.yaml", 0, &err);
    if (!graph || yp_gpu_parse("a100-40gb", &gpu, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    YP_RUN(test_loss_and_grads);
    YP_RUN(test_three_sgd_steps);
    YP_RUN(test_policies_agree);
    YP_RUN(test_guards);
    yp_graph_free(graph);
    fx_free(&fx);
    return yp_test_summary();
}
