/* test_act_step.c - CPU training steps over the network of tests/data/ir/acts.json
 * (conv-BN-LeakyReLU, conv-BN-Hardswish, conv-BN-ReLU, ZeroPad2d, MaxPool2d k2 s1 and k2 s2,
 * Detect), batch 2 at 32 px: every step runs through the new ops' executor rows; under the
 * `pytorch` policy (ReLU's backward reads its saved output), under yoloplan's (it reads the output
 * recomputed from the kept conv output) and with the three conv layers checkpointed, the loss and
 * every gradient agree; the gradients reach the first conv (through LeakyReLU, Hardswish, ReLU, the
 * pad and both pools) and are finite; with guard canaries around every tensor (which the executor
 * checks after each step, failing the step) no step writes outside its tensors; an optimizer
 * update runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "yp_executor.h"
#include "yp_executor_internal.h"
#include "yp_ir.h"
#include "yp_test.h"

#define BATCH 2
#define SIDE 32

static yp_graph *graph;
static yp_backend *cpu;
static yp_gpu gpu;

typedef struct {
    double loss[4];
    int n;             /* gradient tensors */
    char names[16][96];
    float *grads[16];  /* malloc'd copies, in schedule order */
    int64_t numel[16];
} step_result;

static void result_free(step_result *r) {
    for (int k = 0; k < r->n; k++) free(r->grads[k]);
    r->n = 0;
}

/* One micro-batch (fixed images and labels) under policy and checkpoint set ckpt, then an
 * update; the loss and the gradients before the update into r. 0, or -1. */
static int run(yp_save_policy policy, uint64_t ckpt, step_result *r) {
    yp_err err;
    yp_candidate c = yp_candidate_default();
    c.batch = BATCH, c.img_w = c.img_h = SIDE, c.mosaic = 0, c.labels_per_image = 4, c.policy = policy;
    c.ckpt_layers = ckpt;
    yp_exec_candidate_for(&c, cpu);
    yp_plan p;
    if (yp_plan_build(graph, &c, &gpu, 0, 0, &p, &err)) {
        fprintf(stderr, "  plan: %s\n", err.msg);
        return -1;
    }
    yp_exec x;
    int rc = -1;
    if (yp_exec_init(&x, &p, cpu, 256, 7, &err)) { /* 256: guards, the plan's alignment */
        fprintf(stderr, "  init: %s\n", err.msg);
        yp_plan_free(&p);
        return -1;
    }
    float *images = malloc(sizeof(float) * BATCH * SIDE * SIDE * 3);
    for (int64_t i = 0; i < BATCH * SIDE * SIDE * 3; i++) images[i] = (float)((i * 7919) % 1000) / 1000.0f;
    const float targets[] = {0, 0, 0.5f, 0.5f, 0.3f, 0.4f, 1, 0, 0.3f, 0.6f, 0.2f, 0.2f, 1, 0, 0.7f, 0.25f, 0.25f, 0.3f};
    if (yp_exec_micro_step(&x, images, targets, 3, r->loss, &err)) {
        fprintf(stderr, "  step: %s\n", err.msg);
        goto done;
    }
    const yp_schedule *s = x.train.s;
    r->n = 0;
    for (int t = 0; t < s->n_tensors && r->n < 16; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (tt->kind != YP_KIND_GRAD) continue;
        int64_t n = yp_shape_numel(tt->shape);
        r->grads[r->n] = malloc(sizeof(float) * (size_t)n);
        memcpy(r->grads[r->n], yp_exec_tensor(&x, t), sizeof(float) * (size_t)n);
        snprintf(r->names[r->n], sizeof r->names[0], "%s", tt->name);
        r->numel[r->n++] = n;
    }
    if (yp_exec_update(&x, &err)) {
        fprintf(stderr, "  update: %s\n", err.msg);
        goto done;
    }
    rc = 0;
done:
    free(images);
    yp_exec_free(&x);
    yp_plan_free(&p);
    return rc;
}

static double max_abs(const float *v, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fabs(v[i]) > m || isnan(v[i]) ? (isnan(v[i]) ? INFINITY : fabs(v[i])) : m;
    return m;
}

static void test_policies_agree(void) {
    step_result ref = {0};
    REQUIRE(run(YP_SAVE_PYTORCH, 0, &ref) == 0);
    CHECK(isfinite(ref.loss[3]) && ref.loss[3] > 0);
    CHECK_EQ_I64(ref.n, 3 + 3 * 2 + 2); /* 3 conv weights, 3 BN gammas and betas, Detect's weight and bias */
    for (int k = 0; k < ref.n; k++) {
        double m = max_abs(ref.grads[k], ref.numel[k]);
        if (!(isfinite(m) && m > 0)) fprintf(stderr, "  %s: max |grad| %g\n", ref.names[k], m);
        CHECK(isfinite(m) && m > 0); /* every parameter gets a gradient, the first conv's included */
    }
    const struct { yp_save_policy p; uint64_t ckpt; } other[] = {
        {YP_SAVE_YOLOPLAN, 0}, {YP_SAVE_CONCAT, 0}, {YP_SAVE_YOLOPLAN, 0x7}};
    for (size_t o = 0; o < sizeof other / sizeof *other; o++) {
        step_result r = {0};
        REQUIRE(run(other[o].p, other[o].ckpt, &r) == 0);
        CHECK(fabs(r.loss[3] - ref.loss[3]) <= 1e-6 * fabs(ref.loss[3]));
        REQUIRE(r.n == ref.n);
        for (int k = 0; k < r.n; k++) {
            CHECK(strcmp(r.names[k], ref.names[k]) == 0);
            double num = 0, den = max_abs(ref.grads[k], ref.numel[k]);
            for (int64_t i = 0; i < r.numel[k]; i++) {
                double d = fabs((double)r.grads[k][i] - ref.grads[k][i]);
                num = d > num || isnan(d) ? (isnan(d) ? INFINITY : d) : num;
            }
            if (!(num <= 1e-5 * den))
                fprintf(stderr, "  policy %s ckpt %#llx, %s: rel diff %g\n", yp_save_policy_name(other[o].p),
                        (unsigned long long)other[o].ckpt, r.names[k], num / den);
            CHECK(num <= 1e-5 * den);
        }
        result_free(&r);
    }
    result_free(&ref);
}

int main(void) {
    yp_err err;
    char why[256] = "";
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/acts.json", &err);
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!graph || !cpu || yp_gpu_parse("8GB", &gpu, &err)) {
        fprintf(stderr, "setup: %s%s\n", graph ? "" : err.msg, why);
        return 1;
    }
    YP_RUN(test_policies_agree);
    yp_backend_free(cpu);
    yp_graph_free(graph);
    return yp_test_summary();
}
