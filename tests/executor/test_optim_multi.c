/* test_optim_multi.c - the multi-tensor optimizer update (yp_ops.h's optim_multi, which the
 * executor's update uses where the backend has it) against the per-tensor entries: on the CPU, for
 * SGD, Adam and AdamW with EMA, three updates of the tiny IR (tests/data/ir/tiny.json) through each
 * give the same weights, optimizer state, EMA and zeroed gradients, bit for bit; and the entry's
 * own refusals. (On the GPU test_cuda_ops compares CUDA's entry with the CPU's.) */
#include <string.h>

#include "yp_executor.h"
#include "yp_ir.h"
#include "yp_test.h"

#define SIDE 16
#define BATCH 2

static yp_backend *cpu;
static yp_gpu gpu;
static yp_graph *graph;

static int train(yp_exec *x) {
    float img[BATCH * SIDE * SIDE * 3], tg[6 * 2 * BATCH];
    yp_err err;
    double loss[4];
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < BATCH * SIDE * SIDE * 3; i++) img[i] = (float)((i * 37 + k * 11) % 101) / 101.0f;
        for (int i = 0; i < 2 * BATCH; i++) {
            const float row[6] = {(float)(i / 2), 0, 0.3f + 0.1f * (float)(i % 3), 0.4f + 0.05f * (float)k, 0.3f, 0.25f};
            memcpy(tg + 6 * i, row, sizeof row);
        }
        if (yp_exec_micro_step(x, img, tg, 2 * BATCH, loss, &err) || yp_exec_update(x, &err))
            return fprintf(stderr, "step %d: %s\n", k, err.msg), -1;
    }
    return 0;
}

static void compare(yp_optimizer opt) {
    yp_candidate c = yp_candidate_default();
    c.batch = BATCH, c.img_w = c.img_h = SIDE, c.mosaic = 0, c.labels_per_image = 2, c.optimizer = opt;
    yp_exec_candidate_for(&c, cpu);
    yp_plan p;
    yp_err err;
    REQUIRE(yp_plan_build(graph, &c, &gpu, 0, 0, &p, &err) == 0);
    yp_exec a, b;
    REQUIRE(yp_exec_init(&a, &p, cpu, 0, 7, &err) == 0);
    REQUIRE(yp_exec_init(&b, &p, cpu, 0, 7, &err) == 0);
    CHECK(a.per_tensor_optim == 0);
    b.per_tensor_optim = 1;
    CHECK(train(&a) == 0);
    CHECK(train(&b) == 0);
    int differ = 0, kinds = 0;
    for (int t = 0; t < p.sched->n_tensors; t++) {
        const yp_tensor *w = &p.sched->tensors[t];
        if (w->kind != YP_KIND_WEIGHT && w->kind != YP_KIND_OPTSTATE && w->kind != YP_KIND_EMA && w->kind != YP_KIND_GRAD)
            continue;
        kinds |= 1 << w->kind;
        differ += memcmp(yp_exec_tensor(&a, t), yp_exec_tensor(&b, t), (size_t)w->bytes) != 0;
    }
    printf("  %s: %d tensors differ\n", yp_optimizer_name(opt), differ);
    CHECK_EQ_I64(differ, 0);
    CHECK(kinds == (1 << YP_KIND_WEIGHT | 1 << YP_KIND_OPTSTATE | 1 << YP_KIND_EMA | 1 << YP_KIND_GRAD));
    yp_exec_free(&a), yp_exec_free(&b);
    yp_plan_free(&p);
}

static void test_sgd(void) { compare(YP_OPT_SGD); }
static void test_adam(void) { compare(YP_OPT_ADAM); }
static void test_adamw(void) { compare(YP_OPT_ADAMW); }

static void test_refusals(void) {
    yp_optim_hyp h = {.lr = 0.01f, .momentum = 0.9f, .step = 1, .grad_scale = 1};
    CHECK(cpu->ops->optim_multi(cpu, YP_ELEM_F32, 0, -1, NULL, &h) == -1);
    CHECK_STR_HAS(cpu->last_error(cpu), "negative count");
    CHECK(cpu->ops->optim_multi(cpu, YP_ELEM_F16, 0, 0, NULL, &h) == -1);
    CHECK(cpu->ops->optim_multi(cpu, YP_ELEM_F32, 1, 0, NULL, &h) == 0); /* nothing to do */
}

int main(void) {
    char why[256];
    yp_err err;
    cpu = yp_backend_cpu_new(NULL, why, sizeof why);
    if (!cpu) return fprintf(stderr, "no CPU backend: %s\n", why), 1;
    if (yp_gpu_parse("a100-40gb", &gpu, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    graph = yp_ir_load_file(YP_TEST_DATA "/ir/tiny.json", &err);
    if (!graph) return fprintf(stderr, "%s\n", err.msg), 1;
    YP_RUN(test_sgd);
    YP_RUN(test_adam);
    YP_RUN(test_adamw);
    YP_RUN(test_refusals);
    yp_graph_free(graph);
    yp_backend_free(cpu);
    return yp_test_summary();
}
